# CIFAR-100 linear probe of a ViT: VISSL's ViT evaluation (models/vit_b16.yaml)
# resizes bicubically, with a 224 px random resized crop for training and a
# 256 px resize + 224 px centre crop for testing (vit_train_pipeline /
# vit_test_pipeline of the base).
_base_ = './cifar100_linear-probe.py'
train_dataloader = dict(dataset=dict(pipeline={{_base_.vit_train_pipeline}}))
val_dataloader = dict(dataset=dict(pipeline={{_base_.vit_test_pipeline}}))
test_dataloader = val_dataloader
