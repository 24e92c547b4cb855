# Runtime shared by every pmsn_mm config: mmpretrain's registries first, and
# pmsn_mm imported so its modules are registered (any mmpretrain config can
# use pmsn_mm parts by adding the `custom_imports` line below).
default_scope = 'mmpretrain'
custom_imports = dict(imports=['pmsn_mm'], allow_failed_imports=False)
# what a run needs beyond the command line (config checks, mixed precision,
# loaders fitted to the machine, the work-dir guard): the same run from
# tools/train.py, mmpretrain's tools/train.py and `mim train pmsn_mm`
runner_type = 'PMSNRunner'

default_hooks = dict(
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=50),
    param_scheduler=dict(type='ParamSchedulerHook'),
    # 'atomic_local' (pmsn_mm): temp file + rename, so a kill while saving
    # never leaves a truncated newest checkpoint
    checkpoint=dict(
        type='CheckpointHook',
        interval=1,
        max_keep_ckpts=3,
        backend_args=dict(backend='atomic_local')),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    visualization=dict(type='VisualizationHook', enable=False),
    # random states of every rank in each checkpoint: --resume replays the
    # augmentations and masks of the uninterrupted run
    rng_state=dict(type='RNGStateHook'),
    # stop at the first NaN/inf loss or gradient, never save NaN weights;
    # action='skip', max_skips=N skips such steps instead
    non_finite_guard=dict(type='NonFiniteGuardHook', action='stop'),
    # EMA targets (PMSN, data2vec) averaged in after every optimizer step,
    # as official MSN does; no-op for models without one
    target_ema=dict(type='TargetEMAHook'),
    # on a CPU, torch threads for the cores other processes leave free (a
    # busy neighbour otherwise costs a run 3-30x); OMP_NUM_THREADS wins
    cpu_threads=dict(type='CPUThreadsHook'),
    # SIGTERM/SIGUSR1 (Slurm's warnings before preemption or the time
    # limit): every rank finishes its iteration, one checkpoint is saved,
    # the job requeues itself under Slurm, exit status 75; the same command
    # resumes (docs/distributed.md)
    preemption=dict(type='PreemptionHook'),
    # the latest validation's metrics as the log's last line
    final_val_metrics=dict(type='FinalValMetricsHook'),
)

env_cfg = dict(
    cudnn_benchmark=False,
    mp_cfg=dict(mp_start_method='fork', opencv_num_threads=0),
    # tools/train.py switches to gloo automatically when CUDA is unavailable
    dist_cfg=dict(backend='nccl'),
)

vis_backends = [dict(type='LocalVisBackend')]
visualizer = dict(type='UniversalVisualizer', vis_backends=vis_backends)

log_processor = dict(window_size=10)
log_level = 'INFO'
load_from = None
resume = False
randomness = dict(seed=0, deterministic=False)
