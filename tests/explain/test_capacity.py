"""Consumable capacity's policy arithmetic: upstream's own tables, ported.

kubernetes/dynamic-resource-allocation structured/internal/incubating/
consumable_capacity_test.go, `testViolateCapacityRequestPolicy` and
`testCalculateConsumedCapacity`; the case names are upstream's.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from draguard.schema.cluster.capacity import (
    RequestPolicy,
    consumed_amount,
    fits,
    violates_policy,
)

ONE, TWO, THREE = Fraction(1), Fraction(2), Fraction(3)


def _range(default: Fraction, low: Fraction, high: Fraction | None = None,
           step: Fraction | None = None) -> RequestPolicy:
    return RequestPolicy(default=default, has_range=True, minimum=low, maximum=high, step=step)


def _values(default: Fraction, *values: Fraction) -> RequestPolicy:
    return RequestPolicy(default=default, valid_values=values)


@pytest.mark.parametrize(("amount", "policy", "violates"), [
    pytest.param(ONE, None, False, id="no constraint"),
    pytest.param(ONE, _range(ONE, ONE, TWO), False, id="less than maximum"),
    pytest.param(TWO, _range(ONE, ONE, ONE), True, id="more than maximum"),
    pytest.param(ONE, _values(ONE, ONE), False, id="in set"),
    pytest.param(TWO, _values(ONE, ONE), True, id="not in set"),
])
def test_violates_policy(amount: Fraction, policy: RequestPolicy | None, violates: bool) -> None:
    """`violatesPolicy` as upstream's table has it."""
    assert violates_policy(amount, policy) is violates


@pytest.mark.parametrize(("requested", "value", "policy", "expected"), [
    pytest.param(None, ONE, RequestPolicy(), ONE, id="empty"),
    pytest.param(None, TWO, _range(ONE, ONE), ONE, id="min in range"),
    pytest.param(None, TWO, _values(ONE, ONE), ONE, id="default in set"),
    pytest.param(TWO, TWO, _range(ONE, ONE), TWO, id="more than min in range"),
    pytest.param(ONE, TWO, _range(ONE, TWO), TWO, id="less than min in range"),
    pytest.param(TWO, THREE, _range(ONE, ONE, step=TWO), THREE, id="with step (round up)"),
    pytest.param(TWO, TWO, _range(ONE, ONE, step=ONE), TWO, id="with step (no remaining)"),
    pytest.param(TWO, THREE, _values(ONE, ONE, TWO, THREE), TWO, id="valid value in set"),
    pytest.param(TWO, THREE, _values(ONE, ONE, THREE), THREE, id="set (round up)"),
    pytest.param(THREE, THREE, _values(ONE, ONE, TWO), THREE, id="larger than set"),
])
def test_consumed_amount(requested: Fraction | None, value: Fraction, policy: RequestPolicy,
                         expected: Fraction) -> None:
    """`calculateConsumedCapacity` as upstream's table has it."""
    assert consumed_amount(requested, value, policy) == expected


def test_unknown_capacity_is_an_error() -> None:
    """A request for a capacity the device lacks is upstream's error (None), not a no."""
    assert fits(requests={"other": ONE}, capacity={"memory": TWO}, policies={},
                in_use=None, allocating=None) is None


def test_unrequested_capacity_is_taken_whole() -> None:
    """Without a request or default, a share takes the whole capacity: a second cannot fit."""
    assert fits(requests=None, capacity={"memory": TWO}, policies={}, in_use={"memory": ONE},
                allocating=None) is False
