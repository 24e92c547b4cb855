"""Everything ``import pmsn_mm`` changes outside pmsn_mm, as plain data.

docs/openmmlab.md ("What ``import pmsn_mm`` changes") prints every item, and
tests/test_import_changes.py compares a fresh process before and after the
import: each difference it finds must be one of these, and each of these
must be found. Nothing is imported here. It is the test's expectation, so
it lives with the tests, not in the package.
"""
from typing import Dict, Tuple

#: Names added to mmengine's root registries (looked up there by mmengine's
#: runner and launcher, without a scope), per registry.
ROOT_REGISTRY_NAMES: Dict[str, Tuple[str, ...]] = {
    'mmengine.registry.FUNCTIONS': ('padded_collate', ),
    'mmengine.registry.MODEL_WRAPPERS':
    ('DeviceAwareDistributedDataParallel', ),
    'mmengine.registry.OPTIM_WRAPPERS': ('DeviceAwareAmpOptimWrapper', ),
    'mmengine.registry.RUNNERS': ('PMSNRunner', ),
}

#: The registries of this scope gain every other pmsn_mm class, each under
#: a new name (no name is replaced or removed). Test helpers register only
#: when imported themselves (``HostCopyHook``: ``tests._profiling.
#: host_copies``), never on ``import pmsn_mm``.
NEW_NAMES_SCOPE = 'mmpretrain'

#: mmpretrain's ``ModelHub`` gains the models of this index (and no other).
MODEL_INDEX = 'model-index.yml'

#: Custom torch operators (``torch.library.custom_op``).
TORCH_OPERATORS: Tuple[str, ...] = ('pmsn_mm::random_keep_indices', )

#: Upstream module attributes added or rebound: the operators' namespace,
#: and the set that ``torch.serialization.add_safe_globals`` rebinds.
MODULE_ATTRIBUTES: Tuple[str, ...] = (
    'torch.ops.pmsn_mm',
    'torch._weights_only_unpickler._marked_safe_globals_set',
)

#: ``torch.serialization.get_safe_globals()`` entries added (numpy 2 names;
#: numpy 1.x names the two reconstruct functions ``numpy.core...``).
SAFE_GLOBALS: Tuple[str, ...] = (
    'mmengine.logging.history_buffer.HistoryBuffer',
    'numpy.ndarray',
    'numpy.dtype',
    'numpy.dtypes.Float64DType',
    'numpy.dtypes.Int64DType',
    'numpy._core.multiarray._reconstruct as '
    'numpy._core.multiarray._reconstruct',
    'numpy._core.multiarray.scalar as numpy._core.multiarray.scalar',
    'pmsn_mm.engine.checkpoint.restricted_getattr as builtins.getattr',
)

#: mmengine file backends added.
FILE_BACKENDS: Tuple[str, ...] = ('atomic_local', )

#: Warning filters added: (action, message, category, module), the message
#: and module as the regular expressions ``warnings.filterwarnings`` gets.
WARNING_FILTERS: Tuple[Tuple[str, str, str, str], ...] = ((
    'ignore',
    r'Fail to import ``MultiScaleDeformableAttention`` from '
    r'``mmcv\.ops\.multi_scale_deform_attn``',
    'UserWarning',
    r'mmcv\.cnn\.bricks\.transformer$',
), )
