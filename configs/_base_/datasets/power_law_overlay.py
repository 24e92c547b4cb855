# Toy set of paper §5.1: grayscale backgrounds with a power-law digit (tau 0.5)
# in the top-left corner. Offline default: scikit-learn digits over 10
# scikit-image photographs. For the paper's CIFAR-10 + MNIST version set
#   background_source='cifar10', background_root='data/cifar10',
#   digit_source='mnist', digit_root='data/mnist'
# (files read from disk, never downloaded).
dataset_type = 'PowerLawOverlayDataset'
toy_dataset = dict(
    type=dataset_type,
    image_size=32,
    digit_size=12,
    tau=0.5,
    background_source='skimage',
    digit_source='sklearn',
    seed=0)

# mean/std of the offline toy set (gray, replicated to 3 channels)
data_preprocessor = dict(
    mean=[118.0, 118.0, 118.0], std=[62.0, 62.0, 62.0], to_rgb=False)

test_pipeline = [
    dict(
        type='PackInputs',
        meta_keys=('sample_idx', 'digit_label', 'background_label')),
]
train_dataloader = dict(
    # the one upload per step non-blocking on a GPU (a copy from pageable
    # memory would be synchronous); pmsn_mm's tools drop it without one
    pin_memory=True,
    batch_size=64,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(**toy_dataset, split='train'))

# memory bank (train split) and queries (test split) of the kNN evaluation
knn_train_dataset = dict(
    **toy_dataset, split='train', num_samples=5000, pipeline=test_pipeline)
knn_test_dataset = dict(
    **toy_dataset, split='test', num_samples=1000, pipeline=test_pipeline)

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
