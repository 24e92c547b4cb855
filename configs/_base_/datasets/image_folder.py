# Your own images: one folder, with class sub-folders (<folder>/<class>/*.jpg,
# nested folders allowed) or without (<folder>/*.jpg), no annotation file.
# The folder is the ONE setting, read from the environment variable
# IMAGE_FOLDER when the config is parsed (mmengine's `{{$VAR:default}}`), so
# that every dataset (and the class prior) of a config uses it:
#   IMAGE_FOLDER=path/to/images python tools/train.py CONFIG
# (`--cfg-options image_folder=...` would not do: mmengine resolves top-level
# variables at parse time, the dicts that used one keep the old value.)
# Default: data/imagenet/train, ImageNet's training folder (one sub-folder per
# class), which tools/dataset_converters/make_sample_data.py also writes.
image_folder = '{{$IMAGE_FOLDER:data/imagenet/train}}'
# Pretraining: every image below the folder; class sub-folders, if any, give
# labels (`with_label='auto'`: ImageFolderPrior counts them), a flat folder is
# read unlabelled.
image_folder_dataset = dict(
    type='ImageFolderDataset',
    data_root=image_folder,
    with_label='auto')
