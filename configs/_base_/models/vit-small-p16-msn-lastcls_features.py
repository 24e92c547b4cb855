# Frozen ViT-S/16 features as official MSN's evaluations define them
# (facebookresearch/msn logistic_eval.py make_embeddings and linear_eval.py,
# num_blocks 1: `encoder.forward_blocks(imgs, 1)`, src/deit.py): the CLS
# token after the last block, WITHOUT the final LayerNorm. VISSL's lastCLS
# (./vit-small-p16-lastcls_features.py, the paper's probes) takes it after
# the final norm. No head. The weights are the checkpoint given to
# tools/test.py (keys 'backbone.*', e.g. the backbone file of
# tools/model_converters/msn_to_pmsn.py: the target encoder, which the
# official evaluations read); its final norm (backbone.ln1.*) is unused.
_base_ = './vit-small-p16-lastcls_features.py'
model = dict(backbone=dict(final_norm=False))
