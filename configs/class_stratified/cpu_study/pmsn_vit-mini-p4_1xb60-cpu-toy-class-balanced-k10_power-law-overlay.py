# The CPU toy PMSN job (power-law prior) with class-stratified batches over
# the 10 background classes: K = 10 (balanced: every batch has all classes,
# 6 images each). Not part of the five-method study of
# tools/analysis_tools/class_stratified_cpu_study.py (paper Table 1 has MSN).
_base_ = '../../pmsn/pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'
train_dataloader = dict(
    batch_size=60,
    drop_last=False,  # the batch sampler yields whole batches only
    batch_sampler=dict(
        type='ClassStratifiedBatchSampler', classes_per_batch=10),
    dataset=dict(label='background'))
auto_scale_lr = dict(base_batch_size=60)
