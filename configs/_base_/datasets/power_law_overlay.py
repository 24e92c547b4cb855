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
    batch_size=64,
    num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(**toy_dataset, split='train'))

# memory bank (train split) and queries (test split) for KNNEvalHook
knn_train_dataset = dict(
    **toy_dataset, split='train', num_samples=5000, pipeline=test_pipeline)
knn_test_dataset = dict(
    **toy_dataset, split='test', num_samples=1000, pipeline=test_pipeline)
