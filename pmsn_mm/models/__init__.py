"""Models: algorithms, backbones, necks, heads, losses and cluster priors."""
from . import (backbones, heads, losses, necks, priors,  # noqa: F401
               selfsup, utils)
