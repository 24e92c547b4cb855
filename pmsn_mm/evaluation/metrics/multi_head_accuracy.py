"""Top-k accuracy of every linear probe of a :class:`MultiLinearProbeHead`."""
from typing import Dict, List, Optional, Sequence

import torch
from mmengine.evaluator import BaseMetric
from mmpretrain.evaluation import Accuracy
from mmpretrain.registry import METRICS

from ...utils.validation import check_int
from .cpu_copies import cpu_copies

#: Data-sample field prefix under which each probe's scores are stored.
SCORE_PREFIX = 'pred_score_'


@METRICS.register_module()
class MultiHeadAccuracy(BaseMetric):
    """Top-k accuracy per linear probe, as VISSL's accuracy list meter.

    Reports ``<name>/top<k>`` (%) of every ``pred_score_<name>`` and
    ``best/top1`` (the paper reports the best linear classifier, App. E.2).

    Args:
        probes: Probes to report; None: every ``pred_score_<name>`` found.
        topk: Distinct ks >= 1. Defaults to (1, 5).
        collect_device: ``'cpu'`` or ``'gpu'`` (mmengine).
        prefix: Optional prefix of the metric names (``<prefix>/<name>/...``).
    """

    #: Names are already namespaced by the probe name; '' means no prefix
    #: (and, unlike None, no mmengine warning).
    default_prefix: Optional[str] = ''

    def __init__(self,
                 probes: Optional[Sequence[str]] = None,
                 topk: Sequence[int] = (1, 5),
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        topk = (topk, ) if isinstance(topk, int) else tuple(topk)
        if not topk or len(set(topk)) != len(topk):
            raise ValueError('MultiHeadAccuracy topk must be distinct ints '
                             f'>= 1, but is {topk!r}.')
        topk = tuple(check_int('MultiHeadAccuracy topk', k, 1) for k in topk)
        if probes is not None:
            probes = (probes, ) if isinstance(probes, str) else tuple(probes)
            if not probes or len(set(probes)) != len(probes):
                raise ValueError('probes must be None or distinct names, but '
                                 f'is {probes!r}.')
        self.probes = probes
        self.topk = topk

    def _probe_names(self, data_sample: dict) -> Sequence[str]:
        if self.probes is not None:
            return self.probes
        names = sorted(k[len(SCORE_PREFIX):] for k in data_sample
                       if k.startswith(SCORE_PREFIX))
        if not names:
            raise ValueError(
                f'MultiHeadAccuracy found no {SCORE_PREFIX}<name> field in '
                'the predictions; use it with MultiLinearProbeHead.')
        return names

    def process(self, data_batch, data_samples: Sequence[dict]) -> None:
        """Keep the label and every probe's scores of each sample.

        As CPU copies that own their memory
        (:func:`~pmsn_mm.evaluation.metrics.cpu_copies.cpu_copies`), not
        row views of the batch's scores.

        Args:
            data_batch: Unused.
            data_samples: Model outputs as dicts.
        """
        if not data_samples:
            return
        names = self._probe_names(data_samples[0])
        for data_sample in data_samples:
            for name in names:
                key = SCORE_PREFIX + name
                if key not in data_sample:
                    raise ValueError(
                        f'Prediction has no {key!r}; probes={self.probes} '
                        'must match the head probes.')
        # one copy per field and batch (see cpu_copies), then per sample
        columns = {'gt_label': cpu_copies([s['gt_label']
                                           for s in data_samples])}
        for name in names:
            columns[name] = cpu_copies(
                [s[SCORE_PREFIX + name] for s in data_samples])
        for i in range(len(data_samples)):
            self.results.append({k: v[i] for k, v in columns.items()})

    def compute_metrics(self, results: List[dict]) -> Dict[str, float]:
        """Accuracies per probe and the best top-1.

        Args:
            results: Outputs of :meth:`process`.

        Returns:
            ``<name>/top<k>`` per probe and k, and ``best/top1``.
        """
        target = torch.cat([r['gt_label'] for r in results])
        names = [k for k in results[0] if k != 'gt_label']
        metrics = {}
        for name in names:
            scores = torch.stack([r[name] for r in results])
            topk = [k for k in self.topk if k <= scores.shape[1]]
            accs = Accuracy.calculate(scores, target, topk=topk, thrs=(None, ))
            for k, acc in zip(topk, accs):
                metrics[f'{name}/top{k}'] = float(acc[0])
        if 1 in self.topk:
            metrics['best/top1'] = max(metrics[f'{n}/top1'] for n in names)
        return metrics
