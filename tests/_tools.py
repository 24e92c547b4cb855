"""Load a script of ``tools/`` as a module (they are not a package), or a
helper module that lives beside its tools."""
import importlib
import os.path as osp
import re
import sys
import types
from importlib.util import module_from_spec, spec_from_file_location

from tests._configs import REPO


def load_tool(path: str) -> types.ModuleType:
    """The module of ``REPO/path`` (e.g. ``'tools/train.py'``), loaded once
    per test session.

    Args:
        path: The script's path relative to the repository root.
    """
    name = 'tool_' + re.sub(r'\W', '_', path)
    if name not in sys.modules:
        spec = spec_from_file_location(name, osp.join(REPO, path))
        module = module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def import_beside_tools(path: str) -> types.ModuleType:
    """The helper module ``REPO/path`` of a ``tools/`` folder (e.g.
    ``'tools/model_converters/msn_checkpoints.py'``), imported by the name
    its tools import it by, so that the tests and the tools share one module.

    Args:
        path: The helper's path relative to the repository root.
    """
    folder, name = osp.split(osp.join(REPO, path))
    if folder not in sys.path:
        sys.path.append(folder)  # as the tools do when they are imported
    return importlib.import_module(osp.splitext(name)[0])
