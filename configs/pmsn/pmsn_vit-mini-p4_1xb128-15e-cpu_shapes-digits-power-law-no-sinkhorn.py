# Control of the CPU toy PMSN job: the same recipe without Sinkhorn on the
# targets (the paper's eq. (9) alone, as in App. F). With the power-law prior
# MSN's sharpening skews the targets towards the largest prototype: a first
# measurement sat in the trivial solution p_i ~ prior, the current code
# collapses the argmax onto 2-5 prototypes and loses the digit; see
# docs/choosing_a_prior.md and docs/toy_prior_study.md. Everything else is
# inherited from the toy job.
_base_ = './pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'

model = dict(head=dict(loss=dict(use_sinkhorn=False)))
