"""Models: algorithms, backbones, necks, heads, losses and cluster priors."""
from . import (backbones, heads, losses, necks, priors, selfsup,  # noqa: F401
               utils)
