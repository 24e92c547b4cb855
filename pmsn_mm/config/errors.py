"""The errors of pmsn_mm's config checks: each is also the built-in error a
caller would expect (``KeyError`` for an unknown name, ``TypeError`` for an
unknown keyword, ...), and all are :class:`ConfigCheckError`, so that a tool
can print the message alone instead of a traceback."""
from ..utils.refusal import Refusal


class ConfigCheckError(Refusal):
    """A config (or a command-line change to it) that pmsn_mm's checks
    refuse before anything runs. Printed as its message (no quotes, as a
    ``KeyError`` would add)."""


class ConfigNotFoundError(ConfigCheckError, FileNotFoundError):
    """A config path that does not exist (naming the closest configs)."""


class UnknownOptionError(ConfigCheckError, KeyError):
    """A ``--cfg-options`` key of a section that nothing reads."""


class ConfigValueError(ConfigCheckError, ValueError):
    """A value a config states twice, or one that cannot run."""
