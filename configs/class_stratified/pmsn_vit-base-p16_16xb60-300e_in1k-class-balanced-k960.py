# MSN/PMSN (uniform prior) on ImageNet with class-balanced batches (paper §4):
# 16 GPUs x 60 = 960 images, one from each of 960 classes (the paper's 1024
# is not divisible by K = 960). MSN's lr 1e-3 is not scaled with the batch.
_base_ = '../pmsn/pmsn_vit-base-p16_16xb64-300e_in1k-uniform.py'
train_dataloader = dict(
    batch_size=60,  # per GPU
    drop_last=False,  # the batch sampler yields whole batches only
    batch_sampler=dict(
        type='ClassStratifiedBatchSampler', classes_per_batch=960))
auto_scale_lr = dict(base_batch_size=960)
