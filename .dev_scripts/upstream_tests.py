"""Run upstream's own unit tests for what pmsn_mm touches, once plain and once
with ``import pmsn_mm`` first, and list every test that passes plain and
fails with pmsn_mm (an extension must change nothing it does not own).

Takes the git repositories of mmpretrain, mmengine and mmcv (a clone, or a
bare mirror), exports each one's ``tests/`` at the tag of the *installed*
version (``v{version}``) into a temporary folder and runs the selected test
files there with pytest, in this environment::

    git clone https://github.com/open-mmlab/mmpretrain ../mmpretrain  # etc.
    python .dev_scripts/upstream_tests.py --mmpretrain ../mmpretrain \
        --mmengine ../mmengine --mmcv ../mmcv

Each test file runs in a process of its own (a crash hides no other file),
with mmengine's default scope set to ``mmpretrain`` (``--scope``): the
scope in which a config that mixes pmsn_mm with upstream parts builds, so
that a name pmsn_mm registered in mmpretrain's registries would shadow
upstream's there.
It prints, per repository, the passed / failed / skipped tests and crashed
files of both runs and the tests that pass plain and fail (or crash) with
pmsn_mm, and exits 1 if there is any. A test that fails both ways is
upstream's (no network here, a numpy-2 bug, an optional package missing,
...) and is only counted. Install the repositories' light test
requirements first (``pip install parameterized lmdb tifffile dadaptation
lion-pytorch``); CI does not run this (it needs the repositories); see
docs/openmmlab.md.
"""
import argparse
import os
import os.path as osp
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from importlib import metadata
from typing import Dict, List, Tuple

#: Test files (at the installed tag) per repository: what pmsn_mm's names
#: and import could touch — transforms, optimizers and their constructors,
#: self-supervised models, data pre-processors, file I/O and checkpoints,
#: registries, hooks, the apis / model index.
SELECTED = {
    'mmpretrain': [
        'tests/test_datasets/test_transforms',
        'tests/test_engine/test_optimizers',
        'tests/test_models/test_selfsup',
        'tests/test_models/test_utils/test_data_preprocessor.py',
        'tests/test_apis/test_model.py',
    ],
    'mmengine': [
        'tests/test_optim/test_optimizer',
        'tests/test_fileio',
        'tests/test_registry',
        'tests/test_runner/test_checkpoint.py',
        'tests/test_hooks/test_checkpoint_hook.py',
        'tests/test_hooks/test_ema_hook.py',
        'tests/test_config',
    ],
    'mmcv': [
        'tests/test_transforms',
        'tests/test_image',
    ],
}
#: The installed distribution of each repository.
DISTRIBUTIONS = {'mmpretrain': ('mmpretrain', ),
                 'mmengine': ('mmengine', ),
                 'mmcv': ('mmcv', 'mmcv-lite')}

Outcome = Dict[str, str]


def installed_tag(repo: str) -> str:
    """``v<version>`` of the installed distribution of ``repo``."""
    for dist in DISTRIBUTIONS[repo]:
        try:
            return f'v{metadata.version(dist)}'
        except metadata.PackageNotFoundError:
            continue
    raise SystemExit(f'{repo} is not installed in this environment.')


def export_tests(git_dir: str, tag: str, into: str) -> None:
    """``git archive`` of ``tests/`` at ``tag`` unpacked into ``into``."""
    git = ['git', f'--git-dir={_git_dir(git_dir)}']
    if subprocess.run(git + ['rev-parse', '--verify', '-q', tag],
                      capture_output=True).returncode:
        raise SystemExit(f'{git_dir} has no tag {tag} (the installed '
                         'version); fetch its tags.')
    archive = subprocess.run(git + ['archive', tag, 'tests'],
                             capture_output=True, check=True).stdout
    subprocess.run(['tar', '-x', '-C', into], input=archive, check=True)


def _git_dir(path: str) -> str:
    dot_git = osp.join(path, '.git')
    return dot_git if osp.exists(dot_git) else path


def test_files(root: str, targets: List[str]) -> List[str]:
    """The ``test_*.py`` files of ``targets`` (files or folders) under
    ``root``, relative to it."""
    files = []
    for target in targets:
        path = osp.join(root, target)
        if osp.isfile(path):
            files.append(target)
        elif osp.isdir(path):
            for folder, _, names in sorted(os.walk(path)):
                files.extend(
                    osp.relpath(osp.join(folder, n), root)
                    for n in sorted(names)
                    if n.startswith('test_') and n.endswith('.py'))
    return files


#: A pytest plugin that sets mmengine's default scope before the tests run
#: (the scope a config with ``default_scope='mmpretrain'`` builds in, where
#: pmsn_mm's names live).
SCOPE_PLUGIN = """
import os

def pytest_configure(config):
    import mmpretrain.registry  # noqa: F401  (its child registries)
    from mmengine.registry import DefaultScope
    DefaultScope.get_instance('upstream-tests',
                              scope_name=os.environ['UPSTREAM_TESTS_SCOPE'])
"""


def run_pytest(root: str, files: List[str], with_pmsn: bool,
               scope: str = '') -> Outcome:
    """pytest on each file under ``root`` (one process per file, so that a
    crash of one — an interpreter error, a missing optional package — hides
    no other), in mmengine's default ``scope`` if one is given;
    ``{test id: outcome}``, a file whose run ended without a report as
    ``{file: 'crashed'}``."""
    outcome: Outcome = {}
    env = dict(os.environ)
    plugins: List[str] = []
    if scope:
        with open(osp.join(root, '_upstream_scope.py'), 'w') as f:
            f.write(SCOPE_PLUGIN)
        env['UPSTREAM_TESTS_SCOPE'] = scope
        env['PYTHONPATH'] = os.pathsep.join(
            [root] + [p for p in [env.get('PYTHONPATH')] if p])
        plugins += ['-p', '_upstream_scope']
    if with_pmsn:
        plugins += ['-p', 'pmsn_mm']  # imported before the test module
    for index, file in enumerate(files):
        report = osp.join(root, f'report-{int(with_pmsn)}-{index}.xml')
        cmd = [sys.executable, '-m', 'pytest', *plugins, file, '-q', '-p',
               'no:cacheprovider', '-p', 'no:xdist', '-o', 'addopts=',
               f'--junitxml={report}', '--rootdir', root]
        subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        found = read_junit(report)
        outcome.update(found if found else {file: 'crashed'})
    return outcome


def read_junit(path: str) -> Outcome:
    """``{classname::name: 'passed' | 'failed' | 'skipped'}`` of a JUnit XML
    report."""
    out: Outcome = {}
    if not osp.exists(path):
        return out
    for case in ET.parse(path).getroot().iter('testcase'):
        key = f'{case.get("classname")}::{case.get("name")}'
        tags = {child.tag for child in case}
        if tags & {'failure', 'error'}:
            out[key] = 'failed'
        elif 'skipped' in tags:
            out[key] = 'skipped'
        else:
            out[key] = 'passed'
    return out


def compare(plain: Outcome, with_pmsn: Outcome) -> List[str]:
    """Tests that pass plain and do not pass with pmsn_mm, and tests (or
    files) that fail or crash only with pmsn_mm."""
    return sorted(k for k, v in with_pmsn.items() if v in (
        'failed', 'crashed') and plain.get(k, 'passed') == 'passed') + sorted(
            k for k, v in plain.items()
            if v == 'passed' and k not in with_pmsn)


def counts(outcome: Outcome) -> Tuple[int, int, int, int]:
    """(passed, failed, skipped, crashed files)."""
    values = list(outcome.values())
    return tuple(values.count(k)
                 for k in ('passed', 'failed', 'skipped', 'crashed'))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    for repo in SELECTED:
        parser.add_argument(f'--{repo}', metavar='GIT_DIR',
                            help=f'a clone or bare mirror of {repo}')
    parser.add_argument(
        '--scope', default='mmpretrain',
        help="mmengine's default scope while the tests run, in both runs "
        "(default: 'mmpretrain', where a config with default_scope="
        "'mmpretrain' builds and pmsn_mm registers its names; '' for the "
        "tests' own)")
    args = parser.parse_args(argv)
    if not any(getattr(args, repo) for repo in SELECTED):
        parser.error('give at least one of --' + ', --'.join(SELECTED))
    regressions = 0
    for repo, targets in SELECTED.items():
        git_dir = getattr(args, repo)
        if git_dir is None:
            continue
        tag = installed_tag(repo)
        with tempfile.TemporaryDirectory() as tmp:
            export_tests(git_dir, tag, tmp)
            files = test_files(tmp, targets)
            plain = run_pytest(tmp, files, False, args.scope)
            ours = run_pytest(tmp, files, True, args.scope)
        lost = compare(plain, ours)
        regressions += len(lost)
        scope = args.scope or "the tests' own"
        print(f'{repo} {tag}, {len(files)} test files, default scope '
              f'{scope}: plain '
              f'{counts(plain)} / with pmsn_mm {counts(ours)} (passed, '
              'failed, skipped, crashed files); passes plain and fails '
              f'with pmsn_mm: {len(lost)}')
        for key in lost:
            print(f'  {key}: {ours.get(key, "not run")}')
    return 1 if regressions else 0


if __name__ == '__main__':
    os.environ.setdefault('PYTHONHASHSEED', '0')
    sys.exit(main())
