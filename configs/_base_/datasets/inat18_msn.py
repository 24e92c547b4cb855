# iNaturalist 2018 (8,142 classes, long-tailed) with MSN's multi-view
# pipeline, read straight from the official files (pmsn_mm's INat18):
#   data/inat18/train2018.json, val2018.json, train_val2018/<...>.jpg
# label = category_id (used only by ClassPrior and class-aware samplers).
_base_ = ['./imagenet_msn.py']

dataset_type = 'INat18'
data_root = 'data/inat18/'
train_dataset = dict(
    type=dataset_type,
    data_root=data_root,
    split='train',
    pipeline={{_base_.train_pipeline}})
train_dataloader = dict(
    dataset=dict(_delete_=True, **train_dataset))
