"""One way to embed images with a prototype model (PMSN, PSwAV): every
stage, online or target."""
from typing import TYPE_CHECKING, Dict, Sequence, Tuple

from torch import Tensor, nn

from ...utils.validation import check_choice
from ..utils.pooling import last_output, pooled

if TYPE_CHECKING:
    from ..heads import BasePrototypeHead

#: Stages of :meth:`PrototypeEmbedMixin.embed`, in forward order.
EMBED_STAGES = ('backbone', 'neck', 'probs')


class PrototypeEmbedMixin:
    """``extract_feat`` for each stage of a prototype model.

    The one public way to embed images: ``'backbone'`` (the last backbone
    output as a vector), ``'neck'`` (the projector embedding) or
    ``'probs'`` (the head's prototype probabilities); ``target=True`` uses
    the EMA target encoder. Models may override :meth:`encoder`,
    :meth:`project` and :meth:`prototype_probabilities`.
    """

    # set by the models this class is mixed into
    backbone: nn.Module
    neck: nn.Module
    head: 'BasePrototypeHead'

    def encoder(self, target: bool = False) -> Tuple[nn.Module, nn.Module]:
        """Backbone and neck of the online (or target) encoder.

        Args:
            target: The EMA target encoder instead of the online one.

        Returns:
            ``(backbone, neck)``.
        """
        if target:
            raise ValueError(
                f'{type(self).__name__} has no target encoder; use '
                'target=False.')
        return self.backbone, self.neck

    def project(self, neck: nn.Module, feats: Tensor) -> Tensor:
        """The neck's embedding of pooled backbone features.

        Args:
            neck: The neck (online or target).
            feats: Tensor of shape (B, C).

        Returns:
            Tensor of shape (B, D).
        """
        return last_output(neck(feats))

    def prototype_probabilities(self, z: Tensor) -> Tensor:
        """The head's prototype probabilities of embeddings.

        Args:
            z: Tensor of shape (B, D).

        Returns:
            Tensor of shape (B, K).
        """
        return self.head.probabilities(z)

    def embed(self,
              inputs: Tensor,
              target: bool = False,
              stages: Sequence[str] = EMBED_STAGES) -> Dict[str, Tensor]:
        """Embeddings of pre-processed images at several stages, in one pass.

        Args:
            inputs: Tensor of shape (B, C, H, W), pre-processed.
            target: Use the EMA target encoder. Defaults to False.
            stages: Any of :data:`EMBED_STAGES`.

        Returns:
            ``{stage: Tensor}``: ``backbone`` (B, C), ``neck`` (B, D),
            ``probs`` (B, K).
        """
        for stage in stages:
            check_choice('stage', stage, EMBED_STAGES)
        last = max(EMBED_STAGES.index(s) for s in stages)
        backbone, neck = self.encoder(target)
        out = dict(backbone=pooled(last_output(backbone(inputs))))
        if last >= 1:
            out['neck'] = self.project(neck, out['backbone'])
        if last >= 2:
            out['probs'] = self.prototype_probabilities(out['neck'])
        return {s: out[s] for s in stages}

    def extract_feat(self,
                     inputs: Tensor,
                     stage: str = 'backbone',
                     target: bool = False) -> Tensor:
        """The embedding of one stage (see :meth:`embed`).

        Args:
            inputs: Tensor of shape (B, C, H, W), pre-processed.
            stage: ``'backbone'`` (default), ``'neck'`` or ``'probs'``.
            target: Use the EMA target encoder. Defaults to False.

        Returns:
            Tensor of shape (B, C), (B, D) or (B, K).
        """
        return self.embed(inputs, target, (stage, ))[stage]
