# Linear-probe model (paper App. E.2, VISSL): frozen ViT-B/16, last-layer CLS
# token (768-d); everything else as the ViT-S/16 probe it inherits.
_base_ = './vit-small-p16-lastcls_linear-probe.py'
model = dict(backbone=dict(arch='deit-base'), head=dict(in_channels=768))
