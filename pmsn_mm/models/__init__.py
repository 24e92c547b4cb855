"""Models: algorithms, necks, heads, losses and cluster priors."""
from . import heads, losses, necks, priors, selfsup, utils  # noqa: F401
