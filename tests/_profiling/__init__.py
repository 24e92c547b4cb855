"""Profilers and op counters of the training step: maintainer and test code,
not part of the package.

- :mod:`tests._profiling.op_counter`: aten ops and host syncs
  (``OpCounter``, a ``TorchDispatchMode``);
- :mod:`tests._profiling.host_copies`: host-to-device copies
  (``HostCopyCounter``, a ``TorchFunctionMode``) and ``HostCopyHook``, which
  counts them in a real mmengine training loop;
- :mod:`tests._profiling.step_profiler`: one training step of any config,
  phase by phase, counted or timed.

The tests import them as ``tests._profiling``; the scripts of
``tools/speed/`` run from a checkout and put its root on ``sys.path`` first.

Every test that enforces CONTRIBUTING.md's rule "The training step makes
no host sync" names that section in its failure message
(:data:`HOST_SYNC_RULE`, :func:`rule_failure`,
:func:`~tests._profiling.op_counter.assert_host_syncs`).
"""

#: Where the zero-host-sync rule and its exceptions are written down; every
#: assertion that enforces it names this in its failure message.
HOST_SYNC_RULE = 'see CONTRIBUTING.md, "The training step makes no host sync"'


def rule_failure(detail: str) -> str:
    """A failure message of a check of the rule: what was found, then where
    the rule is.

    Args:
        detail: What the check found (counts, op names, copy sites).

    Returns:
        ``'<detail>; see CONTRIBUTING.md, "The training step makes no host
        sync"'``.
    """
    return f'{detail}; {HOST_SYNC_RULE}'
