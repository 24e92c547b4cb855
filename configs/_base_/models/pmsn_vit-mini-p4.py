# PMSN on the 32 px photo-overlay toy set, scaled down for CPU: a 4-layer ViT
# (dim 96, patch 4) instead of ViT-Tiny/4, a 512-512-128 projector; the
# paper's toy settings otherwise (10 prototypes, lambda 100, mask 0.05, one
# random view, T 0.1, sharpen 0.25, EMA 0.996 -> 1). Uniform prior (MSN);
# configs set the data pre-processor and may change the prior.
model = dict(
    type='PMSN',
    backbone=dict(
        type='MSNViT',
        arch=dict(
            embed_dims=96, num_layers=4, num_heads=3,
            feedforward_channels=384),
        img_size=32,
        patch_size=4,
        drop_path_rate=0.0),
    neck=dict(
        type='MSNProjector',
        in_channels=96,
        hidden_channels=512,
        out_channels=128),
    head=dict(
        type='PMSNHead',
        num_prototypes=10,
        in_channels=128,
        temperature=0.1,
        prior=dict(type='UniformPrior'),
        loss=dict(
            type='PMSNLoss',
            sharpen_temperature=0.25,
            prior_weight=100.0)),
    num_random_views=1,
    mask_ratio=0.05,
    target_momentum=0.996)
