# Frozen ResNet-50, globally average-pooled last feature map (2048-d), no
# head; the weights are the checkpoint given to tools/test.py (keys
# 'backbone.*', see ./vit-small-p16-lastcls_features.py).
_base_ = './resnet50-pool2048_linear-probe.py'
model = dict(backbone=dict(init_cfg=None), head=None)
