# iNat18 linear probe of a ViT: VISSL's ViT evaluation (models/vit_b16.yaml)
# resizes bicubically
# (vit_train_pipeline / vit_test_pipeline of the base).
_base_ = './inat18_linear-probe.py'
train_dataloader = dict(dataset=dict(pipeline={{_base_.vit_train_pipeline}}))
val_dataloader = dict(dataset=dict(pipeline={{_base_.vit_test_pipeline}}))
test_dataloader = val_dataloader
