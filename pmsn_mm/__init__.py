# isort: skip_file  (the warning filter must precede the imports it guards)
"""pmsn_mm: Prior Matching for Siamese Networks on the OpenMMLab stack.

Importing this package registers every pmsn_mm module into mmpretrain's
registries (``MODELS``, ``DATASETS``, ``DATA_SAMPLERS``, ``HOOKS``,
``TRANSFORMS``, ``METRICS``, ...), so that any mmpretrain config can use them
after ``custom_imports = dict(imports=['pmsn_mm'],
allow_failed_imports=False)``.
It also allow-lists the exact non-tensor types that mmengine training
checkpoints contain, so ``--resume`` works with
``torch.load(weights_only=True)``,
registers the ``'atomic_local'`` file backend (atomic checkpoint writes), and
makes the registered pmsn_mm classes refuse unknown config keys with the
valid keys listed (:mod:`pmsn_mm.utils.config_keys`), and registers the
model index (``model-index.yml``) in mmpretrain's ``ModelHub``, so that
``mmpretrain.list_models('*pmsn*')`` and ``mmpretrain.get_model(name)``
know the pretraining configs (:mod:`pmsn_mm.utils.model_index`). mmcv-lite's
``MultiScaleDeformableAttention`` import warning is filtered before mmcv is
imported (:mod:`pmsn_mm.upstream_notes`).
"""
from .upstream_notes import filter_upstream_import_warnings

filter_upstream_import_warnings()

from .version import __version__  # noqa: E402
from .utils.atomic_file_backend import register_atomic_backend  # noqa: E402
from .utils.checkpoint import allow_checkpoint_globals  # noqa: E402

allow_checkpoint_globals()
register_atomic_backend()

from . import datasets, engine, evaluation, models  # noqa: E402,F401
from .utils.config_keys import apply_strict_config_keys  # noqa: E402
from .utils.model_index import register_model_index  # noqa: E402

apply_strict_config_keys()
register_model_index()

__all__ = ['__version__', 'allow_checkpoint_globals']
