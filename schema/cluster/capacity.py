"""Consumable capacity (KEP-5075, DRAConsumableCapacity): request policies and sharing.

A port of kubernetes/dynamic-resource-allocation `structured/internal/incubating/
consumable_capacity.go` (the allocator the scheduler picks once the gate is on, 1.36+):
`CmpRequestOverCapacity`, `calculateConsumedCapacity`, `fillEmptyRequest`,
`roundUpRange`, `roundUpValidValues`, `violatesPolicy`. Quantities are exact
fractions; where upstream takes `Quantity.Value()` (step arithmetic) it is the
value rounded up to an integer, as there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

Amounts = Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class RequestPolicy:
    """`capacity[name].requestPolicy` of a device: a default and validRange or validValues."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    has_range: bool = False
    minimum: Fraction | None = None
    maximum: Fraction | None = None
    step: Fraction | None = None


def fits(*, requests: Amounts | None, capacity: Amounts,
         policies: Mapping[str, RequestPolicy], in_use: Amounts | None,
         allocating: Amounts | None) -> bool | None:
    """Upstream `CmpRequestOverCapacity`: None where upstream errs (an unknown capacity).

    Every capacity of the device is checked, requested or not: an unrequested one
    consumes its policy's default, else the whole capacity. The allocator skips a
    device for which this is not True.
    """
    if requests and any(name not in capacity for name in requests):
        return None  # "some requested capacity has not been defined"
    for name, value in capacity.items():
        policy = policies.get(name)
        amount = consumed_amount(None if requests is None else requests.get(name), value, policy)
        if violates_policy(amount, policy):
            return False
        total = amount + (in_use or {}).get(name, Fraction(0)) + (allocating or {}).get(name, Fraction(0))
        if total > value:
            return False
    return True


def consumed(requests: Amounts | None, capacity: Amounts,
             policies: Mapping[str, RequestPolicy]) -> dict[str, Fraction]:
    """Upstream `GetConsumedCapacityFromRequest`: what one share takes of each capacity."""
    return {name: consumed_amount(None if requests is None else requests.get(name), value,
                                  policies.get(name))
            for name, value in capacity.items()}


def consumed_amount(requested: Fraction | None, value: Fraction,
                    policy: RequestPolicy | None) -> Fraction:
    """Upstream `calculateConsumedCapacity`."""
    if requested is None:
        # fillEmptyRequest: the policy's default, else the whole capacity.
        return policy.default if policy is not None and policy.default is not None else value
    if policy is None:
        return requested
    if policy.has_range and policy.minimum is not None:
        return _round_up_range(requested, policy)
    if policy.valid_values:
        return next((v for v in policy.valid_values if requested <= v), requested)
    return requested


def _round_up_range(requested: Fraction, policy: RequestPolicy) -> Fraction:
    """Upstream `roundUpRange`: at least min, then up to min + n × step."""
    assert policy.minimum is not None
    if requested < policy.minimum:
        return policy.minimum
    if policy.step is None:
        return requested
    low, step = math.ceil(policy.minimum), math.ceil(policy.step)
    added = math.ceil(requested) - low
    return Fraction(low + step * -(-added // step))


def violates_policy(amount: Fraction, policy: RequestPolicy | None) -> bool:
    """Upstream `violatesPolicy`: over max, off the step, or not among validValues.

    Upstream compares the default with `==` on `resource.Quantity` structs; equal
    values written alike compare equal there, which is what a value comparison gives.
    """
    if policy is None or (policy.default is not None and amount == policy.default):
        return False
    if policy.has_range:
        if policy.maximum is not None and amount > policy.maximum:
            return True
        if policy.step is not None and policy.minimum is not None:
            # Go's % keeps the dividend's sign; only zero matters here.
            return (math.ceil(amount) - math.ceil(policy.minimum)) % math.ceil(policy.step) != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False
