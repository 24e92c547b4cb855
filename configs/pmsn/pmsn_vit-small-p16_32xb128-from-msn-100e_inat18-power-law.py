# PMSN on iNaturalist 2018 with a power-law prior p_k ∝ k^-0.25 (paper
# Table 3's prior, ./pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py:
# 8142 prototypes, lambda 5, mask 0.15, 1 random + 10 focal views, global
# batch 4096), continued from Meta's released MSN ViT-S/16 (ImageNet-1K, 800
# epochs) for 100 epochs instead of 300 from scratch (docs/msn_checkpoints.md):
#   python tools/model_converters/msn_to_pmsn.py vits16_800ep.pth.tar \
#       checkpoints/msn_vits16_800ep_pmsn.pth
#   MSN_CHECKPOINT=checkpoints/msn_vits16_800ep_pmsn.pth \
#       bash tools/dist_train.sh THIS_CONFIG 32
# Prototypes: a NEW set of 8142 (one per iNat18 class, the paper's K on
# iNat18), initialised as MSN's. The checkpoint's 1024 prototypes were
# learned on ImageNet and are fewer than iNat18's classes: load_from loads
# the encoder, projector and EMA target and skips head.prototypes (mmengine
# logs the size mismatch 1024 vs 8142).
_base_ = './pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py'
# The schedule of ../_base_/schedules/adamw_msn_300e.py (lr 1e-3 after a
# linear warm-up from 2e-4, cosines over 1.25x the run, weight decay 0.04 ->
# 0.4) for 100 epochs with 10 warm-up epochs: a choice of this project for a
# continuation (neither paper continues a pretrained MSN), not a published
# recipe, not tuned; the warm-up keeps the first steps of the new prior
# from pulling the pretrained encoder at the full lr.
max_epochs = 100
warmup_epochs = 10
schedule_epochs = 1.25 * max_epochs  # where the cosines would end
param_scheduler = [
    dict(type='LinearLR', start_factor=0.2, by_epoch=True, begin=0,
         end=warmup_epochs, convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=schedule_epochs - warmup_epochs,
         eta_min=1e-6, by_epoch=True, begin=warmup_epochs, end=max_epochs,
         convert_to_iter_based=True),
    dict(type='CosineAnnealingWeightDecay', eta_min=0.4,
         T_max=schedule_epochs, by_epoch=True, begin=0, end=max_epochs,
         convert_to_iter_based=True),
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs)
# the converted MSN checkpoint (tools/model_converters/msn_to_pmsn.py)
load_from = '{{$MSN_CHECKPOINT:checkpoints/msn_vits16_800ep_pmsn.pth}}'
