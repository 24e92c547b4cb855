# Offline toy set of paper §5.1 (fast version): procedural shape backgrounds
# (10 uniform classes, random position/size/rotation/contrast/noise) with a
# power-law (tau 0.5) scikit-learn digit in the top-left corner, 20 x 20 px,
# one grey channel, held in memory. The 10 px digit sits at the crossover of
# the two labels' learnability under the toy job's crops (8 px: only the
# shapes are learned; 12 px: the digit under both priors), where the prior
# can matter (docs/toy_prior_study.md). The views are made on the device by
# BatchAugmentPreprocessor, so the dataset pipeline only packs the image.
dataset_type = 'PowerLawOverlayDataset'
toy_dataset = dict(
    type=dataset_type,
    image_size=20,
    digit_size=10,
    tau=0.5,
    background_source='shapes',
    digit_source='sklearn',
    channels=1,
    seed=0)

# mean/std of this set (one grey channel)
data_preprocessor = dict(mean=[105.0], std=[58.0], to_rgb=False)

pack = [
    dict(
        type='PackInputs',
        meta_keys=('sample_idx', 'digit_label', 'background_label')),
]
train_dataloader = dict(
    # the one upload per step non-blocking on a GPU (a copy from pageable
    # memory would be synchronous); pmsn_mm's tools drop it without one
    pin_memory=True,
    batch_size=128,
    num_workers=0,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(**toy_dataset, split='train', num_samples=10000,
                 pipeline=pack))

# memory bank (train split) and queries (test split) of the kNN evaluation
knn_train_dataset = dict(
    **toy_dataset, split='train', num_samples=10000, pipeline=pack)
knn_test_dataset = dict(
    **toy_dataset, split='test', num_samples=2000, pipeline=pack)

# The kNN evaluation (mmengine's val loop): FeatureValLoop extracts frozen
# backbone features of the memory bank and the queries (KNNEvalDataset) and
# KNNAccuracy scores a weighted kNN (k 20, T 0.07) on both labels
# (knn_digit/top1, knn_background/top1). A config opts in with
#   val_dataloader = _base_.knn_val_dataloader
#   val_evaluator = _base_.knn_val_evaluator
#   val_cfg = dict(type='FeatureValLoop')
# and sets train_cfg.val_interval (an iteration-based run also validates at
# its last iteration).
knn_val_dataloader = dict(
    batch_size=256,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='KNNEvalDataset',
        memory=knn_train_dataset,
        query=knn_test_dataset))
knn_val_evaluator = [
    dict(type='KNNAccuracy', k=20, temperature=0.07,
         label_key='digit_label', prefix='knn_digit'),
    dict(type='KNNAccuracy', k=20, temperature=0.07,
         label_key='background_label', prefix='knn_background'),
]
