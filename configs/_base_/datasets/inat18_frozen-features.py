# iNaturalist 2018 for evaluating frozen features with `tools/test.py` (kNN,
# logistic regression): the memory is the official train set, the queries
# the official val set (split='test'), both with the probes' test transforms.
_base_ = './in1k_frozen-features.py'
dataset_type = 'INat18'
data_root = 'data/inat18'
num_classes = 8142
data_preprocessor = dict(num_classes=num_classes)
test_dataloader = dict(
    dataset=dict(
        memory=dict(type=dataset_type, data_root=data_root, split='train'),
        query=dict(type=dataset_type, data_root=data_root, split='test')))
test_evaluator = dict(num_classes=num_classes)
