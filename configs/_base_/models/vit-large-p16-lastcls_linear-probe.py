# Linear-probe model (paper App. E.2, VISSL): frozen ViT-L/16, last-layer CLS
# token (1024-d); everything else as the ViT-S/16 probe it inherits. The
# encoder of mmpretrain's MAE (MAEViT, arch 'l') is a plain ViT-L: its
# 'backbone.' weights load as they are (the fixed sin-cos position embedding
# included).
_base_ = './vit-small-p16-lastcls_linear-probe.py'
model = dict(
    backbone=dict(arch='large', frozen_stages=24),
    head=dict(in_channels=1024))
