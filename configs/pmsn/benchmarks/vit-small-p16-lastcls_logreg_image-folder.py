# Logistic regression on the frozen vit-small-p16-lastcls features of your own
# folder of images with class sub-folders (docs/own_data.md; MSN's low-shot
# protocol): fitted on each class's images but every 5th (its regularisation
# chosen on a split of those), scored on every 5th.
#   IMAGE_FOLDER=path/to/images python tools/test.py THIS_CONFIG CKPT
# CKPT: a PMSN/MSN checkpoint (online encoder) or the output of
# tools/model_converters/pmsn_to_backbone.py (--target: the EMA target).
_base_ = [
    '../../_base_/models/vit-small-p16-lastcls_features.py',
    '../../_base_/datasets/image_folder_frozen-features.py',
    '../../_base_/default_runtime.py',
]
test_evaluator = dict(_delete_=True, type='LogisticRegressionAccuracy')
