# SwAV on iNaturalist 2018 through PSwAV with the uniform prior: the ImageNet
# SwAV recipe on the iNat18 training set (read from data/inat18/train2018.json
# by pmsn_mm's INat18), 8142 prototypes as PMSN uses on iNat18 (paper App. F).
_base_ = './pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-uniform.py'

inat18_train = dict(
    type='INat18',
    data_root='data/inat18/',
    split='train',
    pipeline=_base_.train_pipeline)
train_dataloader = dict(dataset=dict(_delete_=True, **inat18_train))
model = dict(head=dict(num_prototypes=8142))
