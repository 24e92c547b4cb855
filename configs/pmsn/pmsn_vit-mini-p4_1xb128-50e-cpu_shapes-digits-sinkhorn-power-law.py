# The CPU toy PMSN job with the targets balanced by Sinkhorn-Knopp towards
# the same power-law prior as the KL term (tau 0.5): over each batch of B
# targets prototype k receives B * p_k (MSN's Sinkhorn would force B / K and
# pull against the KL term). Everything else is inherited from the toy job.
_base_ = './pmsn_vit-mini-p4_1xb128-50e-cpu_shapes-digits-power-law.py'

model = dict(
    head=dict(loss=dict(use_sinkhorn=True, sinkhorn_iterations=3)))
