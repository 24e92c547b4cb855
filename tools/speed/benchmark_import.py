"""Time ``import pmsn_mm`` (what every config's ``custom_imports`` runs).

Runs the import in ``--repeats`` fresh Python processes and prints the
median wall time of the import itself, the same for ``import
mmpretrain.models, mmpretrain.datasets`` (for reference: most of the time
is torch and mmpretrain) and which heavy optional packages the import
pulled in (none of matplotlib, scikit-learn, scipy should be)::

    python tools/speed/benchmark_import.py --repeats 5
"""
import argparse
import json
import statistics
import subprocess
import sys
from typing import Dict, List, Optional

#: Packages a plain ``import pmsn_mm`` must not load.
HEAVY = ('matplotlib', 'sklearn', 'scipy', 'skimage', 'pandas')

SNIPPET = """
import json, sys, time, warnings
warnings.simplefilter('ignore')
start = time.perf_counter()
import {module}
seconds = time.perf_counter() - start
loaded = sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))
print(json.dumps(dict(seconds=seconds, heavy=loaded)))
"""


def time_import(module: str, repeats: int) -> Dict[str, object]:
    """Median seconds of ``import module`` over fresh processes.

    Args:
        module: Import statement body, e.g. ``'pmsn_mm'``.
        repeats: Number of processes.

    Returns:
        ``median_s``, all ``runs_s`` and the ``heavy`` packages loaded.
    """
    runs, heavy = [], set()
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, '-c',
             SNIPPET.format(module=module, heavy=HEAVY)],
            capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        runs.append(result['seconds'])
        heavy.update(result['heavy'])
    return dict(median_s=statistics.median(runs), runs_s=runs,
                heavy=sorted(heavy))


def main(argv: Optional[List[str]] = None) -> Dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=5)
    args = parser.parse_args(argv)
    floor = time_import('mmpretrain.models, mmpretrain.datasets',
                        args.repeats)
    ours = time_import('pmsn_mm', args.repeats)
    for name, res in (('mmpretrain.models + datasets (reference)', floor),
                      ('pmsn_mm', ours)):
        runs = ', '.join(f'{t:.2f}' for t in res['runs_s'])
        print(f'import {name}: median {res["median_s"]:.2f} s over '
              f'{args.repeats} processes ({runs}); heavy packages loaded: '
              f'{res["heavy"] or "none"}')
    return dict(floor=floor, pmsn_mm=ours)


if __name__ == '__main__':
    main()
