# Weighted kNN (k 20, T 0.07, cosine; MSN/DINO) of the frozen resnet50-pool2048
# features on ImageNet-1K: train split = memory, val split = queries.
#   python tools/test.py THIS_CONFIG CKPT
# CKPT: a PMSN/MSN checkpoint (online encoder) or the output of
# tools/model_converters/pmsn_to_backbone.py (--target: the EMA target).
_base_ = [
    '../../_base_/models/resnet50-pool2048_features.py',
    '../../_base_/datasets/in1k_frozen-features.py',
    '../../_base_/default_runtime.py',
]
