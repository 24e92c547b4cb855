# CLEVR/Dist (distance to the closest object: 6 bins) for linear probing (paper
# App. E.2): the transforms of VISSL's clevr_dist config (resize to 224x224 +
# flip; test: resize to 224x224). data/clevr holds CLEVR_v1.0's images/ and
# scenes/; split='test' is CLEVR's val set.
# Same transforms, loaders and metric as the CLEVR/Count probe.
_base_ = './clevr-count_linear-probe.py'
dataset_type = 'CLEVRDist'
num_classes = 6
data_preprocessor = dict(num_classes=num_classes)
train_dataloader = dict(dataset=dict(type=dataset_type))
val_dataloader = dict(dataset=dict(type=dataset_type))
test_dataloader = val_dataloader
