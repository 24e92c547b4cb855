"""pmsn_mm's import-time setup, in one function (as mmpretrain's
``mmpretrain/utils/setup_env.py``).

``import pmsn_mm`` calls :func:`register_all_modules` once; every step of
what importing the package changes outside it is listed there, in order.
This module imports nothing heavy at its top: the first step must run before
anything imports mmcv or mmpretrain.
"""
from .upstream_notes import filter_upstream_import_warnings


def register_all_modules() -> None:
    """Set up everything ``import pmsn_mm`` promises, in this order.

    1. Filter mmcv-lite's ``MultiScaleDeformableAttention`` import warning
       (:func:`~pmsn_mm.utils.upstream_notes.filter_upstream_import_warnings`)
       before anything imports mmcv.
    2. Allow-list the exact non-tensor types mmengine training checkpoints
       hold, so ``--resume`` works with ``torch.load(weights_only=True)``
       (:func:`~pmsn_mm.engine.checkpoint.allow_checkpoint_globals`).
    3. Register the ``'atomic_local'`` file backend, atomic checkpoint writes
       (:func:`~pmsn_mm.engine.atomic_file_backend.register_atomic_backend`).
    4. Import :mod:`pmsn_mm.datasets`, :mod:`pmsn_mm.engine`,
       :mod:`pmsn_mm.evaluation` and :mod:`pmsn_mm.models`: every pmsn_mm
       class into mmpretrain's registries, four names into mmengine's root
       registries and the torch operator ``pmsn_mm::random_keep_indices``.
    5. Register ``model-index.yml`` in mmpretrain's ``ModelHub``
       (:func:`~pmsn_mm.utils.model_index.register_model_index`).

    Nothing else: no upstream registry name is replaced and no class is
    changed. ``tests/_import_changes.py`` lists every change (printed in
    docs/openmmlab.md) and ``tests/test_import_changes.py`` checks it.

    Every step is idempotent, so calling this again changes nothing.
    """
    filter_upstream_import_warnings()

    from pmsn_mm.engine.atomic_file_backend import register_atomic_backend
    from pmsn_mm.engine.checkpoint import allow_checkpoint_globals
    allow_checkpoint_globals()
    register_atomic_backend()

    import pmsn_mm.datasets  # noqa: F401
    import pmsn_mm.engine  # noqa: F401
    import pmsn_mm.evaluation  # noqa: F401
    import pmsn_mm.models  # noqa: F401
    from .model_index import register_model_index
    register_model_index()
