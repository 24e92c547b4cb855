"""Dump every shipped config as the dict mmengine resolves it to, and compare
two dumps: what a refactoring changed in the configs' behaviour.

    python .dev_scripts/resolved_configs.py dump /tmp/before   # on main
    # ... change things ...
    python .dev_scripts/resolved_configs.py dump /tmp/after
    python .dev_scripts/resolved_configs.py compare /tmp/before /tmp/after \
        --rename LARS=SyncFreeLARS --ignore-key _scope_

``dump`` writes one ``<config path>.json`` per runnable config under
``configs/`` (``Config.fromfile(path).to_dict()``, tuples as lists).
``compare`` prints every difference per config (key path, before, after)
and exits 1 if any is left after the allowed ones: ``--rename OLD=NEW``
(a ``type`` renamed), ``--ignore-key KEY`` (a key whose presence or value
is not compared anywhere, e.g. ``_scope_``, which inheriting from
``mmpretrain::`` adds to the dicts it brings) and ``--added KEY`` (a key
that may appear where it was missing, e.g. ``pin_memory``).
"""
import argparse
import glob
import json
import os
import os.path as osp
import sys
from typing import Any, Dict, Iterator, Set

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
CONFIGS = osp.join(REPO, 'configs')


def runnable_configs():
    """Every config under ``configs/`` but the ``_base_`` fragments."""
    return sorted(p for p in glob.glob(osp.join(CONFIGS, '**', '*.py'),
                                       recursive=True) if '_base_' not in p)


def dump(out: str) -> int:
    from mmengine.config import Config
    paths = runnable_configs()
    for path in paths:
        data = Config.fromfile(path).to_dict()
        target = osp.join(out, osp.relpath(path, CONFIGS) + '.json')
        os.makedirs(osp.dirname(target), exist_ok=True)
        with open(target, 'w') as f:
            json.dump(data, f, indent=1, sort_keys=True, default=repr)
    print(f'{len(paths)} configs written to {out}')
    return 0


def _normalise(node: Any, renames: Dict[str, str], ignored: Set[str]) -> Any:
    if isinstance(node, dict):
        return {
            k: (renames.get(v, v) if k == 'type' and isinstance(v, str) else
                _normalise(v, renames, ignored))
            for k, v in node.items() if k not in ignored
        }
    if isinstance(node, list):
        return [_normalise(v, renames, ignored) for v in node]
    return node


def differences(before: Any, after: Any, added: Set[str],
                path: str = '') -> Iterator[str]:
    """Every difference as ``'key.path: before -> after'``."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            where = f'{path}.{key}' if path else str(key)
            if key not in before:
                if key not in added:
                    yield f'{where}: added {after[key]!r}'
            elif key not in after:
                yield f'{where}: removed'
            else:
                yield from differences(before[key], after[key], added, where)
    elif (isinstance(before, list) and isinstance(after, list)
          and len(before) == len(after)):
        for i, (a, b) in enumerate(zip(before, after)):
            yield from differences(a, b, added, f'{path}[{i}]')
    elif before != after:
        yield f'{path}: {before!r} -> {after!r}'


def compare(before: str, after: str, renames: Dict[str, str],
            ignored: Set[str], added: Set[str]) -> int:
    files = sorted(glob.glob(osp.join(before, '**', '*.json'),
                             recursive=True))
    changed = 0
    for file in files:
        rel = osp.relpath(file, before)
        other = osp.join(after, rel)
        if not osp.exists(other):
            print(f'{rel}: missing after')
            changed += 1
            continue
        with open(file) as f, open(other) as g:
            a = _normalise(json.load(f), renames, ignored)
            b = _normalise(json.load(g), {}, ignored)
        lines = list(differences(a, b, added))
        if lines:
            changed += 1
            print(rel)
            for line in lines:
                print(f'  {line[:400]}')
    new = {osp.relpath(p, after) for p in glob.glob(
        osp.join(after, '**', '*.json'), recursive=True)} - {
            osp.relpath(p, before) for p in files}
    for rel in sorted(new):
        print(f'{rel}: new config')
    print(f'{len(files)} configs compared, {changed} differ')
    return 1 if changed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    dump_parser = sub.add_parser('dump', help='write the resolved configs')
    dump_parser.add_argument('out', help='folder to write into')
    cmp = sub.add_parser('compare', help='compare two dumps')
    cmp.add_argument('before')
    cmp.add_argument('after')
    cmp.add_argument('--rename', action='append', default=[],
                     metavar='OLD=NEW', help='an allowed type rename')
    cmp.add_argument('--ignore-key', action='append', default=[],
                     metavar='KEY', help='a key not compared anywhere')
    cmp.add_argument('--added', action='append', default=[], metavar='KEY',
                     help='a key that may appear where it was missing')
    args = parser.parse_args(argv)
    if args.command == 'dump':
        sys.path.insert(0, REPO)
        import pmsn_mm  # noqa: F401  (the configs' custom_imports)
        return dump(args.out)
    renames = dict(r.split('=', 1) for r in args.rename)
    return compare(args.before, args.after, renames, set(args.ignore_key),
                   set(args.added))


if __name__ == '__main__':
    sys.exit(main())
