"""The README's commands and .ci/run stay in sync and point at real files;
the README stays a landing page whose links lead somewhere."""
import os.path as osp
import re

from tests._configs import REPO
from tests._docs import doc_python_snippet


def _read(*parts):
    with open(osp.join(REPO, *parts)) as f:
        return f.read()


def _readme_commands():
    return re.findall(r'```bash\n(.*?)\n```', _read('README.md'), re.S)


def test_ci_runs_the_readme_test_command():
    ci_lines = [line for line in _read('.ci', 'run').splitlines()
                if line and not line.startswith('#')]
    test_cmd = ci_lines[-1]
    assert 'pytest' in test_cmd
    assert test_cmd in _readme_commands()


def test_ci_tests_a_copy_with_nothing_beside_it(tmp_path):
    """.ci/run copies the checkout (tracked and untracked files, not the
    ignored ones, not a tracked file deleted from disk) into a fresh folder
    with no shared folder beside it, and runs the README's test command
    there: its copying lines, run on a small git checkout made here (the
    CI copy itself has no .git), copy exactly those files."""
    import os
    import shutil
    import subprocess
    src = tmp_path / 'checkout'
    for rel, text in {'.gitignore': 'ignored/\n.venv/\n', 'a.py': 'a',
                      'sub/b.txt': 'b', 'gone.py': 'g', 'new.py': 'n',
                      'ignored/x.py': 'x', '.venv/y.py': 'y'}.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    git = ['git', '-C', str(src)]
    subprocess.run(git + ['init', '-q'], check=True)
    subprocess.run(git + ['add', '.gitignore', 'a.py', 'sub/b.txt',
                          'gone.py'], check=True)
    (src / 'gone.py').unlink()  # tracked, deleted: not copied
    lines = _read('.ci', 'run').splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('copy='))
    end = next(i for i, l in enumerate(lines) if l.startswith('cd "$copy"'))
    script = '\n'.join(['set -euo pipefail', f'src={src}'] +
                       lines[start:end] + ['echo "$copy"'])
    out = subprocess.run(['bash', '-c', script], capture_output=True,
                         text=True, check=True, cwd=str(tmp_path))
    copy = out.stdout.strip().splitlines()[-1]
    copied = sorted(
        osp.relpath(osp.join(root, name), copy)
        for root, _, names in os.walk(copy) for name in names)
    assert copied == ['.gitignore', 'a.py', 'new.py', 'sub/b.txt']
    assert not osp.exists(osp.join(osp.dirname(copy), 'shared'))
    shutil.rmtree(osp.dirname(copy))


def test_nothing_reads_the_folder_beside_the_checkout():
    """No package module, tool, config, test or CI step names the shared
    folder beside our checkouts (a user's clone has nothing beside it)."""
    import glob
    sibling = '..' + '/shared'
    needles = (sibling, "'..', " + "'shared'", 'shared' + '/paper')
    hits = []
    for folder in ('pmsn_mm', 'tools', 'configs', 'tests', '.ci'):
        for path in glob.glob(osp.join(REPO, folder, '**', '*'),
                              recursive=True):
            if not (osp.isfile(path) and path.endswith(
                    ('.py', '.sh', '.yaml', '.yml', 'run'))):
                continue
            with open(path, encoding='utf-8', errors='replace') as f:
                for number, line in enumerate(f, 1):
                    if any(needle in line for needle in needles):
                        hits.append(f'{osp.relpath(path, REPO)}:{number}')
    assert hits == []


def test_readme_main_job_uses_an_existing_config():
    main = _readme_commands()[0]
    assert main.startswith('python3 -m venv .venv')
    config = re.search(r'tools/train.py (\S+)', main).group(1)
    assert osp.isfile(osp.join(REPO, config)), config


def test_readme_is_a_landing_page_whose_links_resolve():
    """At most ~200 lines, and every relative link names an existing file
    (the detail lives in docs/, see docs/index.md)."""
    text = _read('README.md')
    assert len(text.splitlines()) <= 200
    links = re.findall(r'\]\(([^)#\s]+)(?:#[^)]*)?\)', text)
    local = [link for link in links if '://' not in link]
    assert 'docs/get_started.md' in local and 'docs/own_data.md' in local
    missing = [link for link in local if not osp.exists(osp.join(REPO, link))]
    assert not missing, missing
    assert '## Your own images' in text


def test_the_mmpretrain_config_snippet_trains_on_real_files(tmp_path,
                                                            monkeypatch):
    """The "any mmpretrain config" snippet of docs/get_started.md
    (mmpretrain's SimCLR recipe + pmsn_mm) trains 2 iterations on sample
    ImageNet files: its collate function and the colour jitter it opts in
    to (hue 0.2, ModuloHueColorJitter) work; mmpretrain's own SimCLR and
    LARS stay mmpretrain's."""
    import importlib.util

    from mmengine.config import Config

    from pmsn_mm.datasets.sample_data import make_sample_data
    from tests._config_runs import shrink
    make_sample_data(str(tmp_path / 'data'), ['imagenet'])
    monkeypatch.chdir(tmp_path)
    snippet = doc_python_snippet(
        'docs/get_started.md',
        '## Using pmsn_mm parts from any mmpretrain config')
    assert "mmpretrain::simclr" in snippet
    (tmp_path / 'readme_snippet.py').write_text(snippet + '\n')
    cfg = shrink(Config.fromfile(str(tmp_path / 'readme_snippet.py')),
                 str(tmp_path / 'work'))
    cfg.dump(str(tmp_path / 'shrunk.py'))
    spec = importlib.util.spec_from_file_location(
        'tool_train_readme', osp.join(REPO, 'tools', 'train.py'))
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    runner = train.main([str(tmp_path / 'shrunk.py')])
    assert runner.iter == 2
    from mmpretrain.engine.optimizers import LARS
    from mmpretrain.models import SimCLR
    assert type(runner.model) is SimCLR
    assert type(runner.optim_wrapper.optimizer) is LARS


def test_license_and_citation_agree_with_the_package():
    """LICENSE is the Apache-2.0 text setup.py declares; CITATION.cff names
    the same license and version and cites the paper (its nine authors)."""
    import yaml

    import pmsn_mm
    license_text = _read('LICENSE')
    assert 'Apache License' in license_text
    assert 'Version 2.0, January 2004' in license_text
    assert "license='Apache-2.0'" in _read('setup.py')
    cff = yaml.safe_load(_read('CITATION.cff'))
    assert cff['cff-version'] == '1.2.0'
    assert cff['license'] == 'Apache-2.0'
    assert cff['version'] == pmsn_mm.__version__
    paper = cff['preferred-citation']
    assert paper['title'].lower() == ('the hidden uniform cluster prior in '
                                      'self-supervised learning')
    assert paper['year'] == 2023 and len(paper['authors']) == 9


def test_the_layout_names_existing_folders():
    """The one Layout section (docs/get_started.md) names paths that exist
    (``a/{b,c}/`` expands to ``a/b`` and ``a/c``), and every subpackage of
    pmsn_mm is in it."""
    import glob
    text = _read('docs', 'get_started.md')
    block = re.search(r'## Layout\n\n```text\n(.*?)\n```', text,
                      re.S).group(1)
    named = set()
    for token in block.split():
        match = re.fullmatch(r'([\w./]*/)\{([\w.,/]+)\}([\w.]*)/?', token)
        if match:
            prefix, options, suffix = match.groups()
            named |= {prefix + o + suffix for o in options.split(',')}
        elif re.fullmatch(r'[\w.]+/[\w./]*', token):
            named.add(token.rstrip('/'))
    assert len(named) > 25
    missing = sorted(p for p in named if not osp.exists(osp.join(REPO, p)))
    assert missing == []
    packages = {osp.relpath(osp.dirname(p), REPO) for p in glob.glob(
        osp.join(REPO, 'pmsn_mm', '*', '__init__.py'))}
    assert sorted(p for p in packages if p not in named and not any(
        n.startswith(p + '/') for n in named)) == []


def test_where_one_change_goes_names_existing_paths():
    """Every path the "Where one change goes" table of docs/get_started.md
    names exists."""
    text = _read('docs', 'get_started.md')
    table = re.search(r'## Where one change goes\n(.*?)\n\n', text,
                      re.S).group(1)
    paths = [p for p in re.findall(r'`([^`]+)`', table)
             if '/' in p and ' ' not in p and '<' not in p]
    assert len(paths) >= 12
    missing = [p for p in paths if not osp.exists(osp.join(REPO, p))]
    assert missing == []
    for row in ('a prior', 'a view augmentation', 'a recipe row',
                'a probe dataset'):
        assert f'| {row} |' in table
