# PMSN, ViT-S/16, on your own folder of images (docs/own_data.md):
#   IMAGE_FOLDER=path/to/images python tools/train.py THIS_CONFIG
# The paper's iNat18 recipe (App. F.1.2, ./pmsn_vit-small-p16_32xb128-300e_
# inat18-uniform.py: lambda 5, mask 0.15, 1 random + 10 focal views, AdamW,
# wd 0.04 -> 0.4, clip 3, 300 epochs at a global batch of 4096) on the images
# below IMAGE_FOLDER. The prior (ImageFolderPrior): with class sub-folders,
# the class prior p_k = D_k / D of their image counts with one prototype per
# class (paper §5.2, Table 2); without, MSN's uniform prior over MSN's 1024
# prototypes (a power law hurts a class-balanced set badly, paper Table 3).
_base_ = [
    './pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py',
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
        num_prototypes=None,  # the prior's: class folders, else 1024
        prior=dict(
            _delete_=True,
            type='ImageFolderPrior',
            dataset=dict(_base_.image_folder_dataset, pipeline=[]),
            unlabelled=dict(type='UniformPrior', num_prototypes=1024))))
