"""Write or check configs/recipes/paper_quotes.yaml from the paper.

The recipe tables quote the paper; the tests check those quotes against
the carried index (``tests._recipes.paper_quotes``), not the paper, which
a user's clone does not have. A maintainer with the paper's LaTeX source
at hand keeps the index true:

    python .dev_scripts/paper_quotes.py PAPER.tex           # write it
    python .dev_scripts/paper_quotes.py PAPER.tex --check   # verify it

``--check`` exits 1 (naming the difference) if a quote is not in the paper
or the file is not what this script would write.
"""
import argparse
import os.path as osp
import sys
from typing import List, Optional

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, REPO)

from tests._recipes import paper_quotes  # noqa: E402


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('paper', help="the paper's LaTeX source")
    parser.add_argument('--repo', default=REPO, help='checkout to work on')
    parser.add_argument('--check', action='store_true',
                        help='verify the file instead of writing it')
    args = parser.parse_args(argv)
    target = osp.join(args.repo, paper_quotes.QUOTES_FILE)
    try:
        recipes = osp.join(args.repo, 'configs', 'recipes')
        text = paper_quotes.dump_quote_index(
            paper_quotes.build_quote_index(args.paper, recipes))
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    if not args.check:
        with open(target, 'w') as f:
            f.write(text)
        print(f'wrote {target}')
        return 0
    old = open(target).read() if osp.isfile(target) else ''
    if old != text:
        print(f'{target} is out of date: run python .dev_scripts/'
              f'paper_quotes.py {args.paper}', file=sys.stderr)
        return 1
    print(f'{target} matches {args.paper}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
