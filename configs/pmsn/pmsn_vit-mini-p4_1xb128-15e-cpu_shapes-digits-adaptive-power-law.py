# The CPU toy PMSN job with a power-law prior whose exponent is learned from
# the data: AdaptivePowerLawPrior stays uniform (tau 0) during the learning-
# rate warm-up, then refits tau after every step from the EMA of the target
# usage (mean sharpened target per prototype; log-log least squares, bounded
# to [0, 1]); the digits follow tau 0.5. `prior_tau` / `prior_tau_fit` are
# logged with the losses. Everything else is inherited from the toy job.
_base_ = './pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'

model = dict(
    head=dict(
        prior=dict(
            _delete_=True,
            type='AdaptivePowerLawPrior',
            tau_init=0.0,
            tau_min=0.0,
            tau_max=1.0,
            momentum=0.99,
            warmup_updates=_base_.warmup_iters),
        loss=dict(prior_usage='targets')))
