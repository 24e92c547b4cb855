# PMSN with a ViT-S/16 (MSN's architecture): 3-layer projector to 256-d,
# prototypes compared at temperature 0.1, targets sharpened with T = 0.25 and
# balanced by Sinkhorn (official msn_vits16.yaml: use_sinkhorn true; towards
# the prior's marginals for a non-uniform prior).
model = dict(
    type='PMSN',
    backbone=dict(
        type='MSNViT',
        arch='deit-small',
        img_size=224,
        patch_size=16,
        drop_path_rate=0.0),
    neck=dict(
        type='MSNProjector',
        in_channels=384,
        hidden_channels=2048,
        out_channels=256),
    head=dict(
        type='PMSNHead',
        num_prototypes=1024,
        in_channels=256,
        temperature=0.1,
        prior=dict(type='UniformPrior'),
        loss=dict(
            type='PMSNLoss',
            sharpen_temperature=0.25,
            prior_weight=1.0,
            use_sinkhorn=True)),
    num_random_views=1,
    mask_ratio=0.15,
    target_momentum=0.996)
