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


def test_check_int():
    import numpy as np

    from pmsn_mm.utils.validation import check_int
    assert check_int('k', np.int64(3), 1) == 3
    for bad in (0, True, 1.0, '2', None):
        with pytest.raises(ValueError,
                           match=r'^k must be an int >= 1 but is '):
            check_int('k', bad, 1)
    with pytest.raises(ValueError, match=r'^k must be an int in \[0, 4\] '):
        check_int('k', 5, 0, 4)


@pytest.mark.parametrize('kwargs,good,bad,interval', [
    (dict(low=0, low_open=True), [1e-9, 7],
     [0, -1, True, float('inf'), float('nan'), '1'], r'\(0, inf\)'),
    (dict(low=0, high=1, high_open=True), [0, 0.999], [1, -0.1, False],
     r'\[0, 1\)'),
    (dict(low=0, high=1), [0, 1], [1.01, -1e-12], r'\[0, 1\]'),
])
def test_check_number_intervals(kwargs, good, bad, interval):
    from pmsn_mm.utils.validation import check_number
    for v in good:
        assert check_number('x', v, **kwargs) == float(v)
    for v in bad:
        with pytest.raises(ValueError,
                           match=rf'^x must be in {interval} but is '):
            check_number('x', v, **kwargs)


def test_check_range_pair():
    from pmsn_mm.utils.validation import check_range_pair
    assert check_range_pair('scale', (0.5, 1), 0, 1, low_open=True) == (0.5,
                                                                        1.0)
    assert check_range_pair('r', [0.2, 0.2], 0, 1) == (0.2, 0.2)
    for bad in [(0, 1), (0.6, 0.5), (0.5, 1.1), (0.5, ), (True, 1), 3,
                (0.5, float('nan'))]:
        with pytest.raises(ValueError,
                           match=r'^scale must be \(min, max\) with 0 < min '
                           r'<= max <= 1 but is '):
            check_range_pair('scale', bad, 0, 1, low_open=True)
