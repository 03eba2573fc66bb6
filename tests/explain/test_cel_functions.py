"""Selector functions beyond the CEL standard library: semver, lists, regex, and the
ones draguard cannot evaluate (URL, IP, CIDR, format, min/max)."""

from __future__ import annotations

from typing import Any

import pytest

from draguard.schema.cluster import semver
from draguard.schema.cluster.inventory import Inventory, add_objects, check_references
from draguard.schema.cluster.selectors import evaluate
from draguard.schema.cluster.semver import version_value
from draguard.schema.explain import PodOutcome, explain
from draguard.schema.model.releases import release

DRIVER = "d.example.com"
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def _objects(*subrequests: str) -> list[dict[str, Any]]:
    """Two nodes: n1's device runs driver 1.2.3, n2's 2.0.0-rc.1; one claim."""
    def node_slice(node: str, version: str) -> list[dict[str, Any]]:
        return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}},
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                 "metadata": {"name": node}, "spec": {
                     "driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "d0", "attributes": {
                         "driverVersion": {"version": version},
                         "plain": {"string": version}}}]}}]
    subs = [{"name": f"s{i}", "deviceClassName": "gpu",
             "selectors": [{"cel": {"expression": e}}]} for i, e in enumerate(subrequests)]
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "firstAvailable": subs}]}}}
    return [CLASS, *node_slice("n1", "1.2.3"), *node_slice("n2", "2.0.0-rc.1"), claim]


def _explain(objects: list[dict[str, Any]]) -> PodOutcome:
    chosen = release("1.37")
    inventory = Inventory()
    add_objects(inventory, objects, source="test", release=chosen, namespace="default")
    check_references(inventory)
    assert not inventory.findings, inventory.findings
    [pod] = explain(inventory, release=chosen).pods
    return pod


VERSION = f'device.attributes["{DRIVER}"].driverVersion'


def test_semver_comparison_picks_nodes() -> None:
    """A version attribute compares as a semver: 2.0.0-rc.1 is above 1.5.0, 1.2.3 is not."""
    pod = _explain(_objects(f'{VERSION}.isGreaterThan(semver("1.5.0"))'))
    assert pod.error is None
    assert {n.node: n.feasible for n in pod.nodes} == {"n1": False, "n2": True}


def test_semver_on_a_string_attribute_is_a_runtime_error() -> None:
    """A string attribute is no semver: cel-go has no such overload, which aborts the Pod."""
    pod = _explain(_objects(f'device.attributes["{DRIVER}"].plain.isGreaterThan(semver("1.0.0"))'))
    assert pod.error is not None and "no such overload" in pod.error


def test_unevaluable_alternative_is_unknown() -> None:
    """A subrequest calling isIP() counts as matching nothing, and its reason says unknown."""
    pod = _explain(_objects('isIP("10.0.0.1")', "true"))
    assert pod.error is None
    for node in pod.nodes:
        [claim] = node.claims
        [alternative] = claim.alternatives
        assert alternative.chosen == "s1"
        [rejected] = alternative.rejected
        assert rejected.reason == ('selector `isIP("10.0.0.1")` of the request uses isIP(), '
                                   "which draguard cannot evaluate; its outcome is unknown")


@pytest.mark.parametrize("expression", [
    'semver("v1.2", true) == semver("1.2.0")',
    'semver("1.2.3-alpha.1").isLessThan(semver("1.2.3-alpha.beta"))',
    'semver("1.2.3-rc.1").isLessThan(semver("1.2.3"))',
    'semver("1.2.3+build.5").compareTo(semver("1.2.3")) == 0',
    'isSemver("1.2.3") && !isSemver("1.2") && isSemver("1.2", true)',
    '"gpu-a100-80g".find("[0-9]+g") == "80g"',
    '"a1b22c333".findAll("[0-9]+", 2) == ["1", "22"]',
    "[1, 2, 2].isSorted() && ![2, 1].isSorted()",
    "[1, 2, 3].sum() == 6",
])
def test_library_function(expression: str) -> None:
    """Each expression evaluates to true, as the Kubernetes CEL libraries have it."""
    outcome = evaluate(expression, driver=DRIVER, attributes={}, capacity={})
    assert outcome.matches, outcome


def test_semver_parse_errors_are_blang_s() -> None:
    """`semver()` fails with blang/semver's text."""
    with pytest.raises(semver.SemverError, match=r"No Major\.Minor\.Patch elements found"):
        semver.parse("1.2")
    with pytest.raises(semver.SemverError, match="Major number must not contain leading zeroes"):
        semver.parse("01.2.3")


def test_version_attribute_equals_semver_not_string() -> None:
    """A version attribute equals semver() of its text, and no string (heterogeneous ==)."""
    attributes = {DRIVER: {"v": version_value("1.2.3")}}
    assert evaluate(f'device.attributes["{DRIVER}"].v == semver("1.2.3")', driver=DRIVER,
                    attributes=attributes, capacity={}).matches
    assert not evaluate(f'device.attributes["{DRIVER}"].v == "1.2.3"', driver=DRIVER,
                        attributes=attributes, capacity={}).matches
