"""torchrun (``python -m torch.distributed.run``) that lets a refused run's
message stand alone: what ``tools/dist_train.sh`` and ``dist_test.sh`` start.

The ranks keep the terminal (their stdout and stderr are this process's
file descriptors). torchrun's own messages — its per-rank failure lines and
the ~40-line ``ChildFailedError`` block printed when a rank exits non-zero
— are held in a temporary file instead, and printed when the run fails
unless a rank refused it: then the refused rank has printed the refusal's
message (once, see :mod:`pmsn_mm.utils.refusal`: the ranks agree through
the file named by ``PMSN_REFUSAL_FILE``, set here) and this exits with
status 1 saying nothing more. Every argument is torchrun's.

Usage::

    python tools/torchrun.py --nproc_per_node=2 tools/train.py CONFIG \\
        --launcher pytorch
"""
import os
import sys
import tempfile

REFUSAL_FILE = 'PMSN_REFUSAL_FILE'  # pmsn_mm.utils.refusal.REFUSAL_FILE


def main() -> int:
    """Run torchrun with its own messages held; the exit status."""
    refusal = tempfile.NamedTemporaryFile(prefix='pmsn_refusal_',
                                          delete=False)
    refusal.close()
    os.remove(refusal.name)  # created by the first rank that refuses
    os.environ[REFUSAL_FILE] = refusal.name
    held = tempfile.TemporaryFile('w+')
    terminal = sys.stderr
    sys.stderr = held  # before torch's loggers bind to it
    status = 0
    try:
        from torch.distributed.run import main as torchrun
        torchrun()
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else 1
    except BaseException:  # noqa: BLE001  e.g. ChildFailedError
        import traceback
        traceback.print_exc(file=held)
        status = 1
    finally:
        sys.stderr = terminal
    refused = os.path.exists(refusal.name)
    if refused:
        os.remove(refusal.name)
        return status or 1
    held.seek(0)
    terminal.write(held.read())
    terminal.flush()
    return status


if __name__ == '__main__':
    sys.exit(main())
