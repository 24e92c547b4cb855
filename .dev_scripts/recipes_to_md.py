"""Write docs/recipes.md from the recipe tables in configs/recipes/.

Usage::

    python .dev_scripts/recipes_to_md.py          # (re)write docs/recipes.md
    python .dev_scripts/recipes_to_md.py --check  # exit 1 if it is stale

Each table becomes a section: the configs that train it, every quantity
with its value and source (repository lines as links at the pinned commit),
the listed deviations with their reasons, and notes.
"""
import argparse
import glob
import os.path as osp
import re
import sys
from typing import Dict, List

import yaml

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests._recipes import load_recipe_table  # noqa: E402
from tests._recipes.paper_quotes import NOT_TABLES  # noqa: E402

RECIPES = osp.join(ROOT, 'configs', 'recipes')
OUT = osp.join(ROOT, 'docs', 'recipes.md')
#: Tables in the order of the paper.
ORDER = ['toy', 'inat18_pmsn', 'in1k_pmsn', 'msn_class_stratified',
         'simclr_class_stratified', 'vicreg_class_stratified',
         'mae_class_stratified', 'data2vec_class_stratified', 'evaluation',
         'pswav']


def _repos() -> Dict[str, dict]:
    with open(osp.join(RECIPES, 'sources.yaml')) as f:
        return yaml.safe_load(f)['repositories']


def link_source(source: str, repos: Dict[str, dict]) -> str:
    """``ref:path:L<a>[-L<b>]`` -> a Markdown link at the pinned commit."""
    match = re.match(r'^([a-z0-9_]+):([^:\s]+):L(\d+)(?:-L(\d+))?(.*)$',
                     source, re.S)
    if not match or match.group(1) not in repos:
        return _cell(source)
    ref, path, first, last, rest = match.groups()
    repo = repos[ref]
    anchor = f'L{first}' + (f'-L{last}' if last else '')
    url = (f'https://github.com/{repo["repo"]}/blob/{repo["commit"]}/{path}'
           f'#{anchor}')
    return f'[{ref}:{path}:{anchor}]({url}){_cell(rest)}'


def _cell(text) -> str:
    return str(text).replace('|', '\\|').replace('\n', ' ')


def _value(value) -> str:
    if value is None:
        return '—'
    return f'`{value}`'


def _table(rows: List[List[str]], header: List[str]) -> List[str]:
    lines = ['| ' + ' | '.join(header) + ' |',
             '| ' + ' | '.join('---' for _ in header) + ' |']
    lines += ['| ' + ' | '.join(r) + ' |' for r in rows]
    return lines


def section(name: str, repos: Dict[str, dict]) -> List[str]:
    """The Markdown of one table."""
    data = load_recipe_table(osp.join(RECIPES, f'{name}.yaml'))
    out = [f'## {data["title"]}', '',
           f'Paper: {data["paper"]}. Table: `configs/recipes/{name}.yaml`.',
           '', 'Configs:', '']
    for config, own in data['configs'].items():
        own = own or {}
        extra = [f'{k} = {_value(e["value"])}' for k, e in
                 {**(own.get('values') or {}),
                  **(own.get('deviations') or {})}.items()]
        out.append(f'- `{config}`' + (f' ({"; ".join(extra)})'
                                      if extra else ''))
    out += ['']
    absent = {k.split('.')[1] for k, e in data['values'].items()
              if k.startswith('views.') and k.endswith('.num_views')
              and e['value'] is None}
    rows = [[f'`{k}`', _value(e['value']), link_source(e['source'], repos)]
            for k, e in data['values'].items()
            if not (k.startswith('views.') and k.split('.')[1] in absent
                    and not k.endswith('.num_views'))]
    out += _table(rows, ['quantity', 'value', 'source']) + ['']
    deviations = dict(data['deviations'])
    for config, own in data['configs'].items():
        for key, entry in ((own or {}).get('deviations') or {}).items():
            deviations[f'{key} ({osp.basename(config)})'] = entry
    if deviations:
        out += ['Deviations:', '']
        rows = []
        for key, entry in deviations.items():
            recipe = data['values'].get(key.split(' ')[0], {}).get('value')
            rows.append([f'`{key}`', _value(recipe), _value(entry['value']),
                         _cell(entry['reason'])])
        out += _table(rows, ['quantity', 'recipe', 'ours', 'reason']) + ['']
    for note in data['notes']:
        out += [f'Note: {note}', '']
    for config, own in data['configs'].items():
        values = (own or {}).get('values') or {}
        if values:
            out += [f'Per-config values of `{osp.basename(config)}`:', '']
            rows = [[f'`{k}`', _value(e['value']),
                     link_source(e['source'], repos)]
                    for k, e in values.items()]
            out += _table(rows, ['quantity', 'value', 'source']) + ['']
    return out


def render() -> str:
    """The whole docs/recipes.md."""
    repos = _repos()
    names = [osp.splitext(osp.basename(p))[0]
             for p in glob.glob(osp.join(RECIPES, '*.yaml'))]
    names = [n for n in names if not n.startswith('_')
             and f'{n}.yaml' not in NOT_TABLES]
    names.sort(key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER),
                              n))
    lines = [
        '# The paper\'s recipes', '',
        '<!-- generated by .dev_scripts/recipes_to_md.py from '
        'configs/recipes/*.yaml; do not edit -->', '',
        'Every experiment of the paper (and PSwAV): what the appendix and the '
        'official code state, each value with its source (paper quotes, or '
        'repository lines at the commits of `configs/recipes/sources.yaml`), '
        'the configs that train it, and every deliberate deviation with its '
        'reason. `tests/test_configs/test_recipes.py` resolves each config as '
        'the runner builds it and compares every quantity. Keys: '
        '`configs/recipes/README.md`.', '',
        'Sources:', '']
    for ref, repo in repos.items():
        lines.append(f'- `{ref}`: [{repo["repo"]}](https://github.com/'
                     f'{repo["repo"]}/tree/{repo["commit"]}) at '
                     f'`{repo["commit"][:12]}`')
    lines += ['', 'Contents:', '']
    lines += [f'- [{n}](#{n.replace("_", "-")})' for n in names]
    lines += ['']
    for name in names:
        lines += [f'<a id="{name.replace("_", "-")}"></a>', '']
        lines += section(name, repos)
    return '\n'.join(lines).rstrip('\n') + '\n'


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true',
                        help='fail if docs/recipes.md is not up to date')
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = open(OUT).read() if osp.isfile(OUT) else ''
        if current != text:
            print('docs/recipes.md is stale: run python '
                  '.dev_scripts/recipes_to_md.py')
            return 1
        print('docs/recipes.md is up to date')
        return 0
    with open(OUT, 'w') as f:
        f.write(text)
    print(f'wrote {osp.relpath(OUT, ROOT)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
