"""Refusals: what a command prints when pmsn_mm refuses its input
(docs/get_started.md, "A refusal is one message"). :func:`run_command`
prints a refusal alone on one line of stderr, once per launch, and exits 1
(``--debug`` raises it instead).

An error is a refusal when it is a :class:`Refusal`, or one of
:data:`REFUSAL_TYPES` raised by a ``raise`` statement of pmsn_mm's own code or
its tools (also from a dataloader worker, whose message torch wraps). Anything
else (an error raised inside mmengine or torch, ...) keeps its traceback.
The console output held meanwhile (:class:`DeferredConsole`) is dropped on
a refusal and printed before any other error's traceback.
"""
import io
import linecache
import logging
import os
import os.path as osp
import re
import sys
from typing import Any, Callable, List, Optional, TextIO, Tuple

#: Built-in error types pmsn_mm raises about its input.
REFUSAL_TYPES: Tuple[type, ...] = (ValueError, TypeError, KeyError,
                                   FileNotFoundError, FileExistsError,
                                   NotADirectoryError, IsADirectoryError,
                                   PermissionError)
#: Where a refusal may be raised: the package and the repository's tools.
_PACKAGE = osp.dirname(osp.dirname(osp.abspath(__file__)))
_OWN_ROOTS = (_PACKAGE + os.sep,
              osp.join(osp.dirname(_PACKAGE), 'tools') + os.sep)
#: How torch's DataLoader re-raises a worker's error (``ExceptionWrapper``).
_WORKER = re.compile(r'^Caught \w+ in DataLoader worker process \d+\.\n'
                     r'Original Traceback \(most recent call last\):\n',
                     re.S)
#: Names the file through which a distributed launch's ranks agree that
#: one printed the refusal (``tools/dist_train.sh`` sets it).
REFUSAL_FILE = 'PMSN_REFUSAL_FILE'


def _mmengine_loggers() -> List[logging.Logger]:
    """mmengine's logger instances (not in ``logging``'s registry)."""
    module = sys.modules.get('mmengine.logging.logger')
    instances = getattr(getattr(module, 'MMLogger', None), '_instance_dict',
                        {}) if module is not None else {}
    return [v for v in instances.values() if isinstance(v, logging.Logger)]


def all_loggers() -> List[logging.Logger]:
    """Every logger of the process: the root, ``logging``'s registry and
    mmengine's instances (which that registry does not hold)."""
    return [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ] + _mmengine_loggers()


def _stream_handlers() -> List[logging.StreamHandler]:
    """The console handlers of every logger (mmengine's included)."""
    return [h for logger in all_loggers() for h in logger.handlers
            if isinstance(h, logging.StreamHandler)
            and not isinstance(h, logging.FileHandler)]


class DeferredConsole:
    """``sys.stdout`` (and the log handlers that write to it) held in a
    buffer between :meth:`start` and :meth:`release` / :meth:`discard`.

    One is active per process at a time (:func:`hold_console`): a tool
    starts holding before it reads the config, the runner carries on.
    """

    def __init__(self) -> None:
        self.buffer: Optional[io.StringIO] = None
        self.stdout: Optional[TextIO] = None

    @property
    def holding(self) -> bool:
        """Whether output is held now."""
        return self.buffer is not None

    def start(self) -> None:
        """Hold everything written to ``sys.stdout`` from now on."""
        global _ACTIVE
        if self.buffer is not None:
            return
        self.stdout = sys.stdout
        self.buffer = io.StringIO()
        for handler in _stream_handlers():
            if handler.stream is self.stdout:
                handler.setStream(self.buffer)
        sys.stdout = self.buffer
        _ACTIVE = self

    def _end(self) -> str:
        """Point ``sys.stdout`` and every handler that writes into the buffer
        back at the real stdout; the held text."""
        global _ACTIVE
        buffer, stdout = self.buffer, self.stdout
        if buffer is None or stdout is None:
            return ''
        self.buffer = self.stdout = None
        if _ACTIVE is self:
            _ACTIVE = None
        if sys.stdout is buffer:
            sys.stdout = stdout
        for handler in _stream_handlers():
            if handler.stream is buffer:
                handler.setStream(stdout)
        return buffer.getvalue()

    def release(self) -> None:
        """Print what was held and stop holding."""
        stdout = self.stdout
        text = self._end()
        if text and stdout is not None:
            stdout.write(text)
            stdout.flush()

    def discard(self) -> None:
        """Stop holding and drop what was held (a refused run)."""
        self._end()


#: The console held now, if any.
_ACTIVE: Optional[DeferredConsole] = None


def hold_console() -> DeferredConsole:
    """The console being held, or a new one that starts holding now.

    Returns:
        The active :class:`DeferredConsole`.
    """
    if _ACTIVE is not None and _ACTIVE.holding:
        return _ACTIVE
    console = DeferredConsole()
    console.start()
    return console


def active_console() -> Optional[DeferredConsole]:
    """The console being held now, or None."""
    return _ACTIVE if _ACTIVE is not None and _ACTIVE.holding else None


class Refusal(Exception):
    """An error about the user's input whose message is all the user needs
    (printed without quotes, as a ``KeyError`` would add).

    Args:
        message: What is wrong and what to do instead.
    """

    #: The exit status of a command refused by this error.
    exit_code = 1

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ''


class NothingToDo(Refusal):
    """The command has nothing to do (e.g. resuming a finished run): said
    in one line, exit status 0.

    Args:
        message: What was found and how to do more.
    """

    exit_code = 0


def _message(error: BaseException) -> str:
    if isinstance(error, KeyError) and not isinstance(error, Refusal) \
            and len(error.args) == 1:
        return str(error.args[0])  # without KeyError's quotes
    return str(error)


def _raised_by_us(error: BaseException) -> bool:
    """Whether the innermost frame of the traceback is a ``raise``
    statement in pmsn_mm or its tools."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = osp.abspath(tb.tb_frame.f_code.co_filename)
    if not filename.startswith(_OWN_ROOTS):
        return False
    line = linecache.getline(filename, tb.tb_lineno).strip()
    return line.startswith('raise ')


def _worker_message(error: BaseException) -> Optional[str]:
    """The original message of an error a dataloader worker raised, if it
    is a refusal (its last traceback frame a ``raise`` in pmsn_mm)."""
    text = str(error)
    if not _WORKER.match(text):
        return None
    name = type(error).__name__
    lines = text.rstrip('\n').split('\n')
    # the last frame before the exception line: '  File "X", line N, in f'
    for i in range(len(lines) - 1, -1, -1):
        head = lines[i].split(': ', 1)[0]
        if head.split('.')[-1] != name or lines[i].startswith(' '):
            continue
        frames = [re.match(r'\s+File "([^"]+)", line (\d+)', line)
                  for line in lines[:i]]
        found = [m for m in frames if m]
        if not found:
            return None
        path, lineno = osp.abspath(found[-1].group(1)), int(found[-1].group(2))
        source = linecache.getline(path, lineno).strip()
        if path.startswith(_OWN_ROOTS) and source.startswith('raise ') or \
                isinstance(error, Refusal):
            message = '\n'.join(lines[i:])[len(lines[i].split(': ', 1)[0]) +
                                           2:]
            if isinstance(error, KeyError) and len(message) > 1 and \
                    message[0] == message[-1] and message[0] in '\'"':
                message = message[1:-1]
            return message
        return None
    return None


def refusal_message(error: BaseException) -> Optional[str]:
    """The message to print for a refusal, None for any other error.

    Args:
        error: The error that ended a command.

    Returns:
        The message (no traceback, no type name), or None.
    """
    worker = _worker_message(error)
    if worker is not None:
        return worker
    if isinstance(error, Refusal):
        return _message(error)
    if isinstance(error, REFUSAL_TYPES) and _raised_by_us(error):
        return _message(error)
    return None


def _rank() -> int:
    for key in ('RANK', 'SLURM_PROCID', 'OMPI_COMM_WORLD_RANK'):
        if os.environ.get(key, '').isdigit():
            return int(os.environ[key])
    return 0


def _first_to_refuse(message: str) -> bool:
    """Whether this process prints the refusal: with :data:`REFUSAL_FILE`
    set, the first rank to create that file; else rank 0 (another rank
    prints its own refusal prefixed with its rank)."""
    path = os.environ.get(REFUSAL_FILE)
    if not path:
        return True
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    except OSError:  # an unwritable place: print
        return True
    with os.fdopen(fd, 'w') as f:
        f.write(message + '\n')
    return True


def print_refusal(message: str) -> None:
    """Print a refusal's message once: on stderr, alone.

    Args:
        message: The message.
    """
    if not _first_to_refuse(message):
        return
    rank = _rank()
    if rank and not os.environ.get(REFUSAL_FILE):
        message = f'[rank {rank}] {message}'
    sys.stdout.flush()
    print(message, file=sys.stderr, flush=True)


def run_command(main: Callable[[], Any], debug: bool = False) -> Any:
    """Run a tool's ``main``; a refusal exits with its message and status.

    Args:
        main: The tool's entry (no arguments).
        debug: Raise refusals too (their tracebacks).

    Returns:
        What ``main`` returned.
    """
    held = hold_console()
    try:
        result = main()
    except BaseException as error:  # noqa: BLE001  refusals only
        message = None if debug or isinstance(
            error, (SystemExit, KeyboardInterrupt)) else refusal_message(error)
        if message is None:
            held.release()  # the context of the traceback
            raise
        held.discard()
        print_refusal(message)
        _exit(getattr(error, 'exit_code', 1))
    held.release()
    return result


def _exit(code: int) -> None:
    """``sys.exit``; in a distributed process ``os._exit`` after flushing
    (interpreter finalization with gloo's threads alive can abort: see
    :func:`pmsn_mm.engine.launcher.exit_after_distributed_run`)."""
    dist = sys.modules.get('torch.distributed')
    if dist is not None and dist.is_available() and dist.is_initialized():
        import logging
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)
    sys.exit(code)


def debug_requested(argv: Optional[list] = None) -> bool:
    """Whether ``--debug`` is on the command line (read before argparse,
    so that a refusal of the arguments themselves obeys it).

    Args:
        argv: The arguments (default ``sys.argv[1:]``).
    """
    return '--debug' in (sys.argv[1:] if argv is None else argv)
