"""check_choice / check_index_list: the message names setting and values."""
import pytest

from pmsn_mm.utils.validation import check_choice, check_index_list


def test_check_choice():
    check_choice('kl_direction', 'forward', ('forward', 'reverse'))
    with pytest.raises(ValueError,
                       match=r"^kl_direction must be one of \('forward', "
                       r"'reverse'\) but is 'backward'\.$"):
        check_choice('kl_direction', 'backward', ['forward', 'reverse'])


def test_check_index_list_accepts_and_returns_a_tuple():
    assert check_index_list('idx', [2, 0], 3) == (2, 0)
    assert check_index_list('idx', (1, 1), 3) == (1, 1)  # not distinct


@pytest.mark.parametrize('values', [[], [3], [-1], [True], [0.5]])
def test_check_index_list_rejects(values):
    with pytest.raises(ValueError,
                       match=r'^layers must be a non-empty list of block '
                       r'indices in \[0, 3\) of a 3-block net, but is '):
        check_index_list('layers', values, 3, 'block ',
                         context=' of a 3-block net')


def test_check_index_list_distinct():
    with pytest.raises(ValueError, match=r'list of distinct indices in '
                       r'\[0, 3\), but is \[1, 1\]\.$'):
        check_index_list('idx', [1, 1], 3, distinct=True)
