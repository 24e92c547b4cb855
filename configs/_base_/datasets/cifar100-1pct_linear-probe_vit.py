# CIFAR-100 1 % linear probe of a ViT: the low-shot training set of
# ./cifar100-1pct_linear-probe.py with the ViT transforms of
# ./cifar100_linear-probe_vit.py.
_base_ = './cifar100-1pct_linear-probe.py'
train_dataloader = dict(
    dataset=dict(dataset=dict(pipeline={{_base_.vit_train_pipeline}})))
val_dataloader = dict(dataset=dict(pipeline={{_base_.vit_test_pipeline}}))
test_dataloader = val_dataloader
