"""The PMSN loss as models compute it: through a PMSNHead with given
prototypes (shared by the loss tests)."""
from torch import Tensor, nn

from pmsn_mm.models.heads import PMSNHead

#: Settings that belong to the head; the rest of a test config is the loss's.
HEAD_KEYS = ('temperature', 'label_smoothing', 'prior')


def set_prototypes(head: PMSNHead, prototypes: Tensor) -> PMSNHead:
    """Make a copy of ``prototypes`` (K, D) the head's parameter (dtype
    kept); its gradient is then ``head.prototypes.grad``."""
    head.prototypes = nn.Parameter(prototypes.detach().clone())
    return head


def pmsn_head(prototypes: Tensor, **cfg) -> PMSNHead:
    """A PMSNHead with these prototypes, the head settings of ``cfg``
    (:data:`HEAD_KEYS`) and a PMSNLoss with the others."""
    head_cfg = {k: cfg.pop(k) for k in HEAD_KEYS if k in cfg}
    head = PMSNHead(
        prototypes.shape[0],
        prototypes.shape[1],
        loss=dict(type='PMSNLoss', **cfg),
        **head_cfg)
    return set_prototypes(head, prototypes)
