# VICReg, ResNet-50, on your own folder of images (docs/own_data.md):
#   IMAGE_FOLDER=path/to/images python tools/train.py THIS_CONFIG
# The paper's VICReg recipe (App. E.1, ./vicreg_resnet50_8xb128-amp-coslr-
# 300e_in1k.py) on every image below IMAGE_FOLDER (class sub-folders or not:
# VICReg uses no label).
_base_ = [
    './vicreg_resnet50_8xb128-amp-coslr-300e_in1k.py',
    '../_base_/datasets/image_folder.py',
]
# the base's dataset variables, for a reader of the saved config
dataset_type = 'ImageFolderDataset'
data_root = _base_.image_folder
train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='ImageFolderDataset',
        data_root=_base_.image_folder,
        with_label=False,
        pipeline=_base_.train_pipeline))
