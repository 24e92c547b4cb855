# Linear-probe model (paper App. E.2, VISSL): frozen ViT-L/16, concatenation of
# the last 4 layers' CLS tokens (4 x 1024); everything else as the ViT-S/16
# probe it inherits. The encoder of mmpretrain's MAE (MAEViT, arch 'l') is a
# plain ViT-L: its 'backbone.' weights load as they are.
_base_ = './vit-small-p16-concat4cls_linear-probe.py'
model = dict(
    backbone=dict(arch='large', frozen_stages=24),
    neck=dict(in_channels=1024),
    head=dict(in_channels=4096))
