"""Recount the figures that CHANGELOG.md states, from the repository.

    python .dev_scripts/changelog_figures.py            # the table
    python .dev_scripts/changelog_figures.py --check    # exit 1 if one differs
    python .dev_scripts/changelog_figures.py --ops      # + current op counts
    python .dev_scripts/changelog_figures.py --history  # + earlier code's

Every figure is read from CHANGELOG.md itself (a phrase with the figure in
it, so a corrected entry is recounted as written) and printed as
``claim | recounted | where in CHANGELOG``, the figure of the claim in
brackets. Counts over the configs resolve every runnable config under
``configs/`` (``Config.fromfile`` without its ``custom_imports``, ~20 s);
counts over files, names and constants read the files (``ast``, no import).
Op counts import pmsn_mm: ``--ops`` counts the current code's iNat18 MSN
views (``OpCounter`` around the data pre-processor, :func:`measure_views`),
``--history`` the code a claim about earlier code names (``git archive`` of
that commit into a temporary folder, measured there in a subprocess; ~1 min
each). Measurements that cannot be redone cheaply (training runs, timings,
GPU figures) and references to the paper or other projects are listed as
not recounted, with the reason. A phrase no longer found in CHANGELOG.md is
a difference too: the entry changed and this list must follow.
"""
import argparse
import ast
import contextlib
import functools
import glob
import importlib
import json
import os
import os.path as osp
import re
import runpy
import subprocess
import sys
import tempfile
import warnings
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
CHANGELOG = osp.join(REPO, 'CHANGELOG.md')
#: The config whose views the op counts are about ("the iNat18 MSN views").
INAT18 = 'configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py'
#: Commits the 0.1.0 op-count claims are measured at (``--history``): the
#: views before issue 32's batched views (90497c9's parent; 90497c9 itself
#: does not import) and 0.1.0 (the last commit of 2026-11-27).
BEFORE_BATCHED_VIEWS = '2fa871b'
RELEASE_0_1_0 = '12e07d6'
#: Words a claim may use for a figure.
WORDS = {'no': '0', 'one': '1', 'two': '2', 'three': '3', 'four': '4',
         'five': '5', 'eight': '8', 'every': 'every', 'the configs': 'every',
         'the torch operator': '1'}

Recount = Tuple[str, str]  # (the figure as the claim states it, detail)


class Figure(NamedTuple):
    """One figure of CHANGELOG.md.

    Args:
        pattern: A phrase of CHANGELOG.md (a space matches any whitespace)
            whose first group is the figure.
        recount: ``fn(context) -> (figure, detail)``, the figure written as
            the claim writes it (``'every'`` or ``'k of n'`` for a claim
            about every config); None for a figure that is not recounted.
        needs: ``''`` (cheap: files, or a few configs resolved),
            ``'configs'`` (resolves every config),
            ``'ops'`` (``--ops``) or ``'history'`` (``--history``); for a
            figure that is not recounted, the reason.
        compare: False for a figure printed beside a claim it does not test
            (the current code's count beside a claim about earlier code).
    """

    pattern: str
    recount: Optional[Callable[['Context'], 'Recount']]
    needs: str = ''
    compare: bool = True


class Row(NamedTuple):
    """One line of the table."""

    claim: str
    recounted: str
    where: str
    differs: bool


# --- what the recounts read --------------------------------------------


def runnable_configs() -> List[str]:
    """Every config under ``configs/`` but the ``_base_`` fragments,
    relative to the repository."""
    return sorted(
        osp.relpath(p, REPO)
        for p in glob.glob(osp.join(REPO, 'configs', '**', '*.py'),
                           recursive=True) if '_base_' not in p)


@functools.lru_cache(maxsize=None)
def base_chain(path: str) -> Tuple[str, ...]:
    """The ``_base_`` files a config inherits from, transitively:
    repository-relative paths, and ``mmpretrain::...`` names as written
    (not followed).

    Args:
        path: A config, relative to the repository.
    """
    from mmengine.config import Config
    chain = []
    for base in Config._get_base_files(osp.join(REPO, path)):
        if '::' in base:
            chain.append(base)
            continue
        full = osp.normpath(osp.join(osp.dirname(path), base))
        chain += [full, *base_chain(full)]
    return tuple(chain)


def module_constant(path: str, name: str, owner: Optional[str] = None
                    ) -> Any:
    """A literal assigned to ``name`` at module level (or in class
    ``owner``) of a Python file, read without importing it.

    Args:
        path: The file, relative to the repository.
        name: The assigned name.
        owner: The class whose body assigns it (None: the module).
    """
    with open(osp.join(REPO, path), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    body = tree.body
    if owner is not None:
        body = next(node.body for node in body
                    if isinstance(node, ast.ClassDef) and node.name == owner)
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(node.value)
    raise KeyError(f'{path}: no {name} = ...')


def argparse_default(path: str, option: str) -> Any:
    """The ``default=`` of ``add_argument(option, ...)`` in a script."""
    with open(osp.join(REPO, path), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == option):
            for keyword in node.keywords:
                if keyword.arg == 'default':
                    return ast.literal_eval(keyword.value)
    raise KeyError(f'{path}: no {option} default')


def find_file(*patterns: str) -> str:
    """The one repository file matching the globs (modules move between
    ``pmsn_mm/`` and ``tests/``; their names stay).

    Args:
        patterns: Globs relative to the repository.
    """
    found = sorted({
        p
        for pattern in patterns
        for p in glob.glob(osp.join(REPO, pattern), recursive=True)
    })
    if len(found) != 1:
        raise FileNotFoundError(f'{" or ".join(patterns)}: {len(found)} '
                                'files')
    return osp.relpath(found[0], REPO)


def _first_module(names: List[str]) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f'none of {names}')


def measure_views(root: str = REPO, config: str = INAT18,
                  batch: int = 2) -> Dict[str, Any]:
    """The aten ops a config's views dispatch in one training step.

    The config's data pre-processor draws the views of the step
    profiler's batch twice (the first warms up lazy imports and device
    constants); the second is counted by ``OpCounter`` (a
    ``TorchDispatchMode``), once whole and once only inside every pmsn_mm
    function named ``color_jitter`` (the colour chain). Written to run on
    any version of the repository (``--history``), so the modules are
    looked up where each version had them.

    Args:
        root: The repository (its pmsn_mm is the one imported).
        config: The config, relative to ``root``.
        batch: Images per batch.

    Returns:
        ``dict(views=ops, syncs=host syncs, colour=ops of the colour chain,
        num_views=views per image)``.
    """
    warnings.filterwarnings('ignore')
    if root not in sys.path:
        sys.path.insert(0, root)
    from mmengine.config import Config
    from mmengine.registry import init_default_scope
    cfg = Config.fromfile(osp.join(root, config))
    from mmpretrain.registry import MODELS

    import pmsn_mm  # noqa: F401  (the registries)
    counter_cls = _first_module([
        'tests._profiling.op_counter', 'pmsn_mm.engine.op_counter',
        'pmsn_mm.utils.op_counter'
    ]).OpCounter
    try:
        make_batch = _first_module([
            'tests._profiling.step_profiler', 'pmsn_mm.engine.step_profiler'
        ]).make_batch
    except ImportError:  # before issue 33 the step proxy was a tool's
        tool = next(p for p in (osp.join(root, 'tools', d, 'benchmark_step.py')
                                for d in ('speed', 'benchmarks'))
                    if osp.exists(p))
        make_batch = runpy.run_path(tool)['make_batch']
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    model = cfg.get('model') or {}
    preprocessor = MODELS.build(
        dict(model.get('data_preprocessor') or cfg.data_preprocessor))
    data = make_batch(cfg, batch)
    preprocessor(data, True)
    with counter_cls() as counter:
        preprocessor(data, True)
    colour = [0]
    patched = []
    for name, module in list(sys.modules.items()):
        fn = getattr(module, 'color_jitter', None)
        if (name.startswith('pmsn_mm') and callable(fn)
                and getattr(fn, '__module__', '').startswith('pmsn_mm')):

            def counted(*args, _fn=fn, **kwargs):
                with counter_cls() as inner:
                    out = _fn(*args, **kwargs)
                colour[0] += inner.ops
                return out

            patched.append((module, fn))
            setattr(module, 'color_jitter', counted)
    try:
        preprocessor(data, True)
    finally:
        for module, fn in patched:
            setattr(module, 'color_jitter', fn)
    return dict(views=counter.ops, syncs=counter.syncs, colour=colour[0],
                num_views=getattr(preprocessor, 'num_views', None))


def measure_at(commit: str) -> Dict[str, Any]:
    """:func:`measure_views` on the repository as it was at ``commit``
    (``git archive`` into a temporary folder, measured by this script in a
    subprocess that imports that folder's pmsn_mm)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(['git', '-C', REPO, 'archive', commit],
                                 capture_output=True, check=True)
        subprocess.run(['tar', '-x', '-C', tmp], input=archive.stdout,
                       check=True)
        env = dict(os.environ, PYTHONPATH=tmp)
        out = subprocess.run(
            [sys.executable, osp.abspath(__file__), '--measure-views', tmp],
            cwd=tmp, env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


class Context:
    """What the recounts share, computed once when first asked for."""

    def __init__(self) -> None:
        self._resolved: Dict[str, dict] = {}
        self._measured: Dict[str, Dict[str, Any]] = {}
        #: The CHANGELOG phrase being recounted (set by :func:`table`).
        self.match: Optional['re.Match[str]'] = None

    def resolved(self, path: str) -> dict:
        """A config as mmengine resolves it (without its custom_imports)."""
        if path not in self._resolved:
            from mmengine.config import Config
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                self._resolved[path] = Config.fromfile(
                    osp.join(REPO, path),
                    import_custom_modules=False).to_dict()
        return self._resolved[path]

    def measured(self, commit: Optional[str] = None) -> Dict[str, Any]:
        """:func:`measure_views` of the working tree (None) or a commit."""
        key = commit or ''
        if key not in self._measured:
            self._measured[key] = measure_at(commit) if commit else \
                measure_views()
        return self._measured[key]


# --- the recounts ------------------------------------------------------


def _every(paths: List[str], ok: Callable[[str], bool]) -> Recount:
    bad = [p for p in paths if not ok(p)]
    n = len(paths)
    if not bad:
        return 'every', f'{n} of {n}'
    return (f'{n - len(bad)} of {n}',
            'missing in ' + ', '.join(osp.basename(p) for p in bad[:3]) +
            (' ...' if len(bad) > 3 else ''))


def _default_hook(ctx: Context, path: str, hook: str) -> bool:
    hooks = ctx.resolved(path).get('default_hooks') or {}
    return any(
        isinstance(h, dict) and h.get('type') == hook for h in hooks.values())


def every_config_hook(hook: str) -> Callable[[Context], Recount]:
    """Every runnable config has ``hook`` in its resolved default_hooks."""
    def recount(ctx: Context) -> Recount:
        value, detail = _every(runnable_configs(),
                               lambda p: _default_hook(ctx, p, hook))
        return value, f'{hook}: {detail}'
    return recount


def runner_type(ctx: Context) -> Recount:
    return _every(
        runnable_configs(),
        lambda p: ctx.resolved(p).get('runner_type') == 'PMSNRunner')


def preemption_key(ctx: Context) -> Recount:
    return _every(
        runnable_configs(), lambda p: ((ctx.resolved(p).get(
            'default_hooks') or {}).get('preemption') or {}).get('type') ==
        'PreemptionHook')


def on_mmpretrain_runtime(ctx: Context) -> Recount:
    """Configs built on mmpretrain's default runtime: their ``_base_``
    chain reaches an ``mmpretrain::`` config and not
    ``configs/_base_/default_runtime.py``; each must now have a
    ``CPUThreadsHook`` in its resolved default_hooks."""
    own = osp.join('configs', '_base_', 'default_runtime.py')
    paths = [
        p for p in runnable_configs()
        if own not in (chain := base_chain(p)) and any('::' in b
                                                       for b in chain)
    ]
    with_hook = [p for p in paths if _default_hook(ctx, p, 'CPUThreadsHook')]
    return str(len(paths)), (f'{len(with_hook)} of them with CPUThreadsHook '
                             f'now; {len(runnable_configs())} configs')


def pretraining_pins(ctx: Context) -> Recount:
    """The configs outside ``benchmarks/`` folders pin their batches."""
    paths = [p for p in runnable_configs()
             if f'{os.sep}benchmarks{os.sep}' not in p]
    return _every(
        paths, lambda p: (ctx.resolved(p).get('train_dataloader') or {}).get(
            'pin_memory') is True)


def readme_maxprocesses(ctx: Context) -> Recount:
    with open(osp.join(REPO, 'README.md'), encoding='utf-8') as f:
        found = re.findall(r'python -m pytest tests .*-n auto '
                           r'--maxprocesses=(\d+) --dist loadfile', f.read())
    return (found[0] if len(set(found)) == 1 else '/'.join(found) or 'none',
            'README.md')


def setup_cfg_addopts(ctx: Context) -> Recount:
    import configparser
    parser = configparser.ConfigParser()
    parser.read(osp.join(REPO, 'setup.cfg'))
    found = [s for s in ('tool:pytest', 'pytest')
             if parser.has_option(s, 'addopts')]
    return str(len(found)), 'setup.cfg [tool:pytest]'


def generated_configs(ctx: Context) -> Recount:
    """The configs the CHANGELOG's brace pattern (the phrase's second
    group) names, on disk."""
    def expand(text: str) -> List[str]:
        match = re.search(r'\{([^{}]*)\}', text)
        if not match:
            return [text]
        return [x for part in match.group(1).split(',')
                for x in expand(text[:match.start()] + part +
                                text[match.end():])]

    assert ctx.match is not None
    expected = expand(ctx.match.group(2).strip('`'))
    on_disk = {osp.basename(p) for p in runnable_configs()}
    found = [n for n in expected if n in on_disk]
    return str(len(found)), f'of {len(expected)} names'


def crosscheck_classes(ctx: Context) -> Recount:
    return str(argparse_default(
        '.dev_scripts/msn_logistic_solver_crosscheck.py', '--classes')), \
        '--classes default'


def crosscheck_shots(ctx: Context) -> Recount:
    shots = module_constant('.dev_scripts/msn_logistic_solver_crosscheck.py',
                            'SHOTS')
    return ' / '.join(map(str, shots)), 'SHOTS'


def preempted_exit(ctx: Context) -> Recount:
    path = find_file('pmsn_mm/**/preemption_hook.py',
                     'tests/**/preemption_hook.py')
    return str(module_constant(path, 'EXIT_PREEMPTED')), path


def refusal_exit(owner: str) -> Callable[[Context], Recount]:
    def recount(ctx: Context) -> Recount:
        path = find_file('pmsn_mm/**/refusal.py', 'tests/**/refusal.py')
        return str(module_constant(path, 'exit_code', owner)), \
            f'{owner}.exit_code'
    return recount


def converters_atomic(ctx: Context) -> Recount:
    """Every converter that writes a file writes it with
    atomic_torch_save (and none with a bare torch.save)."""
    paths = sorted(
        glob.glob(osp.join(REPO, 'tools', 'model_converters', '*.py')))
    texts = {}
    for path in paths:
        with open(path, encoding='utf-8') as f:
            texts[path] = f.read()
    writers = [p for p, t in texts.items()
               if re.search(r'\b(atomic_torch_save|torch\.save)\(', t)]
    return _every(writers, lambda p: 'atomic_torch_save(' in texts[p] and
                  not re.search(r'(?<!atomic_)torch\.save\(', texts[p]))


def _import_changes(name: str) -> Any:
    return module_constant(
        find_file('pmsn_mm/**/import_changes.py',
                  'tests/**/_import_changes.py'), name)


def root_registry_names(ctx: Context) -> Recount:
    names = [n for v in _import_changes('ROOT_REGISTRY_NAMES').values()
             for n in v]
    with open(osp.join(REPO, 'docs', 'openmmlab.md'), encoding='utf-8') as f:
        docs = f.read()
    named = [n for n in names if f'`{n}`' in docs]
    return str(len(names)), f'{len(named)} named in docs/openmmlab.md'


def torch_operators(ctx: Context) -> Recount:
    return str(len(_import_changes('TORCH_OPERATORS'))), 'TORCH_OPERATORS'


def msn_num_views(ctx: Context) -> Recount:
    """Views per image of the iNat18 MSN config, from its view groups."""
    cfg = ctx.resolved(INAT18)
    pre = (cfg.get('model') or {}).get('data_preprocessor') or cfg.get(
        'data_preprocessor') or {}
    groups = pre.get('views') or [pre]
    return str(sum(g.get('num_views', 0) for g in groups)), osp.basename(
        INAT18)


def ops_at(commit: str, key: str, label: str) -> Callable[[Context], Recount]:
    """A figure of :func:`measure_views` at a commit."""
    return lambda ctx: (str(ctx.measured(commit)[key]), f'at {commit} '
                        f'({label})')


def ops_now(key: str) -> Callable[[Context], Recount]:
    """A figure of :func:`measure_views` of the working tree."""
    return lambda ctx: (str(ctx.measured()[key]), 'the current code')


NOT_RECOUNTED = None
#: CHANGELOG.md's figures. Not recounted: ``needs`` says why.
FIGURES: List[Figure] = [
    # Unreleased, Changed
    Figure(r"(Every) pmsn_mm config sets `runner_type='PMSNRunner'`",
           runner_type, 'configs'),
    Figure(r'`FinalValMetricsHook` and `CPUThreadsHook` are in '
           r'`default_hooks` of (the configs)',
           every_config_hook('FinalValMetricsHook'), 'configs'),
    Figure(r'`FinalValMetricsHook` and `CPUThreadsHook` are in '
           r'`default_hooks` of (the configs)',
           every_config_hook('CPUThreadsHook'), 'configs'),
    Figure(r"the (\d+) configs built on mmpretrain's default runtime had no "
           r'`CPUThreadsHook`', on_mmpretrain_runtime),
    Figure(r'PMSN\'s loss is eq\. \((\d+)\)', NOT_RECOUNTED,
           "the paper's numbering, as eqs. (6)-(8), (2), §4 and §5.1 are; "
           'the citation form: tests/test_style.py'),
    Figure(r'`setup\.cfg` has (no) `addopts`', setup_cfg_addopts),
    Figure(r"the README's test command passes `-n auto --maxprocesses=(\d+) "
           r'--dist loadfile`', readme_maxprocesses),
    # Unreleased, Added
    Figure(r'(\d+) generated configs (`[^`]*`)', generated_configs),
    Figure(r'on a (\d+)-class 1 / 2 / 5-shot problem', crosscheck_classes),
    Figure(r'on a \d+-class (\d+ / \d+ / \d+)-shot problem',
           crosscheck_shots),
    Figure(r'cyanure (1\.2\.2)', NOT_RECOUNTED,
           'the version the cross-check ran against'),
    Figure(r'`PreemptionHook` \(`default_hooks\.preemption`, (every) '
           r'config\)', preemption_key, 'configs'),
    Figure(r'`scontrol requeue` under Slurm \(after SIGUSR1\), exit status '
           r'(\d+)', preempted_exit),
    Figure(r'atomic_torch_save` \(what (every) model converter writes',
           converters_atomic),
    # Unreleased, Fixed
    Figure(r'`tools/torchrun\.py`\), exit status (\d+)',
           refusal_exit('Refusal')),
    Figure(r'already finished says so in one line, exit status (\d+)',
           refusal_exit('NothingToDo')),
    Figure(r'8 idle owned cores of a busy 64-core node gave (\d+) thread',
           NOT_RECOUNTED, "the earlier code's result"),
    Figure(r'8 idle owned cores of a busy 64-core node gave \d+ thread, now '
           r'(\d+)', NOT_RECOUNTED,
           'a scenario: tests/test_engine/test_cpu_threads.py::'
           'test_only_the_owned_cores_load_counts'),
    Figure(r'names the (four) root-registry names', root_registry_names),
    Figure(r'root-registry names and (the torch operator)', torch_operators),
    Figure(r'facebookresearch/msn issue #(\d+)', NOT_RECOUNTED,
           "another project's issue"),
    Figure(r'(Every) pretraining loader pins its batches', pretraining_pins,
           'configs'),
    # 0.1.0
    Figure(r'`prior_toy_study\.py`, (\d+) seeds', NOT_RECOUNTED,
           'measurement: CPU training runs of earlier code'),
    Figure(r'power law (27\.8 ± 1\.8 / 39\.0 ± 3\.2)', NOT_RECOUNTED,
           'measurement: CPU training runs of earlier code'),
    Figure(r'uniform\s+(38\.9 ± 12\.3 / 36\.6 ± 3\.5)', NOT_RECOUNTED,
           'measurement: CPU training runs of earlier code'),
    Figure(r'\((40\.5 ± 21 / 36\.4 ± 7\.4 and 39\.9 ± 22 / 37\.3 ± 4\.6)\)',
           NOT_RECOUNTED, 'measurement: CPU training runs of earlier code'),
    Figure(r'the iNat18 MSN views went from (\d+) to \d+ ops per step',
           ops_at(BEFORE_BATCHED_VIEWS, 'views', 'before the batched views'),
           'history'),
    Figure(r'the iNat18 MSN views went from \d+ to (\d+) ops per step',
           ops_at(RELEASE_0_1_0, 'views', '0.1.0'), 'history'),
    Figure(r'the iNat18 MSN views went from \d+ to (\d+) ops per step',
           ops_now('views'), 'ops', compare=False),
    Figure(r'the colour chain dispatches (\d+) ops',
           ops_at(RELEASE_0_1_0, 'colour', '0.1.0'), 'history'),
    Figure(r'the colour chain dispatches (\d+) ops', ops_now('colour'), 'ops',
           compare=False),
    Figure(r"the colour chain dispatches \d+ ops for MSN's (\d+) views",
           msn_num_views),
    Figure(r"for MSN's \d+ views where kornia's blends took (\d+)",
           ops_at(BEFORE_BATCHED_VIEWS, 'colour', 'before the batched views'),
           'history'),
]
#: What each kind of recount needs to be run.
NEEDS_OPTION = {'ops': '--ops', 'history': '--history'}


# --- the table ---------------------------------------------------------


def _regex(pattern: str) -> 're.Pattern[str]':
    """A figure's phrase as a regular expression: a space matches any run
    of whitespace (CHANGELOG.md wraps its lines)."""
    return re.compile(re.sub(r' ', r'\\s+', pattern))


def _where(text: str, pos: int) -> str:
    """``CHANGELOG.md:line (version / section)`` of a position."""
    line = text.count('\n', 0, pos) + 1
    version, section = '', ''
    for match in re.finditer(r'^(#{2,3}) (.+)$', text[:pos], flags=re.M):
        if match.group(1) == '##':
            version, section = match.group(2), ''
        else:
            section = match.group(2)
    heading = ' / '.join(filter(None, (version, section)))
    return f'CHANGELOG.md:{line} ({heading})'


def _normal(figure: str) -> str:
    figure = ' '.join(figure.split())
    return WORDS.get(figure.lower(), figure)


def table(text: str, figures: List[Figure] = FIGURES,
          kinds: Tuple[str, ...] = ('', 'configs'),
          ctx: Optional[Context] = None) -> List[Row]:
    """Every figure as a row.

    Args:
        text: CHANGELOG.md's text.
        figures: The figures to recount.
        kinds: The ``needs`` recounted; the others are listed with the
            option that recounts them.
        ctx: The shared context (a new one when None).
    """
    ctx = ctx or Context()
    rows = []
    for figure in figures:
        match = _regex(figure.pattern).search(text)
        if match is None:
            rows.append(Row(figure.pattern, 'phrase not found', 'CHANGELOG.md',
                            True))
            continue
        start, end = match.span(1)
        claim = ' '.join((match.string[match.start():start] + '[' +
                          match.group(1) + ']' +
                          match.string[end:match.end()]).split())
        where = _where(text, start)
        if figure.recount is None:
            rows.append(Row(claim, f'not recounted ({figure.needs})', where,
                            False))
            continue
        if figure.needs not in kinds:
            rows.append(Row(claim, 'not recounted (run with '
                            f'{NEEDS_OPTION[figure.needs]})', where, False))
            continue
        ctx.match = match
        try:
            value, detail = figure.recount(ctx)
        except Exception as exc:  # a moved file, a tree that does not import
            rows.append(Row(claim, f'error: {type(exc).__name__}: {exc}',
                            where, True))
            continue
        differs = figure.compare and _normal(value) != _normal(match.group(1))
        if not figure.compare:
            detail += '; not compared: the claim is about earlier code'
        rows.append(Row(claim, f'{value} ({detail})', where, differs))
    return rows


def format_rows(rows: List[Row]) -> str:
    """The table: a header, ``claim | recounted | where`` per row (a row
    that differs marked), and the counts."""
    lines = ['claim | recounted | where in CHANGELOG']
    for row in rows:
        mark = '  <- DIFFERS' if row.differs else ''
        lines.append(f'{row.claim} | {row.recounted} | {row.where}{mark}')
    differ = sum(row.differs for row in rows)
    recounted = sum(not row.recounted.startswith('not recounted')
                    for row in rows)
    lines.append(f'{len(rows)} figures, {recounted} recounted, '
                 f'{differ} differ')
    return '\n'.join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    """Print the table.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` when None).

    Returns:
        The exit status: 1 with ``--check`` if a figure differs, else 0.
    """
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0])
    parser.add_argument('--check', action='store_true',
                        help='exit 1 if a recounted figure differs')
    parser.add_argument('--ops', action='store_true',
                        help="also count the current code's view ops")
    parser.add_argument('--history', action='store_true',
                        help="also count earlier code's ops (git snapshots)")
    parser.add_argument('--changelog', default=CHANGELOG,
                        help='the file whose figures are recounted')
    parser.add_argument('--measure-views', metavar='ROOT',
                        help=argparse.SUPPRESS)  # --history's subprocess
    args = parser.parse_args(argv)
    if args.measure_views:
        with contextlib.redirect_stdout(sys.stderr):
            result = measure_views(osp.abspath(args.measure_views))
        print(json.dumps(result))
        return 0
    kinds = ('', 'configs') + (('ops', ) if args.ops else ()) + (
        ('history', ) if args.history else ())
    with open(args.changelog, encoding='utf-8') as f:
        rows = table(f.read(), kinds=kinds)
    print(format_rows(rows))
    return 1 if args.check and any(row.differs for row in rows) else 0


if __name__ == '__main__':
    sys.exit(main())
