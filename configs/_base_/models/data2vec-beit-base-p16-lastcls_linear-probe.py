# Linear-probe model (paper App. E.2, VISSL): frozen data2vec ViT-B/16,
# last-layer CLS token after the final LayerNorm (768-d); everything else as
# the ViT-S/16 probe it inherits. data2vec pretrains a BEiT-style ViT (layer
# scale, one relative position bias shared by all blocks, no absolute
# position embedding: configs/data2vec/), whose weights a plain ViT-B cannot
# load, so the probe's encoder is that same Data2VecViT, frozen whole
# (frozen_stages=12 also freezes the shared bias and the mask token).
_base_ = './vit-small-p16-lastcls_linear-probe.py'
model = dict(
    backbone=dict(
        _delete_=True,
        type='Data2VecViT',
        arch='base',
        img_size=224,
        patch_size=16,
        use_abs_pos_emb=False,
        use_rel_pos_bias=False,
        use_shared_rel_pos_bias=True,
        layer_scale_init_value=1e-4,  # > 0: gamma_1/gamma_2 exist and load
        out_type='cls_token',
        out_indices=-1,
        final_norm=True,
        drop_path_rate=0.0,  # deterministic features (VISSL: trunk in eval)
        frozen_stages=12,
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.')),
    head=dict(in_channels=768))
