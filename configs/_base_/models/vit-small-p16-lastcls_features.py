# Frozen ViT-S/16, last-layer CLS token after the final LayerNorm (the
# features of MSN's kNN and low-shot logistic-regression evaluations), no
# head. The weights are the checkpoint given to tools/test.py (keys
# 'backbone.*': a PMSN/MSN checkpoint's online encoder, or the output of
# tools/model_converters/pmsn_to_backbone.py, with --target for the EMA
# target encoder that official MSN evaluates).
_base_ = './vit-small-p16-lastcls_linear-probe.py'
model = dict(backbone=dict(init_cfg=None), head=None)
