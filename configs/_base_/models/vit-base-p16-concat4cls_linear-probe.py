# Linear-probe model (paper App. E.2, VISSL): frozen ViT-B/16, concatenation of
# the last 4 layers' CLS tokens (4 x 768); everything else as the ViT-S/16
# probe it inherits.
_base_ = './vit-small-p16-concat4cls_linear-probe.py'
model = dict(
    backbone=dict(arch='deit-base'),
    neck=dict(in_channels=768),
    head=dict(in_channels=3072))
