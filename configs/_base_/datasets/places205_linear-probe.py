# Places205 for linear probing (paper App. E.2): the transforms of VISSL's
# places205 config (RandomResizedCrop 224 + flip; test: resize 256, center crop
# 224). data/places205 holds the official trainvalsplit_places205/ and
# data/vision/torralba/deeplearning/images256/; split='test' is the official
# val list; labels in sorted class-name order.
# Same transforms (ViT probes: bicubic, VISSL's models/vit_b16.yaml), loaders
# and metric as the ImageNet probe.
_base_ = './in1k_linear-probe.py'
dataset_type = 'Places205Sorted'
data_root = 'data/places205'
num_classes = 205
data_preprocessor = dict(num_classes=num_classes)
train_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root, split='train'))
val_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root, split='test'))
test_dataloader = val_dataloader
