# Frozen ViT-B/16, last-layer CLS token (768-d), no head; see
# ./vit-small-p16-lastcls_features.py.
_base_ = './vit-small-p16-lastcls_features.py'
model = dict(backbone=dict(arch='deit-base'))
