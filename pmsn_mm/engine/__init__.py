"""Training-time engine parts: hooks and model wrappers."""
from . import hooks, model_wrappers  # noqa: F401
