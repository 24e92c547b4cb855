# iNaturalist 2018 (8,142 classes, long-tailed) with MSN's multi-view
# pipeline. Images are read through an annotation list
#   data/inat18/meta/train.txt   lines: "train_val2018/<...>.jpg <category_id>"
# (labels are used only by ClassPrior and class-aware samplers).
_base_ = ['./imagenet_msn.py']

dataset_type = 'CustomDataset'
data_root = 'data/inat18/'
train_dataset = dict(
    type=dataset_type,
    data_root=data_root,
    ann_file='meta/train.txt',
    data_prefix='',
    with_label=True,
    pipeline={{_base_.train_pipeline}})
train_dataloader = dict(
    dataset=dict(_delete_=True, **train_dataset))
