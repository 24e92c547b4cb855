# Frozen ViT-S/16 features as official MSN's linear evaluation defines
# concat-4 (facebookresearch/msn linear_eval.py with num_blocks 4:
# `encoder.forward_blocks(imgs, 4)`, src/deit.py): the CLS tokens of the
# last 4 blocks concatenated, WITHOUT the final LayerNorm (the official
# classifier layer-normalises the concatenation itself). VISSL's / DINO's
# concat-4 (./vit-small-p16-concat4cls_linear-probe.py, the paper's probes)
# passes each token through the final norm. No head. The weights are the
# checkpoint given to tools/test.py (keys 'backbone.*'); the neck has none.
_base_ = './vit-small-p16-lastcls_features.py'
model = dict(
    backbone=dict(out_indices=[-4, -3, -2, -1], final_norm=False),
    neck=dict(type='ConcatCLSNeck', num_layers=4, final_norm=False))
