"""kNN evaluation of frozen backbone features during/after pretraining."""
import json
import os.path as osp
from typing import Dict, Optional, Sequence

import torch
from mmengine.dataset import DefaultSampler, default_collate
from mmengine.dist import collect_results, get_rank, is_main_process
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from mmpretrain.registry import DATASETS, HOOKS
from torch.utils.data import DataLoader

from pmsn_mm.evaluation.functional import batch_features, knn_top1


@HOOKS.register_module()
class KNNEvalHook(Hook):
    """Weighted k-NN accuracy of backbone features, for one or more labels.

    Extracts ``model.extract_feat`` features (the last backbone output; 4-D
    maps are average-pooled) of a train (memory) and a test dataset, sharded
    over ranks, and reports the top-1 accuracy of
    :func:`pmsn_mm.evaluation.knn_top1` for every label in ``label_keys``.
    Results are logged, put in the message hub as ``knn/<label>_top1`` (so
    visualizer backends see them) and written to ``<work_dir>/knn.json``.

    Labels are read from the packed data samples: ``'gt_label'`` or any key
    listed in the pipeline's ``PackInputs(meta_keys=...)`` (for the toy set:
    ``'digit_label'`` and ``'background_label'``).

    Args:
        train_dataset: Config of the memory-bank dataset (test pipeline).
        test_dataset: Config of the queried dataset (test pipeline).
        label_keys: Labels to evaluate.
        k: Number of neighbours. Defaults to 20.
        temperature: Vote temperature. Defaults to 0.07.
        interval: Also evaluate every ``interval`` training iterations;
            None evaluates only after training.
        batch_size: Feature-extraction batch size.
    """

    priority = 'LOW'

    def __init__(self,
                 train_dataset: dict,
                 test_dataset: dict,
                 label_keys: Sequence[str] = ('gt_label', ),
                 k: int = 20,
                 temperature: float = 0.07,
                 interval: Optional[int] = None,
                 batch_size: int = 256) -> None:
        if not label_keys:
            raise ValueError('label_keys must name at least one label.')
        if interval is not None and interval < 1:
            raise ValueError(f'interval must be >= 1 or None, got {interval}.')
        self.train_dataset = train_dataset
        self.test_dataset = test_dataset
        self.label_keys = tuple(label_keys)
        self.k = k
        self.temperature = temperature
        self.interval = interval
        self.batch_size = batch_size
        self.results: Dict[str, float] = {}

    @staticmethod
    def _label(sample, key: str) -> int:
        if key == 'gt_label':
            return int(sample.gt_label.item())
        if key not in sample:
            raise KeyError(
                f"label '{key}' is not in the packed data samples; add it to "
                "the pipeline's PackInputs(meta_keys=...).")
        return int(sample.get(key))

    @torch.no_grad()
    def _extract(self, model, dataset_cfg: dict):
        dataset = DATASETS.build(dataset_cfg) if isinstance(
            dataset_cfg, dict) else dataset_cfg
        loader = DataLoader(
            dataset,
            batch_size=self.batch_size,
            sampler=DefaultSampler(dataset, shuffle=False),
            collate_fn=default_collate)
        was_training = model.training
        model.eval()
        parts = []
        for data in loader:
            feats = batch_features(model, data)
            for feat, sample in zip(feats.cpu(), data['data_samples']):
                parts.append((feat, [self._label(sample, key)
                                     for key in self.label_keys]))
        model.train(was_training)
        parts = collect_results(parts, len(dataset), device='cpu')
        if not is_main_process():
            return None, None
        feats = torch.stack([p[0] for p in parts])
        labels = torch.tensor([p[1] for p in parts], dtype=torch.long)
        return feats, labels

    def evaluate(self, runner) -> Dict[str, float]:
        """Run the evaluation now; returns ``{label: top-1 %}`` on rank 0."""
        model = runner.model.module if is_model_wrapper(
            runner.model) else runner.model
        train_feats, train_labels = self._extract(model, self.train_dataset)
        test_feats, test_labels = self._extract(model, self.test_dataset)
        if get_rank() != 0:
            return {}
        results = {
            key: knn_top1(train_feats, train_labels[:, i], test_feats,
                          test_labels[:, i], self.k, self.temperature)
            for i, key in enumerate(self.label_keys)
        }
        for key, acc in results.items():
            runner.message_hub.update_scalar(f'knn/{key}_top1', acc)
        runner.logger.info(
            f'kNN (k={self.k}, T={self.temperature}) top-1 at iter '
            f'{runner.iter}: ' + ', '.join(f'{key} {acc:.2f}%'
                                           for key, acc in results.items()))
        with open(osp.join(runner.work_dir, 'knn.json'), 'w') as f:
            json.dump(dict(iter=runner.iter, **results), f, indent=2)
        self.results = results
        return results

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch=None,
                         outputs=None) -> None:
        if self.interval and self.every_n_train_iters(runner, self.interval) \
                and runner.iter < runner.max_iters:
            self.evaluate(runner)

    def after_train(self, runner) -> None:
        self.evaluate(runner)
