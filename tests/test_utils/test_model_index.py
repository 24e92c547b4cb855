"""The model index (``model-index.yml`` + ``configs/*/metafile.yml``).

Every pretraining config is indexed, every entry builds through
``mmpretrain.get_model``, its metadata agrees with its config, and the
``Results`` numbers equal the doc table they cite.

Pretraining configs: every ``configs/**/*.py`` except ``configs/_base_/``
(fragments) and ``configs/*/benchmarks/`` (kNN, logistic-regression and
linear-probe evaluation configs). ``configs/class_stratified/cpu_study/``
(the CPU class-stratified study) is pretraining and indexed;
``configs/recipes/`` holds YAML tables, no configs.
"""
import glob
import os.path as osp
import re
from typing import Dict, Optional, Tuple

import mmpretrain
import pytest
import torch
import yaml

from pmsn_mm.datasets.sample_data import make_sample_data
from pmsn_mm.utils.model_index import model_index_root, register_model_index
from tests._configs import CONFIGS, REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

PRETRAINING = sorted(
    osp.relpath(p, REPO)
    for p in glob.glob(osp.join(CONFIGS, '**', '*.py'), recursive=True)
    if not p.startswith(osp.join(CONFIGS, '_base_', ''))
    and f'{osp.sep}benchmarks{osp.sep}' not in p)


def _load(path: str) -> dict:
    with open(osp.join(REPO, path)) as f:
        return yaml.safe_load(f)


METAFILES = {path: _load(path)
             for path in _load('model-index.yml')['Import']}
MODELS = [model for meta in METAFILES.values() for model in meta['Models']]
BY_NAME = {model['Name']: model for model in MODELS}

#: Metric of a metafile -> the column that holds it in a doc's table (the
#: toy-study tables name them kD/kB/nmiD/nmiB or spell them out).
COLUMNS = {
    'Digit kNN Top 1': ('kD', ),
    'Background kNN Top 1': ('kB', ),
    'Digit NMI': ('nmiD', 'NMI digit'),
    'Background NMI': ('nmiB', 'NMI background'),
}
#: A config's dataset type -> how ``Training Data`` names it.
TRAINING_DATA = {
    'ImageNet': 'ImageNet-1k',
    'INat18': 'iNaturalist 2018',
    'PowerLawOverlayDataset': 'Toy (',
    'ImageFolderDataset': 'Your image folder',
}


def test_the_index_is_read_from_the_checkout():
    assert model_index_root() == REPO  # a checkout (editable install)
    assert sorted(METAFILES) == sorted(
        osp.relpath(p, REPO)
        for p in glob.glob(osp.join(CONFIGS, '*', 'metafile.yml')))


def test_every_pretraining_config_is_indexed():
    indexed = sorted(model['Config'] for model in MODELS)
    assert len(PRETRAINING) >= 51
    missing = sorted(set(PRETRAINING) - set(indexed))
    assert not missing, f'add these configs to their metafile.yml: {missing}'
    assert indexed == PRETRAINING  # each once, and nothing else


def test_names_are_unique_config_stems():
    names = [model['Name'] for model in MODELS]
    assert len(set(names)) == len(names)
    for model in MODELS:
        assert osp.isfile(osp.join(REPO, model['Config']))
        assert model['Name'] == osp.splitext(osp.basename(model['Config']))[0]
        # each metafile indexes its own folder
        folder = osp.dirname(model['Config'])
        assert any(
            folder.startswith(osp.dirname(path)) and model in meta['Models']
            for path, meta in METAFILES.items())
        assert model['Weights'] is None  # no checkpoint published yet
        meta = model['Metadata']
        assert all(isinstance(meta[key], str)
                   for key in ('Training Data', 'Prior'))
        assert all(isinstance(a, str) for a in meta['Architecture'])


def test_collections_name_paper_data_and_techniques():
    collections = {c['Name']: c for meta in METAFILES.values()
                   for c in meta['Collections']}
    assert {model['In Collection'] for model in MODELS} == set(collections)
    for name, collection in collections.items():
        assert collection['Paper']['URL'].startswith('https://arxiv.org/abs/')
        # strings, as mim search reads them (an unquoted 'a: b' is a dict)
        for key in ('Training Techniques', 'Training Data'):
            assert collection['Metadata'][key] and all(
                isinstance(item, str)
                for item in collection['Metadata'][key]), (name, key)
        # the union of its models' training data
        assert sorted(collection['Metadata']['Training Data']) == sorted({
            m['Metadata']['Training Data'] for m in MODELS
            if m['In Collection'] == name})
        assert osp.isfile(osp.join(REPO, collection['README']))


def test_list_models_lists_ours_next_to_mmpretrains():
    # pmsn_mm registered at import, before mmpretrain's own lazy index
    ours = sorted(name for name in BY_NAME if 'pmsn' in name)
    assert len(ours) >= 22
    assert mmpretrain.list_models('*pmsn*') == ours
    everything = mmpretrain.list_models()
    assert set(BY_NAME) <= set(everything)
    mmpretrains = {'resnet50_8xb32_in1k',
                   'mae_vit-base-p16_8xb512-amp-coslr-300e_in1k'}
    assert mmpretrains <= set(everything)
    assert register_model_index()  # a second call is a no-op


@pytest.fixture(scope='module')
def inat18_cwd(tmp_path_factory):
    """A directory whose data/ holds sample iNat18 annotations and an
    ImageNet training folder (the ClassPrior configs count the classes, the
    image-folder configs read IMAGE_FOLDER's default, data/imagenet/train,
    when the model is built)."""
    root = tmp_path_factory.mktemp('inat18')
    make_sample_data(str(root / 'data'), formats=('inat18', 'imagenet'))
    return root


def _build(name: str) -> torch.nn.Module:
    """``get_model(name)`` on the meta device (no weight initialisation: ViT-L
    in 0.3 s instead of 7 s); constructors that read a tensor's value
    (mmpretrain's ResNet drop-path schedule) are built on the CPU."""
    try:
        with torch.device('meta'):
            return mmpretrain.get_model(name)
    except RuntimeError as error:
        if 'meta' not in str(error):
            raise
    return mmpretrain.get_model(name)


def _prior(head_cfg) -> str:
    prior = (head_cfg or {}).get('prior')
    if not prior:
        return 'none'
    if 'tau' in prior:
        return f"{prior['type']} (tau {prior['tau']})"
    return prior['type']


@pytest.mark.parametrize('name', sorted(BY_NAME))
def test_get_model_builds_every_entry(name, request, monkeypatch):
    entry = BY_NAME[name]
    meta = entry['Metadata']
    if meta['Prior'].startswith(('ClassPrior', 'ImageFolderPrior')):
        monkeypatch.chdir(request.getfixturevalue('inat18_cwd'))
        monkeypatch.delenv('IMAGE_FOLDER', raising=False)
    model = _build(name)
    cfg = model._config
    assert cfg.filename == osp.join(REPO, entry['Config'])
    assert type(model).__name__ == cfg.model.type
    # metadata = the config
    assert meta['Prior'].startswith(_prior(cfg.model.get('head')))
    if cfg.model.get('head', {}).get('prior'):
        built = type(model.head.prior).__name__
        if cfg.model.head.prior.type == 'ImageFolderPrior':
            # a builder: the sample ImageNet folder has class folders
            assert built == 'ClassPrior'
        else:
            assert built == cfg.model.head.prior.type
    if 'Epochs' in meta:
        assert meta['Epochs'] == cfg.train_cfg.max_epochs
    else:
        assert meta['Iterations'] == cfg.train_cfg.max_iters
    gpus, per_gpu = map(int, re.search(r'_(\d+)xb(\d+)', name).groups())
    assert per_gpu == cfg.train_dataloader.batch_size
    assert meta['Batch Size'] == gpus * per_gpu
    data = TRAINING_DATA.get(cfg.train_dataloader.dataset.type)
    assert data, (f'{cfg.train_dataloader.dataset.type}: name its '
                  'Training Data in TRAINING_DATA')
    assert meta['Training Data'].startswith(data)


def _table_row(path: str, row: str,
               section: Optional[str]) -> Dict[str, str]:
    """The cells of the table row whose first cell is ``row``, by header,
    within the ``section`` heading (the whole file if None)."""
    with open(osp.join(REPO, path)) as f:
        lines = f.read().splitlines()
    if section is not None:
        fenced, headings = False, {}  # line -> level, outside code blocks
        for i, line in enumerate(lines):
            fenced ^= line.startswith('```')
            match = re.match(r'(#+) (.*)', line)
            if match and not fenced:
                headings[i] = (len(match.group(1)), match.group(2).strip())
        starts = [i for i, (_, text) in headings.items() if text == section]
        assert len(starts) == 1, f'{path} has no section {section!r}'
        level = headings[starts[0]][0]
        end = min([i for i, (lv, _) in headings.items()
                   if i > starts[0] and lv <= level] + [len(lines)])
        lines = lines[starts[0]:end]

    def cells(line):
        return [c.strip() for c in line.strip().strip('|').split('|')]

    found, header = [], None
    for i, line in enumerate(lines):
        if not line.startswith('|'):
            continue
        if i + 1 < len(lines) and re.match(r'\|\s*-+', lines[i + 1]):
            header = cells(line)
        elif header and cells(line)[0] == row:
            found.append(dict(zip(header, cells(line))))
    assert len(found) == 1, f'{path}: {len(found)} rows {row!r}'
    return found[0]


def _mean_std(cell: str) -> Tuple[float, Optional[float]]:
    parts = [float(p) for p in cell.split('±')]
    return parts[0], (parts[1] if len(parts) > 1 else None)


MEASURED = sorted(name for name, model in BY_NAME.items()
                  if model.get('Results'))


def test_results_only_where_measured():
    assert len(MEASURED) >= 5
    for name in MEASURED:
        assert 'toy' in BY_NAME[name]['Metadata']['Training Data'].lower()


@pytest.mark.parametrize('name', MEASURED)
def test_results_equal_the_doc_they_cite(name):
    model = BY_NAME[name]
    source = model['Results Source']
    row = _table_row(source['File'], source['Row'], source.get('Section'))
    (result, ) = model['Results']
    metrics = dict(result['Metrics'])
    for metric, headers in COLUMNS.items():
        (header, ) = [h for h in headers if h in row]
        mean, std = _mean_std(row[header])
        assert metrics.pop(metric) == pytest.approx(mean, abs=1e-12), metric
        if std is not None:
            assert metrics.pop(f'{metric} std') == pytest.approx(
                std, abs=1e-12), metric
    assert not metrics, f'{name}: metrics not in the cited row: {metrics}'
    # the command that produced them runs this config with a shipped tool
    command = model['Results Command']
    assert model['Config'] in command
    (tool, ) = re.findall(r'python (tools/\S+\.py)', command)[:1]
    assert osp.isfile(osp.join(REPO, tool))


def test_mim_search_has_room_for_the_values():
    """``mim search pmsn_mm`` prints one key/value table 80 columns wide and
    gives the values what the longest key leaves (mim 0.3.8's
    ``print_df``): the keys mim makes of our index (``<dataset>/<metric>``
    for results) leave the values at least 30 columns, so none prints
    blank."""
    import pandas  # noqa: F401  (mim's search needs it)
    from mim.commands.search import convert2df
    from modelindex.load_model_index import load
    frame = convert2df(load(osp.join(REPO, 'model-index.yml')))
    longest = max(len(str(key)) for key in frame.columns)
    assert 80 - (longest + 2) >= 30, longest
