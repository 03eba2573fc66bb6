"""The cost estimate against the costs upstream pins in `dynamic-resource-allocation`.

Each expected figure is the `expectCost` of the same expression in upstream's
`cel/compile_test.go` (the estimator must reproduce them, not approximate them);
only the expressions that exist without DRAListTypeAttributes are taken.
"""

from __future__ import annotations

import pytest

from draguard.schema.cel.check import analyse_selector
from draguard.schema.cel.cost import COST_LIMIT, UNBOUNDED

UPSTREAM_COSTS = [
    pytest.param('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))', 6, id='lookup-select'),
    pytest.param('device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))', 6, id='lookup-index'),
    pytest.param('"no-such-domain" in device.attributes', 3, id='domain-in'),
    pytest.param('device.driver == ""', 2, id='driver-empty'),
    pytest.param('device.driver == "dra.example.com"', 4, id='driver-name'),
    pytest.param('device.attributes["dra.example.com"].name', 4, id='attribute-select'),
    pytest.param('device.attributes["dra.example.com"]["name"]', 4, id='attribute-index'),
    pytest.param('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', 15, id='bind'),
    pytest.param('device.attributes["other.example.com"].name', 4, id='other-domain'),
    pytest.param('device.attributes["dra.example.com"].name > 0', 5, id='int-compare'),
    pytest.param('device.attributes["dra.example.com"].name == "fish"', 5, id='string-compare'),
    pytest.param('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))', 6, id='semver'),
    pytest.param('device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)', 7, id='semver-relaxed'),
    pytest.param('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 6, id='quantity'),
    pytest.param('"name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 10, id='check-positive'),
    pytest.param('!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', 11, id='check-negative'),
    pytest.param('\ndevice.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&\ndevice.attributes["dra.example.com"].bool &&\ndevice.attributes["dra.example.com"].int > 0 &&\ndevice.attributes["dra.example.com"].string == "fish" &&\ndevice.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&\ndevice.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&\ndevice.attributes["dra.example.com"]["bool"] &&\ndevice.attributes["dra.example.com"]["int"] > 0 &&\ndevice.attributes["dra.example.com"]["string"] == "fish" &&\ndevice.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))\n', 52, id='all'),
    pytest.param('device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c', 12, id='many'),
    pytest.param('device.attributes.exists_one(x, x == "dra.example.com")', 164, id='attribute-domains-exists-one'),
    pytest.param('device.attributes["dra.example.com"].exists_one(x, x == "services")', 133, id='attribute-ids-exists-one'),
    pytest.param('device.attributes["dra.example.com"].services.split("example").size() >= 2', 19, id='split'),
    pytest.param('device.attributes["dra.example.com"].services.matches("[^a]?sym")', 18, id='regexp'),
    pytest.param('device.capacity.exists_one(x, x == "dra.example.com")', 164, id='capacity-domains-exists-one'),
    pytest.param('device.capacity["dra.example.com"].exists_one(x, x == "memory")', 133, id='capacity-ids-exists-one'),
    pytest.param("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))", 85555551, id='expensive'),
    pytest.param('device.allowMultipleAllocations == true', 3, id='allow-multiple-allocations'),
]


@pytest.mark.parametrize(("expression", "cost"), UPSTREAM_COSTS)
def test_cost_matches_upstream(expression: str, cost: int) -> None:
    """The estimated maximum equals upstream's pinned figure."""
    assert analyse_selector(expression, consumable_capacity=True).cost == cost


def test_over_the_limit_is_forbidden_with_its_cost() -> None:
    """The expensive pin is over the limit and the verdict keeps the figure."""
    expression, cost = UPSTREAM_COSTS[-2].values
    verdict = analyse_selector(str(expression), consumable_capacity=True)
    assert (verdict.outcome, verdict.cost) == ("forbidden", cost)
    assert int(str(cost)) > COST_LIMIT


BOUNDS = [
    pytest.param("device.attributes.all(d, true)", 32, id="outer-attribute-map-32"),
    pytest.param('device.attributes["d"].all(i, true)', 32, id="inner-attribute-map-32"),
    pytest.param('device.driver.split("").all(c, true)', 63, id="driver-63-characters"),
    pytest.param("[1, 2, 3].all(x, true)", 3, id="literal-length"),
]


@pytest.mark.parametrize(("expression", "iterations"), BOUNDS)
def test_loop_cost_scales_with_the_declared_bound(expression: str, iterations: int) -> None:
    """A loop body's cost is multiplied by the maximum size of what it iterates."""
    cheap = analyse_selector(expression, consumable_capacity=True).cost
    dear = analyse_selector(expression.replace("true)", "1 + 1 + 1 + 1 > 0)"),
                            consumable_capacity=True).cost
    assert cheap is not None and dear is not None
    # The body grows by four calls (three `+` and one `>`), once per iteration.
    assert dear - cheap == 4 * iterations


def test_unbounded_iteration_saturates() -> None:
    """Iterating a list whose size nothing bounds saturates the estimate and is Forbidden."""
    expression = 'string(device.attributes["d"].x).split(",").all(c, c != "")'
    verdict = analyse_selector(expression, consumable_capacity=True)
    assert (verdict.outcome, verdict.cost) == ("forbidden", UNBOUNDED)


def test_bounded_split_is_not_saturated() -> None:
    """Splitting an attribute value is bounded by the attribute's 64-character maximum."""
    expression = 'device.attributes["d"].csv.split(",").all(x, x != "")'
    verdict = analyse_selector(expression, consumable_capacity=True)
    assert verdict.outcome == "ok" and verdict.cost is not None and verdict.cost < 1000
