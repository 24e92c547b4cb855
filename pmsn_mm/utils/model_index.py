"""pmsn_mm's model index in mmpretrain's ``ModelHub``.

After :func:`register_model_index` (called by ``import pmsn_mm``),
``mmpretrain.list_models('*pmsn*')`` lists the pretraining configs and
``mmpretrain.get_model(name)`` builds one (no checkpoint is published). The
index is ``model-index.yml``, read from ``pmsn_mm/.mim/`` in a wheel or
from the repository root in a source checkout.
"""
import os.path as osp
from typing import Optional

#: Set once the index is in ``ModelHub`` (which refuses a name twice).
_registered = False


def model_index_root() -> Optional[str]:
    """The folder holding ``model-index.yml`` and ``configs/``.

    Returns:
        ``pmsn_mm/.mim`` of an installed package, else the source checkout's
        root, or None when neither has a ``model-index.yml``.
    """
    package = osp.dirname(osp.dirname(osp.abspath(__file__)))
    for root in (osp.join(package, '.mim'), osp.dirname(package)):
        if osp.isfile(osp.join(root, 'model-index.yml')):
            return root
    return None


def register_model_index() -> bool:
    """Register pmsn_mm's models in ``mmpretrain.apis.ModelHub`` (once).

    mmpretrain's own index, registered lazily later, is left untouched.

    Returns:
        Whether the index is registered (False: no ``model-index.yml`` found,
        e.g. a package built without its ``.mim`` files).
    """
    global _registered
    if _registered:
        return True
    root = model_index_root()
    if root is None:
        return False
    from mmpretrain.apis.model import ModelHub
    ModelHub.register_model_index(
        osp.join(root, 'model-index.yml'), config_prefix=root)
    _registered = True
    return True
