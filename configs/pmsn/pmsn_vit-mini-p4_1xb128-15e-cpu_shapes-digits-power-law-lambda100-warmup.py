# The CPU toy PMSN job at the paper's lambda = 100, reached by a linear
# warm-up from 0 over the first third of the run (PriorWeightWarmupHook), so
# that the run first leaves the trivial solution p_i = prior before the
# prior term dominates (docs/toy_prior_study.md, section 6). Everything else,
# Sinkhorn towards the prior included, is the toy job's. The study ran it at
# 50 epochs: `prior_toy_study.py ... --max-iters 3900` (the warm-up is a
# fraction of the run, so it scales with it).
_base_ = './pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'

model = dict(head=dict(loss=dict(prior_weight=100.0)))

custom_hooks = _base_.custom_hooks + [
    dict(type='PriorWeightWarmupHook', warmup_ratio=1 / 3, start_weight=0.0)
]
