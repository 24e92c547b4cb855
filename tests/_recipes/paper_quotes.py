"""The paper sentences the recipe tables quote, carried with the project.

A recipe value whose ``source`` is ``paper: '<sentence>'`` cites the paper
(``configs/recipes/*.yaml``). The tests cannot read the paper (a user's
clone has nothing beside it), so the project carries every quoted sentence
with where it stands in the paper — its line in the LaTeX source and the
headings above it — in ``configs/recipes/paper_quotes.yaml``. The tests
check every quote of every table against that file; the maintainer script
``.dev_scripts/paper_quotes.py PAPER`` writes it from the paper and
``--check`` verifies it (every quote found at the recorded line, nothing
missing or stale) where the paper is at hand.
"""
import hashlib
import os.path as osp
import re
from typing import Dict, List, Optional

#: The carried quote index, relative to a repository root.
QUOTES_FILE = osp.join('configs', 'recipes', 'paper_quotes.yaml')
#: Recipe files that are not experiment tables (no quotes).
NOT_TABLES = ('sources.yaml', 'paper_quotes.yaml')
_HEADING = re.compile(r'\\(section|subsection|subsubsection|paragraph)\*?\{')
_LEVELS = ('section', 'subsection', 'subsubsection', 'paragraph')


def normalize(text: str) -> str:
    """``text`` with every run of whitespace one space, stripped."""
    return ' '.join(text.split())


def quotes_of(source: str) -> List[str]:
    """The paper fragments a recipe ``source`` quotes.

    Args:
        source: A row's source, e.g. ``"paper: 'a ... b' (note)"``: every
            single-quoted span is a quote, ``...`` separating fragments
            that each stand in the paper.

    Returns:
        Whitespace-normalised fragments, in order ([] unless the source
        starts with ``paper:``).
    """
    if not source.startswith('paper:'):
        return []
    return [
        normalize(part) for quote in re.findall(r"'([^']+)'", source)
        for part in quote.split('...') if normalize(part)
    ]


def _sources(entries: Optional[dict]) -> List[str]:
    return [e['source'] for e in (entries or {}).values()
            if isinstance(e, dict) and isinstance(e.get('source'), str)]


def table_quotes(recipes_dir: str) -> Dict[str, List[str]]:
    """Every paper fragment the recipe tables of a folder quote.

    Args:
        recipes_dir: ``configs/recipes``.

    Returns:
        ``{fragment: sorted names of the tables quoting it}``.
    """
    import glob

    import yaml
    used: Dict[str, set] = {}
    for path in sorted(glob.glob(osp.join(recipes_dir, '*.yaml'))):
        name = osp.basename(path)
        if name in NOT_TABLES:
            continue
        with open(path) as f:
            table = yaml.safe_load(f) or {}
        sources = _sources(table.get('values'))
        for own in (table.get('configs') or {}).values():
            sources += _sources((own or {}).get('values'))
        for source in sources:
            for quote in quotes_of(source):
                used.setdefault(quote, set()).add(name)
    return {quote: sorted(names) for quote, names in sorted(used.items())}


def _braced(text: str, start: int) -> str:
    """The text up to the brace that closes the one before ``start``."""
    depth = 1
    for end in range(start, len(text)):
        depth += {'{': 1, '}': -1}.get(text[end], 0)
        if depth == 0:
            return text[start:end]
    return text[start:]


def locate(paper: str, quote: str) -> Optional[dict]:
    """Where a fragment first stands in the LaTeX source of the paper.

    Args:
        paper: The paper's LaTeX source.
        quote: A whitespace-normalised fragment.

    Returns:
        ``dict(line=..., heading=...)``: the 1-based line where the
        fragment starts and the headings above it (``section > subsection >
        ...``), or None if the paper does not contain it.
    """
    words: List[str] = []
    lines: List[int] = []
    for number, text in enumerate(paper.splitlines(), 1):
        for word in text.split():
            words.append(word)
            lines.append(number)
    flat = ' '.join(words)
    start = flat.find(quote)
    if start < 0:
        return None
    line = lines[flat.count(' ', 0, start)] if quote else 1
    heading: Dict[str, str] = {}
    for number, text in enumerate(paper.splitlines()[:line], 1):
        for match in _HEADING.finditer(text):
            level = match.group(1)
            heading[level] = normalize(_braced(text, match.end()))
            for lower in _LEVELS[_LEVELS.index(level) + 1:]:
                heading.pop(lower, None)
    return dict(line=line,
                heading=' > '.join(heading[k] for k in _LEVELS
                                   if k in heading))


def build_quote_index(paper_path: str, recipes_dir: str) -> dict:
    """The quote index of :data:`QUOTES_FILE`, made from the paper.

    Args:
        paper_path: The paper's LaTeX source.
        recipes_dir: ``configs/recipes``.

    Returns:
        ``dict(paper_sha256=..., quotes=[{text, line, heading, tables}])``.

    Raises:
        ValueError: Naming every quoted fragment the paper does not contain.
    """
    with open(paper_path, 'rb') as f:
        raw = f.read()
    paper = raw.decode('utf-8')
    quotes, missing = [], []
    for quote, tables in table_quotes(recipes_dir).items():
        where = locate(paper, quote)
        if where is None:
            missing.append(f'{quote!r} (quoted by {", ".join(tables)})')
            continue
        quotes.append(dict(text=quote, tables=tables, **where))
    if missing:
        raise ValueError(f'{paper_path} does not contain ' +
                         '; '.join(missing))
    return dict(paper_sha256=hashlib.sha256(raw).hexdigest(), quotes=quotes)


def load_quote_index(path: str) -> Dict[str, dict]:
    """The carried quote index as ``{text: {line, heading, tables}}``.

    Args:
        path: :data:`QUOTES_FILE` of a checkout.
    """
    import yaml
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    return {q['text']: q for q in data.get('quotes') or []}


def dump_quote_index(index: dict) -> str:
    """The text of :data:`QUOTES_FILE` for ``index`` (with its
    generated-file header)."""
    import yaml
    header = ('# Generated by .dev_scripts/paper_quotes.py from the paper '
              '-- do not edit.\n# Every sentence the recipe tables quote, '
              'with its line in the paper\'s LaTeX\n# source and the '
              'headings above it; the tests read this file, not the paper.\n')
    return header + yaml.safe_dump(index, sort_keys=False, width=1000,
                                   allow_unicode=True)
