# PSwAV, ResNet-50, on your own folder of images (docs/own_data.md):
#   IMAGE_FOLDER=path/to/images python tools/train.py THIS_CONFIG
# SwAV's official 200-epoch recipe (./pswav_resnet50_8xb32-mcrop-coslr-200e_
# in1k-uniform.py) on the images below IMAGE_FOLDER, with PMSN's folder prior
# (ImageFolderPrior): the class prior of the class sub-folders with one
# prototype per class, or, for a flat folder, the uniform prior (SwAV) over
# SwAV's 3000 prototypes.
_base_ = [
    './pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-uniform.py',
    '../_base_/datasets/image_folder.py',
]
# the base's dataset variables, for a reader of the saved config
dataset_type = 'ImageFolderDataset'
data_root = _base_.image_folder
train_dataset = dict(_base_.image_folder_dataset,
                     pipeline=_base_.train_pipeline)
train_dataloader = dict(dataset=dict(_delete_=True, **train_dataset))
model = dict(
    head=dict(
        num_prototypes=None,  # the prior's: class folders, else 3000
        prior=dict(
            _delete_=True,
            type='ImageFolderPrior',
            dataset=dict(_base_.image_folder_dataset, pipeline=[]),
            unlabelled=dict(type='UniformPrior', num_prototypes=3000))))
