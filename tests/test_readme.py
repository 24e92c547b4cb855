"""The README's commands and .ci/run stay in sync and point at real files."""
import os.path as osp
import re

from tests._configs import REPO


def _read(*parts):
    with open(osp.join(REPO, *parts)) as f:
        return f.read()


def _readme_commands():
    return re.findall(r'```bash\n(.*?)\n```', _read('README.md'), re.S)


def test_ci_runs_the_readme_test_command():
    ci_lines = [l for l in _read('.ci', 'run').splitlines()
                if l and not l.startswith('#')]
    test_cmd = ci_lines[-1]
    assert 'pytest' in test_cmd
    assert test_cmd in _readme_commands()


def test_readme_main_job_uses_an_existing_config():
    main = _readme_commands()[0]
    assert main.startswith('python3 -m venv .venv')
    config = re.search(r'tools/train.py (\S+)', main).group(1)
    assert osp.isfile(osp.join(REPO, config)), config
