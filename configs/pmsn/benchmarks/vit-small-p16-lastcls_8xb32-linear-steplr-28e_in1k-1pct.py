# Linear probe of paper App. E.2 on ImageNet-1K low-shot 1% (the paper's
# low-shot table): the probe of
# ./vit-small-p16-lastcls_8xb32-linear-steplr-28e_in1k.py trained on the
# official SimCLR 1% subset (data/imagenet/1percent.txt, one file name per
# line) and evaluated on the full val set.
_base_ = './vit-small-p16-lastcls_8xb32-linear-steplr-28e_in1k.py'
train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='LowShotDataset',
        list_file='data/imagenet/1percent.txt',
        dataset={{_base_.train_dataloader.dataset}}))
