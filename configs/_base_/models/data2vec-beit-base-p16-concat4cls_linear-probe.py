# Linear-probe model (paper App. E.2, VISSL): frozen data2vec ViT-B/16,
# concatenation of the CLS tokens of the last 4 blocks, each through the
# final LayerNorm (4 x 768; ConcatCLSNeck loads it from 'backbone.ln1.'); the
# encoder as in ./data2vec-beit-base-p16-lastcls_linear-probe.py (the
# Data2VecViT that data2vec pretrains), everything else as the ViT-S/16
# probe it inherits.
_base_ = './vit-small-p16-concat4cls_linear-probe.py'
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
        out_indices=[-4, -3, -2, -1],
        final_norm=False,
        drop_path_rate=0.0,  # deterministic features (VISSL: trunk in eval)
        frozen_stages=12,
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.')),
    neck=dict(in_channels=768),
    head=dict(in_channels=3072))
