"""What counts as a refusal, and how it is printed (pmsn_mm.utils.refusal);
the tools' behaviour end to end is tests/test_tools/test_refusals.py."""
import logging
import sys

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from pmsn_mm.config import UnknownOptionError
from pmsn_mm.datasets.transforms import ImageReadError
from pmsn_mm.models.priors import PowerLawPrior
from pmsn_mm.utils import refusal
from pmsn_mm.utils.refusal import (REFUSAL_FILE, DeferredConsole, NothingToDo,
                                   Refusal, refusal_message, run_command)


def _caught(fn) -> BaseException:
    try:
        fn()
    except BaseException as error:  # noqa: BLE001
        return error
    raise AssertionError('nothing was raised')


def test_an_argument_check_of_pmsn_mm_is_a_refusal():
    error = _caught(lambda: PowerLawPrior(num_prototypes=4, tau=-1.0))
    assert isinstance(error, ValueError)
    assert refusal_message(error) == str(error)
    assert 'tau' in refusal_message(error)


def test_errors_raised_outside_pmsn_mm_keep_their_traceback():
    # the same types, raised by torch / Python / a test: not refusals
    assert refusal_message(_caught(lambda: torch.zeros(2).view(3))) is None
    assert refusal_message(_caught(lambda: int('x'))) is None
    assert refusal_message(_caught(lambda: {}['key'])) is None

    def ours():
        raise ValueError('raised in a test, not by pmsn_mm')
    assert refusal_message(_caught(ours)) is None


def test_named_refusals_print_without_quotes_or_type():
    error = UnknownOptionError("'train_dataloder' is not a section")
    assert refusal_message(error) == "'train_dataloder' is not a section"
    assert refusal_message(Refusal('plain')) == 'plain'
    assert NothingToDo('done').exit_code == 0 and Refusal('x').exit_code == 1


class _Corrupt(Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int):
        raise ImageReadError(f'Cannot decode image {index}.jpg: truncated')


def test_a_dataloader_worker_refusal_is_its_original_message():
    loader = DataLoader(_Corrupt(), batch_size=1, num_workers=1)
    error = _caught(lambda: next(iter(loader)))
    assert 'DataLoader worker process' in str(error)  # torch's re-raise
    assert refusal_message(error) == 'Cannot decode image 0.jpg: truncated'


def test_run_command_prints_the_message_alone(capsys):
    def main():
        print('start-up output a refused run must not show')
        raise ValueError('raised here')  # not pmsn_mm's: a failure

    with pytest.raises(ValueError):
        run_command(main)
    out = capsys.readouterr()
    assert 'start-up output' in out.out  # a failure shows its context

    def refused():
        print('start-up output a refused run must not show')
        PowerLawPrior(num_prototypes=4, tau=-1.0)

    with pytest.raises(SystemExit) as exit_:
        run_command(refused)
    assert exit_.value.code == 1
    out = capsys.readouterr()
    assert out.out == ''
    assert out.err.count('\n') == 1 and 'tau' in out.err
    assert sys.stdout is not None and refusal.active_console() is None


def test_debug_raises_the_refusal(capsys):
    with pytest.raises(ValueError, match='tau'):
        run_command(lambda: PowerLawPrior(num_prototypes=4, tau=-1.0),
                    debug=True)
    assert refusal.active_console() is None


def test_nothing_to_do_exits_zero(capsys):
    def main():
        raise NothingToDo('Nothing to train: finished.')

    with pytest.raises(SystemExit) as exit_:
        run_command(main)
    assert exit_.value.code == 0
    assert capsys.readouterr().err == 'Nothing to train: finished.\n'


def test_ranks_agree_through_the_refusal_file(tmp_path, monkeypatch,
                                              capsys):
    monkeypatch.setenv(REFUSAL_FILE, str(tmp_path / 'refused'))
    for rank in ('1', '0'):  # the first to refuse prints, whatever rank
        monkeypatch.setenv('RANK', rank)
        refusal.print_refusal('the same message')
    assert capsys.readouterr().err == 'the same message\n'
    assert (tmp_path / 'refused').read_text() == 'the same message\n'


def test_without_the_file_another_rank_names_itself(monkeypatch, capsys):
    monkeypatch.delenv(REFUSAL_FILE, raising=False)
    monkeypatch.setenv('RANK', '3')
    refusal.print_refusal('only mine')
    assert capsys.readouterr().err == '[rank 3] only mine\n'


def test_the_console_holds_and_releases(capsys):
    logger = logging.getLogger('pmsn_mm.test_console')
    handler = logging.StreamHandler(sys.stdout)
    logger.addHandler(handler)
    try:
        console = DeferredConsole()
        console.start()
        print('held line')
        logger.warning('held log line')
        assert capsys.readouterr().out == ''
        console.release()
        assert capsys.readouterr().out == 'held line\nheld log line\n'
        console.start()
        print('dropped')
        console.discard()
        print('after')
        assert capsys.readouterr().out == 'after\n'
        assert handler.stream is sys.stdout
    finally:
        logger.removeHandler(handler)
