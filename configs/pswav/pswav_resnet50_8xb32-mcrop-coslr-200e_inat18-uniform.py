# SwAV on iNaturalist 2018 through PSwAV with the uniform prior: the ImageNet
# SwAV recipe on the iNat18 training list (data/inat18/meta/train.txt, see
# tools/dataset_converters/convert_inat18.py), 8142 prototypes as PMSN uses
# on iNat18 (paper App. F).
_base_ = './pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-uniform.py'

inat18_train = dict(
    type='CustomDataset',
    data_root='data/inat18/',
    ann_file='meta/train.txt',
    data_prefix='',
    with_label=True,
    pipeline=_base_.train_pipeline)
train_dataloader = dict(dataset=dict(_delete_=True, **inat18_train))
model = dict(head=dict(loss=dict(num_prototypes=8142)))
