# Your own folder of images (IMAGE_FOLDER, see ./image_folder.py) for
# evaluating frozen features with `tools/test.py CONFIG CKPT` (kNN, logistic
# regression): the folder must have class sub-folders (the labels). Within
# each class (sorted file order) every 5th image is held out as a query
# (ImageFolderDataset split='val', val_fraction 0.2), the others form the kNN
# memory / the regression's training set (split='train'); both with the
# probes' test transforms (resize 256, center crop 224). The pretraining saw
# the query images without their labels; for a held-out test set, point
# test_dataloader.dataset.query at another folder.
_base_ = ['./in1k_frozen-features.py', './image_folder.py']
# the base's dataset variables, for a reader of the saved config
dataset_type = 'ImageFolderDataset'
data_root = _base_.image_folder

image_folder_split = dict(
    type='ImageFolderDataset',
    data_root=_base_.image_folder,
    with_label=True,
    val_fraction=0.2,
    pipeline=_base_.test_pipeline)
test_dataloader = dict(
    dataset=dict(
        memory=dict(_delete_=True, split='train', **image_folder_split),
        query=dict(_delete_=True, split='val', **image_folder_split)))
# the number of classes is the folder's (None: from the labels)
test_evaluator = dict(num_classes=None)
