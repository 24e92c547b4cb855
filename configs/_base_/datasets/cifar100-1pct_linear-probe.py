# CIFAR-100, 1% of the training labels (5 per class) for linear probing (paper
# App. E.2): the transforms of VISSL's cifar100 config (resize 224 + flip;
# test: resize 224). data/cifar100 holds cifar-100-python/; the train set is a
# seeded 1% of every class.
_base_ = './cifar100_linear-probe.py'
train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        # 1% of every class of the train split (5 images per class), seeded
        type='LowShotDataset',
        fraction=0.01,
        seed=0,
        dataset={{_base_.train_dataloader.dataset}}))
