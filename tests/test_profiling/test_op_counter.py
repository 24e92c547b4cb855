"""OpCounter counts aten ops and tells host syncs from asynchronous ops;
the rule's check fails naming the rule."""
import os.path as osp
import re

import pytest
import torch

from tests._configs import REPO
from tests._profiling import HOST_SYNC_RULE, rule_failure
from tests._profiling.op_counter import OpCounter, assert_host_syncs


def _count(fn):
    with OpCounter() as counter:
        fn()
    return counter


def test_async_ops_are_not_syncs():
    x = torch.randn(6, 4, requires_grad=True)
    mask = x.detach() > 0

    def step():
        y = torch.where(mask, x * 2, x.new_zeros(())).softmax(1).sum()
        y.backward()
        torch.repeat_interleave(x.detach(), 2, dim=0)  # int repeats
        torch.repeat_interleave(x.detach(), torch.tensor([1, 2, 1, 2, 1, 2]),
                                dim=0, output_size=9)

    counter = _count(step)
    assert counter.syncs == 0, counter.summary()
    assert counter.ops > 5
    assert counter.op_names['where'] >= 1  # forward (and backward)


def test_each_kind_of_host_sync_is_counted_once():
    x = torch.randn(6, 4)
    cases = {
        '_local_scalar_dense': lambda: float(x.sum()),
        'nonzero': lambda: x.nonzero(),
        'masked_select': lambda: x.masked_select(x > 0),
        '_unique2': lambda: torch.unique(x.round()),
        'equal': lambda: torch.equal(x, x),
        'index': lambda: x[x > 0],
        'index_put_': lambda: x.clone().index_put_((x > 0, ), x.new_zeros(())),
        'repeat_interleave': lambda: torch.repeat_interleave(
            torch.tensor([1, 2])),
    }
    for name, fn in cases.items():
        counter = _count(fn)
        assert counter.sync_ops[name] >= 1, (name, counter.summary())
    # branching on a device value is one scalar read
    counter = _count(lambda: bool(x.sum() > 0))
    assert counter.syncs == 1 and counter.sync_ops['_local_scalar_dense'] == 1


def test_an_item_in_a_step_fails_naming_the_rule():
    """A ``.item()`` slipped into a tiny training step: the check the
    rule's tests use fails, listing the read and naming the section of
    CONTRIBUTING.md; the same step without it passes."""
    weight = torch.randn(4, requires_grad=True)

    def step(read: bool) -> None:
        loss = (weight * 2).square().sum()
        if read:
            loss.item()  # e.g. to log it
        loss.backward()

    with OpCounter() as counter:
        step(read=True)
    with pytest.raises(AssertionError) as failure:
        assert_host_syncs(counter, what='the tiny step')
    message = str(failure.value)
    assert HOST_SYNC_RULE in message
    assert 'the tiny step' in message and '_local_scalar_dense: 1' in message
    # an allowance is a count, given at the call site
    assert_host_syncs(counter, allowed=1, what='the tiny step', exact=True)
    with OpCounter() as counter:
        step(read=False)
    assert_host_syncs(counter, what='the tiny step')
    with pytest.raises(AssertionError, match='exactly 1 allowed'):
        assert_host_syncs(counter, allowed=1, exact=True)


def test_the_rule_named_in_the_messages_is_a_section_of_contributing():
    with open(osp.join(REPO, 'CONTRIBUTING.md')) as f:
        headings = re.findall(r'^## (.+)$', f.read(), re.M)
    section = re.search(r'"(.+)"', HOST_SYNC_RULE).group(1)
    assert section in headings, (section, headings)
    assert rule_failure('2 syncs') == f'2 syncs; {HOST_SYNC_RULE}'
