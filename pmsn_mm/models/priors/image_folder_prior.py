"""The prior of an image folder: its class counts when it has class
sub-folders, a given prior when it has none."""
from typing import Optional, Union

from mmengine.logging import print_log
from mmpretrain.registry import DATASETS, MODELS

from .base_prior import BasePrior
from .class_prior import ClassPrior


@MODELS.register_module(name='ImageFolderPrior')
def image_folder_prior(num_prototypes: Optional[int],
                       dataset: Union[dict, object],
                       unlabelled: dict) -> BasePrior:
    """``ClassPrior`` of a folder with class sub-folders, else ``unlabelled``.

    Paper §5.2: the class prior ``p_k = D_k / D`` beat the uniform prior
    on every task when it is known; without sub-folders the prior is
    ``unlabelled`` (docs/own_data.md). The choice is logged.

    Args:
        num_prototypes: The head's K, or None.
        dataset: An ``ImageFolderDataset`` config or instance (without
            ``has_classes``: labelled).
        unlabelled: Prior config for a folder without class sub-folders;
            it must set ``num_prototypes`` when the head's is None.

    Returns:
        The prior.
    """
    if isinstance(dataset, dict):
        dataset = DATASETS.build(dataset)
    folder = getattr(dataset, 'img_prefix', type(dataset).__name__)
    if getattr(dataset, 'has_classes', True):
        prior = ClassPrior(num_prototypes, dataset=dataset)
        print_log(f'ImageFolderPrior: {prior.num_classes} class folders in '
                  f'{folder!r}: ClassPrior over {prior.num_prototypes} '
                  'prototypes.', logger='current')
        return prior
    if not isinstance(unlabelled, dict) or 'type' not in unlabelled:
        raise ValueError('ImageFolderPrior unlabelled must be a prior config '
                         f'(a dict with type), but is {unlabelled!r}.')
    given = unlabelled.get('num_prototypes')
    if num_prototypes is None and given is None:
        raise ValueError(
            'ImageFolderPrior: the head has num_prototypes=None and '
            f'{folder!r} has no class sub-folders; give the unlabelled '
            'prior its num_prototypes, e.g. unlabelled=dict(type='
            "'UniformPrior', num_prototypes=1024).")
    if num_prototypes is not None and given not in (None, num_prototypes):
        raise ValueError(
            f'ImageFolderPrior unlabelled num_prototypes={given!r} differs '
            f"from the head's num_prototypes={num_prototypes}.")
    cfg = dict(unlabelled)
    cfg['num_prototypes'] = given if given is not None else num_prototypes
    prior = MODELS.build(cfg)
    print_log(f'ImageFolderPrior: {folder!r} read without class labels (no '
              'class sub-folder, or with_label=False): '
              f'{type(prior).__name__} over {prior.num_prototypes} '
              'prototypes.', logger='current')
    return prior


#: A head with ``num_prototypes=None`` takes K from this prior.
image_folder_prior.counts_prototypes = True
