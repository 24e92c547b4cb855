# ImageNet-1K for evaluating frozen features with `tools/test.py CONFIG CKPT`
# (kNN, logistic regression): one pass of FeatureTestLoop extracts the
# features of the train split (the kNN memory / the regression's training
# set) and of the val split (the queries), both with the probes' test
# transforms (resize 256, center crop 224). No training loop.
_base_ = './in1k_linear-probe.py'

test_dataloader = dict(
    batch_size=64,
    num_workers=5,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        _delete_=True,
        type='KNNEvalDataset',
        memory=dict(
            type={{_base_.dataset_type}},
            data_root={{_base_.data_root}},
            split='train',
            pipeline={{_base_.test_pipeline}}),
        query=dict(
            type={{_base_.dataset_type}},
            data_root={{_base_.data_root}},
            split='val',
            pipeline={{_base_.test_pipeline}})))
test_cfg = dict(type='FeatureTestLoop')
# weighted kNN (k 20, T 0.07, cosine; MSN/DINO); the logistic-regression
# benchmarks replace it
test_evaluator = dict(
    _delete_=True, type='KNNAccuracy', k=20, temperature=0.07, topk=(1, 5),
    num_classes={{_base_.num_classes}})
train_dataloader = None
val_dataloader = None
val_evaluator = None
