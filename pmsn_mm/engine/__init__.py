"""Training-time engine parts: hooks, loops and model wrappers."""
from . import hooks, model_wrappers, runners  # noqa: F401
