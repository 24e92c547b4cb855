# PMSN on your own folder of images (docs/own_data.md), continued from a
# converted MSN checkpoint with a power-law prior p_k ∝ k^-0.25 over the
# checkpoint's own 1024 prototypes (docs/msn_checkpoints.md):
#   IMAGE_FOLDER=path/to/images \
#   MSN_CHECKPOINT=checkpoints/msn_vits16_800ep_pmsn.pth \
#       python tools/train.py THIS_CONFIG
# The recipe of ./pmsn_vit-small-p16_32xb128-300e_image-folder.py (the
# paper's iNat18 recipe: lambda 5, mask 0.15, 1 random + 10 focal views)
# for 100 epochs. Prototypes: the checkpoint's 1024, KEPT: they were
# learned together with the encoder, so the first step is MSN's own (the
# prior aside), and a power law ranks prototypes, it does not name classes,
# so no new set is needed (class sub-folders are read but their labels are
# not used). For the class prior of your class folders, one prototype per
# class, use ./pmsn_vit-small-p16_32xb128-300e_image-folder.py with
# load_from (docs/msn_checkpoints.md).
_base_ = './pmsn_vit-small-p16_32xb128-300e_image-folder.py'
model = dict(
    head=dict(
        num_prototypes=1024,
        prior=dict(_delete_=True, type='PowerLawPrior', tau=0.25)))
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
