# Low-shot ImageNet-1K 1% (MSN's low-shot protocol): a logistic regression
# on the frozen vit-small-p16-lastcls features of the official SimCLR 1% subset
# (data/imagenet/1percent.txt), its regularisation chosen on a split of those
# training images only, scored on the val split.
#   python tools/test.py THIS_CONFIG CKPT
# CKPT: see ./vit-small-p16-lastcls_knn-k20_in1k.py.
_base_ = [
    '../../_base_/models/vit-small-p16-lastcls_features.py',
    '../../_base_/datasets/in1k_frozen-features.py',
    '../../_base_/default_runtime.py',
]
test_dataloader = dict(
    dataset=dict(
        memory=dict(
            _delete_=True,
            type='LowShotDataset',
            list_file='data/imagenet/1percent.txt',
            dataset={{_base_.test_dataloader.dataset.memory}})))
test_evaluator = dict(_delete_=True, type='LogisticRegressionAccuracy')
