# SimCLR, ResNet-50, on your own folder of images (docs/own_data.md):
#   IMAGE_FOLDER=path/to/images python tools/train.py THIS_CONFIG
# The paper's SimCLR recipe (App. E.1, VISSL's, ../class_stratified/
# simclr_resnet50_16xb240-coslr-300e_in1k-class-balanced-k960.py) on every
# image below IMAGE_FOLDER (class sub-folders or not: SimCLR uses no label),
# sampled uniformly (DefaultSampler) instead of in class-stratified batches,
# which need labels. The global batch (3840) and its lr (VISSL's 0.3 x
# batch / 256 = 4.5) stay those of the paper configs.
_base_ = [
    '../class_stratified/'
    'simclr_resnet50_16xb240-coslr-300e_in1k-class-balanced-k960.py',
    '../_base_/datasets/image_folder.py',
]
# the base's dataset variables, for a reader of the saved config
dataset_type = 'ImageFolderDataset'
data_root = _base_.image_folder
train_dataloader = dict(
    drop_last=True,
    batch_sampler=None,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(
        _delete_=True,
        type='ImageFolderDataset',
        data_root=_base_.image_folder,
        with_label=False,
        pipeline=_base_.train_pipeline))
