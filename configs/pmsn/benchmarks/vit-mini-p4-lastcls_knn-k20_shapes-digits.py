# Weighted kNN (k 20, T 0.07, cosine) of the frozen CLS features (after the
# final LayerNorm) of the main job's encoder on the offline toy set, on both
# of its labels: the digit (power law) and the background shape (uniform),
# 10,000 training images as the memory bank and 2,000 test images as queries,
# exactly the evaluation the main job runs at its end (knn_digit/top1,
# knn_background/top1):
#   python tools/test.py THIS_CONFIG \
#     work_dirs/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law/iter_1170.pth
# The encoder is the main job's ViT (width 64, 4 layers, 4 x 4 patches of a
# 20 x 20 grey image; tests/test_configs/test_frozen_feature_configs.py keeps
# it equal to the pretraining config's); any checkpoint with this encoder
# fits (`backbone.*` weights).
_base_ = '../pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'

model = dict(
    _delete_=True,
    type='ImageClassifier',
    data_preprocessor=dict(
        type='ClsDataPreprocessor',
        mean={{_base_.data_preprocessor.mean}},
        std={{_base_.data_preprocessor.std}},
        to_rgb=False),
    backbone=dict(
        type='MSNViT',
        arch=dict(
            embed_dims=64, num_layers=4, num_heads=4,
            feedforward_channels=256),
        img_size=20,
        patch_size=4,
        in_channels=1,
        drop_path_rate=0.0,
        out_type='cls_token',
        final_norm=True,
        init_cfg=None),  # the weights are the tools/test.py checkpoint
    head=None)

test_dataloader = _base_.knn_val_dataloader
test_evaluator = _base_.knn_val_evaluator
test_cfg = dict(type='FeatureTestLoop')
# evaluation only: no training, no validation
train_dataloader = None
train_cfg = None
optim_wrapper = None
param_scheduler = None
auto_scale_lr = None
val_dataloader = None
val_evaluator = None
val_cfg = None
