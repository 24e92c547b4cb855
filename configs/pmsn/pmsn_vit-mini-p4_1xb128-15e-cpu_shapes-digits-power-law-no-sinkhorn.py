# Control of the CPU toy PMSN job: the same recipe without Sinkhorn on the
# targets (the paper's eq. (7) alone, as in App. F). With the power-law prior
# the prototypes stay in the trivial solution p_i ~ prior for every image
# (few prototypes used by argmax, H(p_i) close to H(p̄)); see
# docs/toy_prior_study.md. Everything else is inherited from the toy job.
_base_ = './pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'

model = dict(head=dict(loss=dict(use_sinkhorn=False)))
