"""pmsn_mm's import-time setup, in one function (as mmpretrain's
``mmpretrain/utils/setup_env.py``).

``import pmsn_mm`` calls :func:`register_all_modules` once; every step of
what importing the package changes outside it is listed there, in order.
This module imports nothing heavy at its top: the first step must run before
anything imports mmcv or mmpretrain.
"""
from .upstream_notes import filter_upstream_import_warnings


def register_all_modules() -> None:
    """Set up everything ``import pmsn_mm`` promises (docs/openmmlab.md,
    "What import pmsn_mm changes"), in this order, each step idempotent:

    1. :func:`~pmsn_mm.utils.upstream_notes.filter_upstream_import_warnings`,
       before anything imports mmcv.
    2. :func:`~pmsn_mm.engine.checkpoint.allow_checkpoint_globals`.
    3. :func:`~pmsn_mm.engine.atomic_file_backend.register_atomic_backend`.
    4. Import :mod:`pmsn_mm.datasets`, :mod:`pmsn_mm.engine`,
       :mod:`pmsn_mm.evaluation` and :mod:`pmsn_mm.models` (registries and
       the torch operator ``pmsn_mm::random_keep_indices``).
    5. :func:`~pmsn_mm.utils.model_index.register_model_index`.

    Nothing else (``tests/test_import_changes.py`` checks it).
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
