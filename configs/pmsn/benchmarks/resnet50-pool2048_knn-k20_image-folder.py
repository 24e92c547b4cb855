# Weighted kNN (k 20, T 0.07, cosine; MSN/DINO) of the frozen resnet50-pool2048
# features on your own folder of images with class sub-folders
# (docs/own_data.md): each class's every 5th image is a query, the others
# the memory (at least k = 20 images).
#   IMAGE_FOLDER=path/to/images python tools/test.py THIS_CONFIG CKPT
# CKPT: a PMSN/MSN checkpoint (online encoder) or the output of
# tools/model_converters/pmsn_to_backbone.py (--target: the EMA target).
_base_ = [
    '../../_base_/models/resnet50-pool2048_features.py',
    '../../_base_/datasets/image_folder_frozen-features.py',
    '../../_base_/default_runtime.py',
]
