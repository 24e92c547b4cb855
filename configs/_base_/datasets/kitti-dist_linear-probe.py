# KITTI/Dist (distance to the closest vehicle: 4 bins) for linear probing
# (paper App. E.2): the transforms of VISSL's kitti_dist config
# (RandomResizedCrop 224 + flip; test: resize 256, center crop 224). data/kitti
# holds KITTI object's training/label_2 and training/image_2; train/test is a
# seeded 80/20 split of it.
# Same transforms (ViT probes too: VISSL's kitti_dist/models/vit_b16.yaml
# keeps them) and loaders as the ImageNet probe.
_base_ = './in1k_linear-probe.py'
dataset_type = 'KITTIDist'
data_root = 'data/kitti'
num_classes = 4
data_preprocessor = dict(num_classes=num_classes)
train_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root, split='train'))
val_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root, split='test'))
test_dataloader = val_dataloader
# one top-1 per linear probe (VISSL's kitti_dist meter: topk_values [1])
val_evaluator = dict(topk=(1, ))
test_evaluator = val_evaluator
