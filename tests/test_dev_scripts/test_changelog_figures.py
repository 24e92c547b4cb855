""".dev_scripts/changelog_figures.py: CHANGELOG.md's cheap figures (counts
over files, names, constants and the configs that few resolutions answer)
recount to what CHANGELOG.md says; a wrong or vanished figure is caught;
the views' op counter works on a tiny config. The figures that resolve
every config (~20 s) or count the iNat18 views run with the script."""
import os.path as osp

import pytest

from tests._configs import REPO
from tests._profiling import rule_failure
from tests._tools import load_tool

SCRIPT = '.dev_scripts/changelog_figures.py'
#: The CPU toy job's config: two 20 px grey views, brightness + contrast.
CPU_TOY = ('configs/pmsn/'
           'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
CPUTHREADS_CLAIM = ("the 14 configs built on mmpretrain's default runtime "
                    'had no `CPUThreadsHook`')


@pytest.fixture(scope='module')
def script():
    return load_tool(SCRIPT)


@pytest.fixture(scope='module')
def ctx(script):
    """One context for the module: each config resolved once."""
    return script.Context()


@pytest.fixture(scope='module')
def changelog():
    with open(osp.join(REPO, 'CHANGELOG.md'), encoding='utf-8') as f:
        return f.read()


def test_the_cheap_figures_match_the_changelog(script, changelog, ctx):
    """Every figure recounted without resolving all configs or counting
    ops (the configs on mmpretrain's runtime, the 12 low-shot configs, the
    exit statuses, the root-registry names, ...) is what CHANGELOG.md
    says."""
    cheap = [f for f in script.FIGURES if f.recount and not f.needs]
    assert len(cheap) >= 12
    rows = script.table(changelog, cheap, kinds=('', ), ctx=ctx)
    differ = [row for row in rows if row.differs]
    assert not differ, script.format_rows(differ)
    by_claim = {row.claim: row.recounted for row in rows}
    assert by_claim["the [14] configs built on mmpretrain's default runtime "
                    'had no `CPUThreadsHook`'].startswith(
                        '14 (14 of them with CPUThreadsHook now')


def test_a_wrong_figure_differs(script, ctx):
    """The count the CHANGELOG once had (27) is caught; the figure is
    compared as the claim writes it."""
    figure = next(f for f in script.FIGURES
                  if f.recount is script.on_mmpretrain_runtime)
    wrong, right = (script.table(text, [figure], ctx=ctx)[0] for text in (
        CPUTHREADS_CLAIM.replace('14', '27'), CPUTHREADS_CLAIM))
    assert wrong.differs and wrong.recounted.startswith('14 ')
    assert not right.differs
    assert right.where == 'CHANGELOG.md:1 ()'


def test_check_fails_on_a_vanished_phrase(script, tmp_path, capsys):
    """A phrase no longer in CHANGELOG.md is a difference (the list must
    follow the entry): --check exits 1; without --check, 0."""
    path = tmp_path / 'CHANGELOG.md'
    path.write_text('# Changelog\n\n## Unreleased\n')
    assert script.main(['--check', '--changelog', str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith('claim | recounted | where in CHANGELOG\n')
    assert 'phrase not found' in out
    assert script.main(['--changelog', str(path)]) == 0


def test_figures_not_recounted_say_why(script, changelog):
    rows = script.table(changelog, [
        f for f in script.FIGURES if f.recount is None or f.needs in (
            'ops', 'history')
    ], kinds=())
    assert rows and not any(row.differs for row in rows)
    assert all(row.recounted.startswith('not recounted (') for row in rows)
    assert any('--history' in row.recounted for row in rows)
    assert any('measurement' in row.recounted for row in rows)


def test_the_view_op_counter_on_a_tiny_config(script):
    """measure_views finds the op counter and the step's batch where this
    checkout has them: a fixed op count at two batch sizes, no host sync,
    a colour chain inside the views."""
    two = script.measure_views(REPO, CPU_TOY, batch=2)
    four = script.measure_views(REPO, CPU_TOY, batch=4)
    assert two['views'] == four['views'] > 0
    assert two['syncs'] == 0, rule_failure(f'the views: {two}')
    assert 0 < two['colour'] < two['views']
    assert two['num_views'] == 2
