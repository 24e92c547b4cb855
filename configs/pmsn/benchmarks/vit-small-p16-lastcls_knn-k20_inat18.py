# Weighted kNN (k 20, T 0.07, cosine) of the frozen ViT-S/16 last-layer CLS
# features on iNat18: official train set = memory, val set = queries.
#   python tools/test.py THIS_CONFIG CKPT   (CKPT: see *_knn-k20_in1k.py)
_base_ = [
    '../../_base_/models/vit-small-p16-lastcls_features.py',
    '../../_base_/datasets/inat18_frozen-features.py',
    '../../_base_/default_runtime.py',
]
