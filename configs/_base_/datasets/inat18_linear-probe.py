# iNaturalist 2018 for linear probing (paper App. E.2): the transforms of
# VISSL's inaturalist18 config (RandomResizedCrop 224 + flip; test: resize 256,
# center crop 224). data/inat18 holds the official train2018.json, val2018.json
# and train_val2018/; split='test' is the official val set.
# Same transforms (ViT probes: bicubic, VISSL's models/vit_b16.yaml), loaders
# and metric as the ImageNet probe.
_base_ = './in1k_linear-probe.py'
dataset_type = 'INat18'
data_root = 'data/inat18'
num_classes = 8142
data_preprocessor = dict(num_classes=num_classes)
train_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root, split='train'))
val_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root, split='test'))
test_dataloader = val_dataloader
