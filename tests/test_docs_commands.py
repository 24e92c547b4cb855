"""Every documented command runs as printed, on the sample data.

Which commands: every fenced ```` ```bash ````, ```` ```sh ```` or untagged
code block of ``README.md``, ``docs/*.md`` (the documentation pages) and
``configs/**/README.md`` that names a tool of this repository
(``tools/...``) or runs a ``mim`` command on pmsn_mm. Left out: the set-up
blocks that start with ``python3 -m venv`` (``tests/test_readme.py`` checks
them; the main job's training command is also printed, and run here, in
``configs/pmsn/README.md``).
Usage synopses are tagged ```` ```text ```` in the docs, not ``bash``.

How: each document is followed top to bottom in a fresh tree laid out like
the repository (``tools`` and ``configs`` linked, ``data/`` = the sample
data of :func:`pmsn_mm.datasets.sample_data.make_sample_data`). Each block
runs in ``bash -euo pipefail`` whose ``python`` and ``bash`` are shell
functions that only record their argv, after bash has expanded variables,
joined ``\\`` continuations and dropped ``# comments``; ``PATH`` leads
nowhere, and bash's ``command_not_found_handle`` records any other command
too (``mim``, ``mkdir``, ...), and ``-u`` fails a block that uses a variable
it does not set. Every recorded invocation is then dispatched, in order, in
the tree; one that cannot be dispatched fails the test with the command, the
document and the line, so a newly documented tool or command cannot be
skipped silently:

- ``python tools/X.py ARGS``: ``main(ARGS)`` of the tool, in this process
  (train, test, the two CPU studies, the cached linear probe); the model
  converter runs as printed, in a fresh interpreter (this process has
  imported pmsn_mm already, which once hid a checkpoint that the converter
  could not read on its own).
- ``bash tools/dist_train.sh CONFIG N ARGS`` / ``bash tools/dist_test.sh
  CONFIG CKPT N ARGS``: ``tools/train.py CONFIG ARGS`` / ``tools/test.py
  CONFIG CKPT ARGS`` in one process. The N-process launch itself is
  covered by tests/test_tools/test_dist_train.py, test_dist_resume.py and
  the other distributed tests.
- ``mim train pmsn_mm CONFIG ARGS`` / ``mim test pmsn_mm CONFIG --checkpoint
  CKPT ARGS`` / ``mim run pmsn_mm TOOL ARGS``: ``tools/train.py CONFIG ARGS``
  / ``tools/test.py CONFIG CKPT ARGS`` / ``tools/**/TOOL.py ARGS``, a
  config given by its file name found under ``configs/`` (as mim finds it
  in the package), mim's own options (:data:`MIM_DROPPED`: ``--gpus``,
  ``--launcher``, ...) left out (one process). mim's launch of the
  installed package's tools is tests/test_tools/test_mim.py's business.
- ``mim search pmsn_mm ARGS``: mim's own ``search`` command, in this
  process, reading the repository's ``model-index.yml`` (where the wheel
  has ``pmsn_mm/.mim/model-index.yml``); it must exit 0 and list models.

Substitutions, all explicit:

- Environment variables a command sees (``IMAGE_FOLDER=... python ...``, or
  ``export``) are recorded with it and set while it runs (configs read
  them when they are parsed, mmengine's ``{{$VAR:default}}``), except the
  launchers' own (:data:`LAUNCHER_ENV`: ``PORT``, ``NNODES``, ...), which
  configure the N-process launch that the one-process run replaces.
- ``path/to/NAME`` is the docs' placeholder for the reader's own files: a
  folder of images in class sub-folders, here the sample ImageNet training
  folder (``data/imagenet/train``, linked as ``path/to/NAME`` in the tree).

- A config named by ``tools/train.py``, ``tools/test.py``,
  ``tools/linear_probe_cached.py`` or a ``dist_*.sh`` script is replaced by
  its CPU-sized version, :func:`tests._config_runs.shrink` (ViT width 32 /
  ResNet width 8 at the config's depth, batches of 4 or 8, 2 iterations or
  one epoch of 2 batches, small in-memory toy sets and kNN banks), written
  under the same file name elsewhere (so ``work_dirs/<config name>`` is the
  same); pipelines, views, samplers, algorithms, heads, losses, priors,
  hooks and the frozen encoders' ``init_cfg`` stay the config's. The CPU toy
  jobs are shrunk too (their full 15 epochs take minutes).
- The two CPU studies (``prior_toy_study.py``,
  ``class_stratified_cpu_study.py``) run on their own configs with the
  quick-check flag that the docs print next to them (:data:`QUICK`, ``add
  --quick``); the test checks that each document that runs them says so.
  An explicit ``--max-iters N`` / ``--eval-interval N`` (a record of a long
  run) is left out, so that the quick check's iterations apply.
  ``class_stratified_cpu_study.py`` starts each training as a subprocess
  ``python tools/train.py ...``; here that command line runs in this
  process.
- A checkpoint of a finished run, ``work_dirs/<run>/epoch_300.pth`` (any
  ``epoch_N`` / ``iter_N``), is that run's last checkpoint in the tree; when
  the document has not trained ``<run>`` itself (it uses the checkpoint of a
  pretraining another document prints), ``tools/train.py
  configs/.../<run>.py`` runs first.
- An invocation identical to one already run (same tool and arguments, in
  this document or an earlier one) is not run again: its output files are
  linked into the tree.

Each dispatched command's result is checked: a training reached its last
iteration, wrote its checkpoint and, where it validates, logged finite
metrics; a test returned its metrics; the converter wrote its file (the
printed timm lines build and load the model); a study wrote its table for
every prior / method; the cached probe wrote its checkpoint and metrics.
"""
import contextlib
import glob
import math
import os
import os.path as osp
import re
import shlex
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Sequence, Tuple

import pytest
import torch
from mmengine.config import Config

from pmsn_mm.datasets.sample_data import make_sample_data
from tests._config_runs import shrink
from tests._configs import REPO
from tests._tools import load_tool

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

#: The documents whose commands run, README first, then the documentation
#: pages (their trainings feed the config READMEs through the reuse of
#: identical invocations).
DOCS = ['README.md'] + sorted(
    osp.relpath(p, REPO) for p in glob.glob(osp.join(REPO, 'docs', '*.md'))
) + sorted(
    osp.relpath(p, REPO)
    for p in glob.glob(osp.join(REPO, 'configs', '**', 'README.md'),
                       recursive=True))
SHELL_LANGS = ('bash', 'sh', '')
#: A fenced block, possibly indented (inside a list item).
FENCE = re.compile(
    r'^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*\n(?P<body>.*?)\n'
    r'(?P=indent)```[ \t]*$', re.M | re.S)
#: Quick-check arguments the docs print next to the long CPU studies.
QUICK = {
    'tools/analysis_tools/prior_toy_study.py': ['--quick'],
    'tools/analysis_tools/class_stratified_cpu_study.py': ['--quick'],
}
#: Options of a long run left out with the quick check (name, takes a value).
QUICK_DROPPED = {'--max-iters': True, '--eval-interval': True}
#: mim's own options, left out when a ``mim`` command runs in one process.
MIM_DROPPED = {option: True for option in (
    '--gpus', '--gpus-per-node', '--cpus-per-task', '--launcher', '--port',
    '--partition', '--srun-args')}
#: Variables of tools/dist_*.sh and tools/slurm_train.sh (the launch only).
LAUNCHER_ENV = ('PORT', 'NNODES', 'NODE_RANK', 'MASTER_ADDR', 'GPUS',
                'GPUS_PER_NODE', 'CPUS_PER_TASK', 'SRUN_ARGS')
#: A ``mim`` command on pmsn_mm in a block.
MIM_COMMAND = re.compile(r'\bmim (?:train|test|run|search) pmsn_mm\b')
#: Configs a command names, replaced by their CPU-sized version.
CONFIG_TOOLS = ('tools/train.py', 'tools/test.py',
                'tools/linear_probe_cached.py')
#: ``work_dirs/<run>/epoch_N.pth``: a checkpoint of a finished run.
RUN_CHECKPOINT = re.compile(
    r'^(?:\./)?work_dirs/(?P<run>[^/]+)/(?:epoch|iter)_\d+\.pth$')
PRELUDE = r'''
set -euo pipefail
_record() {  # the argv, after the variables the command sees exported
  local v
  for v in $(compgen -e); do
    case $v in PATH|HOME|PWD|OLDPWD|SHLVL|DOCS_COMMANDS_LOG|_) ;;
      *) set -- "$v=${!v}" "$@" ;; esac
  done
  printf '%s\0' "$#" "$@" >> "$DOCS_COMMANDS_LOG"
}
python() { _record python "$@"; }
bash() { _record bash "$@"; }
command_not_found_handle() { _record "$@"; }
'''


@dataclass
class Block:
    """A fenced shell block of a document."""
    doc: str
    line: int  # of the opening fence
    text: str
    after: str = ''  # the document's next 400 characters


def doc_blocks(doc: str) -> List[Block]:
    """The shell blocks of ``doc`` that name a tool of this repository.

    Args:
        doc: Path relative to the repository.

    Returns:
        The blocks, dedented, in document order.
    """
    with open(osp.join(REPO, doc)) as f:
        text = f.read()
    blocks = []
    for match in FENCE.finditer(text):
        if match.group('lang') not in SHELL_LANGS:
            continue
        indent = len(match.group('indent'))
        body = '\n'.join(line[indent:]
                         for line in match.group('body').split('\n'))
        if ('tools/' not in body and not MIM_COMMAND.search(body)) or \
                body.lstrip().startswith('python3 -m venv'):
            continue
        blocks.append(Block(doc, text.count('\n', 0, match.start()) + 1,
                            body, text[match.end():match.end() + 400]))
    return blocks


def record(block: Block, cwd: str) -> List[List[str]]:
    """Run ``block`` in bash with ``python`` / ``bash`` recording their argv.

    Args:
        block: The block.
        cwd: Where it runs.

    Returns:
        One argv per invocation, e.g. ``['bash', 'tools/dist_train.sh',
        CONFIG, '8']``.
    """
    handle, log = tempfile.mkstemp(prefix='docs_commands_')
    os.close(handle)
    out = subprocess.run(
        ['/bin/bash', '--noprofile', '--norc', '-c', PRELUDE + block.text],
        cwd=cwd, capture_output=True, text=True,
        env=dict(PATH='/nonexistent', HOME=cwd, DOCS_COMMANDS_LOG=log))
    assert out.returncode == 0, (
        f'{block.doc}:{block.line}: the block fails in bash '
        f'(exit {out.returncode}):\n{out.stderr}\n{block.text}')
    with open(log) as f:
        tokens = f.read().split('\0')[:-1]
    os.remove(log)
    commands = []
    while tokens:
        n = int(tokens.pop(0))
        commands.append(tokens[:n])
        del tokens[:n]
    assert commands, f'{block.doc}:{block.line}: no command recorded'
    return commands


#: A leading ``NAME=value`` of a recorded invocation: its environment.
ENV_ASSIGNMENT = re.compile(r'^(?P<name>[A-Za-z_]\w*)=(?P<value>.*)$', re.S)
#: The docs' placeholder for the reader's own files.
PLACEHOLDER = re.compile(r'^path/to/[\w.-]+$')


def split_env(argv: Sequence[str]) -> Tuple[Dict[str, str], List[str]]:
    """``['A=1', 'python', ...]`` -> ``({'A': '1'}, ['python', ...])``."""
    env, argv = {}, list(argv)
    while argv and ENV_ASSIGNMENT.match(argv[0]):
        match = ENV_ASSIGNMENT.match(argv.pop(0))
        env[match.group('name')] = match.group('value')
    return env, argv


def placeholder(scratch: 'Scratch', tree: str, arg: str) -> str:
    """``path/to/NAME`` -> the same path, linked in ``tree`` to the sample
    ImageNet training folder (class sub-folders of images)."""
    if PLACEHOLDER.match(arg) and not osp.lexists(osp.join(tree, arg)):
        os.makedirs(osp.join(tree, osp.dirname(arg)), exist_ok=True)
        os.symlink(osp.join(scratch.data, 'imagenet', 'train'),
                   osp.join(tree, arg))
    return arg


@contextlib.contextmanager
def environment(env: Dict[str, str]) -> Iterator[None]:
    """Set environment variables for a block of code, then restore them."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def dispatch_target(argv: Sequence[str]) -> Tuple[str, List[str]]:
    """The tool and arguments a recorded invocation runs.

    Args:
        argv: A recorded invocation.

    Returns:
        ``(tool path, its arguments)``.
    """
    argv = list(argv)
    if len(argv) >= 2 and argv[0] == 'python' and re.fullmatch(
            r'(\./)?tools/[\w/]+\.py', argv[1]):
        return osp.normpath(argv[1]), argv[2:]
    if len(argv) >= 4 and argv[0] == 'bash' and osp.normpath(
            argv[1]) == 'tools/dist_train.sh' and argv[3].isdigit():
        return 'tools/train.py', [argv[2]] + argv[4:]
    if len(argv) >= 5 and argv[0] == 'bash' and osp.normpath(
            argv[1]) == 'tools/dist_test.sh' and argv[4].isdigit():
        return 'tools/test.py', argv[2:4] + argv[5:]
    if len(argv) >= 4 and argv[:3] == ['mim', 'train', 'pmsn_mm']:
        args = _drop_options(argv[3:], MIM_DROPPED)
        return 'tools/train.py', [_config_by_name(args[0])] + args[1:]
    if len(argv) >= 4 and argv[:3] == ['mim', 'test', 'pmsn_mm']:
        args = _drop_options(argv[3:], MIM_DROPPED)
        args[0] = _config_by_name(args[0])
        if '--checkpoint' in args[:-1]:
            i = args.index('--checkpoint')
            return 'tools/test.py', [args[0], args[i + 1]] + [
                a for j, a in enumerate(args[1:], 1) if j not in (i, i + 1)]
    if len(argv) >= 3 and argv[:3] == ['mim', 'search', 'pmsn_mm']:
        return 'mim search', argv[3:]
    if len(argv) >= 4 and argv[:3] == ['mim', 'run', 'pmsn_mm']:
        tools = glob.glob(osp.join(REPO, 'tools', '**', argv[3] + '.py'),
                          recursive=True)
        if len(tools) == 1:
            return osp.relpath(tools[0], REPO), argv[4:]
    raise AssertionError(
        f'cannot dispatch {shlex.join(argv)}: this test runs python '
        'tools/..., bash tools/dist_{train,test}.sh and mim '
        '{train,test,run,search} pmsn_mm only; print other commands in '
        'a ```text block, or add a dispatcher with a check of its result to '
        'tests/test_docs_commands.py')


def _config_by_name(config: str) -> str:
    """A config file name without a folder -> its path under ``configs/``
    (mim looks it up in the package's configs by name)."""
    if '/' in config or not config.endswith('.py'):
        return config
    found = glob.glob(osp.join(REPO, 'configs', '**', config),
                      recursive=True)
    assert len(found) == 1, f'{config}: {len(found)} configs of that name'
    return osp.relpath(found[0], REPO)


def _drop_options(args: Sequence[str],
                  options: Dict[str, bool]) -> List[str]:
    """``args`` without the given options (``--opt VALUE`` or
    ``--opt=VALUE`` where the option takes a value)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split('=', 1)[0]
        if name in options:
            skip = options[name] and '=' not in arg
            continue
        out.append(arg)
    return out


# ------------------------------------------------------------ the scratch
class Scratch:
    """Sample data, CPU-sized configs, one tree per document and the runs
    done so far (for identical invocations)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.data = osp.join(root, 'data')
        #: (tool, args) -> (tree, output files relative to it)
        self.done: Dict[Tuple[str, Tuple[str, ...]],
                        Tuple[str, List[str]]] = {}
        #: one line per dispatched command, for the log
        self.log: List[str] = []

    def tree(self, doc: str) -> str:
        """A repository-like working directory for ``doc``, fresh at the
        first call.

        Args:
            doc: The document.
        """
        path = osp.join(self.root, 'trees', re.sub(r'\W', '_', doc))
        if not osp.isdir(path):
            os.makedirs(path)
            for name in ('tools', 'configs'):
                os.symlink(osp.join(REPO, name), osp.join(path, name))
            os.symlink(self.data, osp.join(path, 'data'))
        return path

    def shrunk_config(self, config: str,
                      env: Tuple[Tuple[str, str], ...] = ()) -> str:
        """The CPU-sized copy of a config, written once, under the same file
        name; the frozen encoders' ``init_cfg`` checkpoints stay the
        config's.

        Args:
            config: Path relative to the repository.
            env: The environment variables it is parsed with (set by the
                caller); one copy per environment.

        Returns:
            The copy's path.
        """
        tag = re.sub(r'\W', '_', '_'.join(f'{k}_{v}' for k, v in env))
        out = osp.join(self.root, 'shrunk', tag or 'plain', config)
        if not osp.isfile(out):
            cfg = Config.fromfile(osp.join(REPO, config))
            inits = {part: (cfg.model.get(part) or {}).get('init_cfg')
                     for part in ('backbone', 'neck')}
            originals = {part: init.checkpoint
                         for part, init in inits.items()
                         if isinstance(init, dict)
                         and init.get('type') == 'Pretrained'}
            shrink(cfg, 'unused')
            for part, checkpoint in originals.items():
                cfg.model[part].init_cfg.checkpoint = checkpoint
            cfg.pop('work_dir')  # each tool's own default work dir
            os.makedirs(osp.dirname(out), exist_ok=True)
            cfg.dump(out)
        return out


def _files(tree: str) -> Dict[str, int]:
    """Files under ``tree`` (not the linked tools, configs, data)."""
    found = {}
    for top, dirs, files in os.walk(tree):
        if top == tree:
            dirs[:] = [d for d in dirs if d not in ('tools', 'configs',
                                                    'data')]
        for name in files:
            path = osp.join(top, name)
            found[osp.relpath(path, tree)] = os.lstat(path).st_mtime_ns
    return found


# ------------------------------------------------------------ the tools
def _finite_metrics(metrics: Dict[str, object], where: str) -> None:
    assert metrics, f'{where}: no metrics'
    for key, value in metrics.items():
        if isinstance(value, (int, float)):
            assert math.isfinite(value), (where, key, value)
            if key.endswith(('top1', 'top5')):
                assert 0 <= value <= 100, (where, key, value)


def run_train(args: List[str], where: str) -> str:
    """``tools/train.py ARGS``: the run reached its last iteration, wrote
    the checkpoint ``last_checkpoint`` names and, where it validates,
    logged finite metrics.

    Args:
        args: The tool's arguments.
        where: The command and its place in the docs, for messages.

    Returns:
        What it did, for the log.
    """
    runner = load_tool('tools/train.py').main(args)
    assert runner.iter == runner.max_iters > 0, where
    with open(osp.join(runner.work_dir, 'last_checkpoint')) as f:
        last = f.read().strip()
    assert osp.isfile(last), where
    result = f'{runner.iter} iterations, {osp.relpath(last)}'
    if runner.cfg.get('val_cfg') and runner.cfg.get('val_dataloader'):
        metrics = {k[4:]: v.current()
                   for k, v in runner.message_hub.log_scalars.items()
                   if k.startswith('val/')}
        _finite_metrics(metrics, where)
        result += f', val {sorted(metrics)}'
    return result


def run_test(args: List[str], where: str) -> str:
    """``tools/test.py ARGS``: finite metrics, top-k within [0, 100].

    Args:
        args: The tool's arguments.
        where: The command and its place in the docs, for messages.

    Returns:
        What it did, for the log.
    """
    metrics = load_tool('tools/test.py').main(args)
    _finite_metrics(metrics, where)
    return f'metrics {sorted(metrics)}'


def run_converter(args: List[str], where: str) -> str:
    """The model converter in a fresh interpreter, as printed (in this
    process pmsn_mm is imported already, which once hid a checkpoint read
    before its allow-list was set up): the file is written and holds
    ``backbone.*`` weights, or with ``--timm`` the printed lines build the
    timm ViT and load it.

    Args:
        args: The tool's arguments.
        where: The command and its place in the docs, for messages.

    Returns:
        What it did, for the log.
    """
    tool = load_tool('tools/model_converters/pmsn_to_backbone.py')
    out = subprocess.run(
        [sys.executable, osp.join(REPO, 'tools', 'model_converters',
                                  'pmsn_to_backbone.py'), *args],
        capture_output=True, text=True)
    assert out.returncode == 0, f'{where}:\n{out.stderr[-3000:]}'
    print(out.stdout, end='')
    dst = tool.parse_args(args).dst
    assert osp.isfile(dst), where
    if '--timm' in args:
        # the printed lines build the timm ViT and load the file
        scope: dict = {}
        exec(out.stdout.split('load it with:\n', 1)[1], scope)  # noqa: S102
        return f'wrote {dst}; printed timm lines load it'
    state = torch.load(dst, weights_only=True)['state_dict']
    assert state and all(k.startswith('backbone.') for k in state), where
    return f'wrote {dst} ({len(state)} backbone tensors)'


def run_prior_toy_study(args: List[str], where: str) -> str:
    """``prior_toy_study.py ARGS``: ``results.json`` and ``table.md``, and
    a run with a kNN accuracy for every prior, KL direction and seed.

    Args:
        args: The tool's arguments.
        where: The command and its place in the docs, for messages.

    Returns:
        What it did, for the log.
    """
    tool = load_tool('tools/analysis_tools/prior_toy_study.py')
    parsed = tool.parse_args(args)
    summary = tool.main(args)
    for name in ('results.json', 'table.md'):
        assert osp.isfile(osp.join(parsed.work_dir, name)), where
    for direction in parsed.kl_directions:
        for prior in parsed.priors:
            runs = summary['runs'][tool.run_name(prior, direction)]
            assert len(runs) == len(parsed.seeds), where
            for run in runs:
                assert 0 <= run['knn_digit_backbone'] <= 100, where
    return f'{parsed.work_dir}/table.md: {sorted(summary["runs"])}'


def run_class_stratified_study(args: List[str], where: str) -> str:
    """``class_stratified_cpu_study.py ARGS``: its ``python tools/train.py
    ...`` subprocesses run here (each checked as :func:`run_train`), then
    ``summary.json`` and a row for every method.

    Args:
        args: The tool's arguments.
        where: The command and its place in the docs, for messages.

    Returns:
        What it did, for the log.
    """
    tool = load_tool('tools/analysis_tools/class_stratified_cpu_study.py')
    trained = []

    def train_command(cmd: List[str], check: bool = False):
        """The study's ``python tools/train.py ...`` in this process."""
        assert cmd[0] == sys.executable and cmd[1] == osp.join(
            tool.REPO, 'tools', 'train.py'), cmd
        trained.append(run_train(list(cmd[2:]), f'{where} ({cmd[2]})'))
        return subprocess.CompletedProcess(cmd, 0)

    real = tool.subprocess
    tool.subprocess = types.SimpleNamespace(run=train_command)
    try:
        rows = tool.main(args)
    finally:
        tool.subprocess = real
    parsed = tool.parse_args(args)
    study_dir = osp.join(parsed.work_dir, 'quick') if parsed.quick \
        else parsed.work_dir
    assert osp.isfile(osp.join(study_dir, 'summary.json')), where
    assert [r['method'] for r in rows] == sorted(
        parsed.methods or tool.METHODS), where
    return f'{len(trained)} trainings, summary of {len(rows)} methods'


def run_linear_probe_cached(args: List[str], where: str) -> str:
    """``linear_probe_cached.py ARGS``: finite metrics and the checkpoint.

    Args:
        args: The tool's arguments.
        where: The command and its place in the docs, for messages.

    Returns:
        What it did, for the log.
    """
    out = load_tool('tools/linear_probe_cached.py').main(args)
    _finite_metrics(out['metrics'], where)
    assert osp.isfile(out['checkpoint']), where
    return f'{osp.relpath(out["checkpoint"])}, metrics ' \
        f'{sorted(out["metrics"])}'


def run_mim_search(args: List[str], where: str) -> str:
    """``mim search pmsn_mm ARGS`` through mim's own command, on the
    repository's model index: exit 0 and at least one model listed.

    Args:
        args: The arguments after ``pmsn_mm``.
        where: The command and its place in the docs, for messages.

    Returns:
        What it did, for the log.
    """
    from click.testing import CliRunner
    from mim.commands import search

    real = search.get_installed_path
    search.get_installed_path = lambda package: REPO
    try:
        out = CliRunner().invoke(search.cli, ['pmsn_mm'] + list(args))
    finally:
        search.get_installed_path = real
    assert out.exit_code == 0, f'{where}:\n{out.output}\n{out.exception!r}'
    models = re.findall(r'^config id: (\S+)', out.output, re.M)
    assert models, f'{where}: no model listed:\n{out.output}'
    print(out.output)
    return f'{len(models)} models listed'


#: tool -> function(args, where) that runs it and checks its result.
TOOLS: Dict[str, Callable[[List[str], str], str]] = {
    'tools/train.py': run_train,
    'tools/test.py': run_test,
    'tools/model_converters/pmsn_to_backbone.py': run_converter,
    'tools/analysis_tools/prior_toy_study.py': run_prior_toy_study,
    'tools/analysis_tools/class_stratified_cpu_study.py':
    run_class_stratified_study,
    'tools/linear_probe_cached.py': run_linear_probe_cached,
    'mim search': run_mim_search,
}


# ------------------------------------------------------------ dispatch
def _map_values(args: Sequence[str],
                fn: Callable[[str], str]) -> List[str]:
    """``fn`` on every argument and on the value of every ``key=value``."""
    out = []
    for arg in args:
        key, eq, value = arg.partition('=')
        out.append(key + eq + fn(value) if eq and not arg.startswith('-')
                   else fn(arg))
    return out


def resolve_checkpoint(scratch: Scratch, tree: str, doc: str, line: int,
                       arg: str) -> str:
    """A finished run's checkpoint -> that run's last checkpoint in the tree
    (training the run first when the document has not).

    Args:
        scratch: The shared scratch state.
        tree: The document's working directory.
        doc: The document.
        line: The line of the block that names the checkpoint.
        arg: A command-line argument (or the value of a ``key=value``).

    Returns:
        ``arg``, or the checkpoint it stands for.
    """
    match = RUN_CHECKPOINT.match(arg)
    if not match or osp.exists(osp.join(tree, arg)):
        return arg
    run_dir = osp.join(tree, 'work_dirs', match.group('run'))
    if not osp.isdir(run_dir):
        configs = glob.glob(osp.join(REPO, 'configs', '**',
                                     match.group('run') + '.py'),
                            recursive=True)
        assert len(configs) == 1, (
            f'{doc}:{line}: {arg}: no config under configs/ is named '
            f'{match.group("run")}.py, and no earlier command of the '
            'document trained that run (use the work dir of a config, '
            'e.g. work_dirs/<config name>/epoch_N.pth)')
        dispatch(scratch, tree, doc, line,
                 ['python', 'tools/train.py',
                  osp.relpath(configs[0], REPO)], note='(prerequisite) ')
    with open(osp.join(run_dir, 'last_checkpoint')) as f:
        return f.read().strip()


def dispatch(scratch: Scratch, tree: str, doc: str, line: int,
             argv: List[str], note: str = '') -> None:
    """Run one recorded invocation in ``tree`` and check its result.

    Args:
        scratch: The shared scratch state.
        tree: The document's working directory.
        doc: The document (for messages).
        line: The block's line in it.
        argv: The recorded invocation.
        note: Shown in the log.
    """
    env, argv = split_env(argv)
    env = {k: v for k, v in env.items() if k not in LAUNCHER_ENV}
    try:
        tool, args = dispatch_target(argv)
    except AssertionError as error:
        raise AssertionError(f'{doc}:{line}: {error}') from None
    assert tool in TOOLS, (
        f'{doc}:{line}: cannot dispatch {shlex.join(argv)}: {tool} has no '
        'runner in tests/test_docs_commands.py TOOLS (add one that checks '
        'its result)')
    where = f'{doc}:{line}: ' + shlex.join(
        [f'{k}={v}' for k, v in env.items()] + argv)
    key = (tool, tuple(args), tuple(sorted(env.items())))
    os.chdir(tree)
    if key in scratch.done:
        # identical invocation: its outputs, linked into this tree
        source, outputs = scratch.done[key]
        if source != tree:
            for rel in outputs:
                dst = osp.join(tree, rel)
                if not osp.lexists(dst):
                    os.makedirs(osp.dirname(dst) or tree, exist_ok=True)
                    os.symlink(osp.realpath(osp.join(source, rel)), dst)
        scratch.log.append(f'{where} {note}-> same as before, outputs '
                           'reused')
        return
    env = {k: placeholder(scratch, tree, v) for k, v in env.items()}
    run_args = _map_values(
        args, lambda a: resolve_checkpoint(
            scratch, tree, doc, line, placeholder(scratch, tree, a)))
    os.chdir(tree)
    if tool in CONFIG_TOOLS and run_args[0].startswith('configs/'):
        with environment(env):
            run_args[0] = scratch.shrunk_config(
                osp.normpath(run_args[0]), tuple(sorted(env.items())))
    if tool in QUICK:
        run_args = _drop_options(run_args, QUICK_DROPPED) + QUICK[tool]
    before = _files(tree)
    start = time.time()
    with environment(env):
        result = TOOLS[tool](run_args, where)
    after = _files(tree)
    scratch.done[key] = (tree, sorted(
        p for p, m in after.items() if before.get(p) != m))
    scratch.log.append(f'{where} {note}-> {tool} '
                       f'[{time.time() - start:.1f} s]: {result}')


@pytest.fixture(scope='module')
def scratch(tmp_path_factory):
    """Sample data and the shared state of the module's runs."""
    root = str(tmp_path_factory.mktemp('docs_commands'))
    state = Scratch(root)
    # the iNat18 copy holds all 8,142 classes only where a class prior
    # needs them (6 s); a few images otherwise
    everything = ' '.join(b.text for d in DOCS for b in doc_blocks(d))
    make_sample_data(state.data,
                     inat18_all_classes='class-prior' in everything)
    cwd = os.getcwd()  # (mmengine's bookkeeping is cut in tests/conftest.py)
    yield state
    os.chdir(cwd)
    print('\n'.join(['', 'documented commands:'] + state.log))


# ------------------------------------------------------------ the tests
def test_blocks_and_commands_are_found(tmp_path):
    """Extraction sees the documents' commands (a parser that finds none
    would pass vacuously)."""
    blocks = {doc: doc_blocks(doc) for doc in DOCS}
    assert {'docs/reproducing.md', 'docs/evaluation.md',
            'docs/choosing_a_prior.md', 'docs/toy_study.md',
            'docs/class_stratified.md', 'docs/toy_prior_study.md',
            'configs/pmsn/README.md', 'configs/pmsn/benchmarks/README.md',
            'configs/class_stratified/README.md'} <= {
                d for d, b in blocks.items() if b}
    commands = [c for d in DOCS for b in blocks[d]
                for c in record(b, str(tmp_path))]
    assert len(commands) >= 40
    for argv in commands:
        tool, _ = dispatch_target(split_env(argv)[1])
        assert tool in TOOLS, argv
    # variables, continuations and comments are bash's business
    priors = blocks['docs/choosing_a_prior.md']
    study = [c for b in priors for c in record(b, str(tmp_path))
             if 'prior_toy_study' in c[1]]
    assert study[-1][-4:] == ['--priors', 'adaptive', '--work-dir',
                              'work_dirs/prior_toy_study_15e_adaptive']
    # so are loops: 3 seeds x 2 invocations
    loop = [c for b in blocks['docs/toy_prior_study.md']
            for c in record(b, str(tmp_path)) if '--max-iters' in c]
    assert [c[c.index('--seeds') + 1] for c in loop] == [
        '0', '0', '1', '1', '2', '2']
    assert not any(b.text.startswith('python3 -m venv')
                   for d in DOCS for b in blocks[d])


def test_undispatchable_commands_are_reported(tmp_path):
    """A command the test cannot run is recorded and named with its
    document and line, never skipped (a missing program would otherwise
    only fail the block with bash's exit 127)."""
    block = Block('docs/example.md', 7, 'mkdir -p data/mine\n'
                  'mim train pmsn_mm configs/pmsn/x.py --gpus 8 '
                  '--launcher pytorch --work-dir w\n'
                  'mim test pmsn_mm configs/pmsn/x.py --checkpoint c.pth '
                  '--gpus 1\n'
                  'python tools/train.py configs/pmsn/x.py  # tools/\n'
                  'IMAGE_FOLDER=path/to/mine python tools/test.py c.py k')
    commands = record(block, str(tmp_path))
    # the variables a command sees are recorded with it, and only there
    assert commands[4] == ['IMAGE_FOLDER=path/to/mine', 'python',
                           'tools/test.py', 'c.py', 'k']
    assert split_env(commands[4]) == (
        {'IMAGE_FOLDER': 'path/to/mine'}, commands[4][1:])
    assert not any('=' in c[0] for c in commands[:4])
    assert commands[0] == ['mkdir', '-p', 'data/mine']
    with pytest.raises(AssertionError,
                       match=r'docs/example.md:7: cannot dispatch mkdir'):
        dispatch(Scratch(str(tmp_path)), str(tmp_path), block.doc,
                 block.line, commands[0])
    assert dispatch_target(commands[1]) == (
        'tools/train.py', ['configs/pmsn/x.py', '--work-dir', 'w'])
    # mim finds a config by its file name
    name = 'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'
    assert dispatch_target(['mim', 'train', 'pmsn_mm', name, '--launcher',
                            'slurm', '--gpus-per-node', '8']) == (
        'tools/train.py', ['configs/pmsn/' + name])
    assert dispatch_target(commands[2]) == (
        'tools/test.py', ['configs/pmsn/x.py', 'c.pth'])
    assert dispatch_target(commands[3])[0] == 'tools/train.py'
    assert _drop_options(['a', '--max-iters', '3900', '--eval-interval=9',
                          '--quick'], QUICK_DROPPED) == ['a', '--quick']


def test_quick_checks_are_documented():
    """The quick-check flags the test adds are the ones the docs print with
    each block that runs a long CPU study, in the block or right after it
    ("a quick check ...: add `--quick`")."""
    checked = 0
    for doc in DOCS:
        for block in doc_blocks(doc):
            for tool, extra in QUICK.items():
                if osp.basename(tool) in block.text:
                    flags = re.escape(' '.join(extra))
                    assert re.search(rf'quick check[^.]*?: add `?{flags}`?',
                                     block.text + block.after, re.I), (
                                         doc, block.line, tool)
                    checked += 1
    assert checked >= 5


@pytest.mark.parametrize('doc', [d for d in DOCS if doc_blocks(d)])
def test_documented_commands_run(doc, scratch, monkeypatch):
    """Each command of ``doc``, in order, in the document's own tree."""
    blocks = doc_blocks(doc)
    tree = scratch.tree(doc)
    monkeypatch.chdir(tree)  # dispatch changes directory; restored after
    for block in blocks:
        for argv in record(block, tree):
            dispatch(scratch, tree, doc, block.line, argv)
