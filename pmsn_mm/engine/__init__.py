"""Training-time engine parts: hooks, loops, model wrappers and
optimizer-wrapper constructors."""
from . import hooks, model_wrappers, optimizers, runners  # noqa: F401
