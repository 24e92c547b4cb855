"""pmsn_mm: Prior Matching for Siamese Networks on the OpenMMLab stack.

Importing this package registers every pmsn_mm module into mmpretrain's
registries, so that any mmpretrain config can use them after ``custom_imports =
dict(imports=['pmsn_mm'], allow_failed_imports=False)``. Every step of the
import-time setup is :func:`pmsn_mm.utils.setup_env.register_all_modules`; no
upstream name is registered again and no class is changed: docs/openmmlab.md,
"What ``import pmsn_mm`` changes".
"""
from .utils.setup_env import register_all_modules
from .version import __version__

register_all_modules()

from .engine.checkpoint import allow_checkpoint_globals  # noqa: E402

__all__ = ['__version__', 'allow_checkpoint_globals', 'register_all_modules']
