"""Building blocks for explain's behaviour tests: a Pod naming claims, and one Pod's outcome
from plain objects read as `--from-cluster` reads them."""

from __future__ import annotations

from typing import Any

from draguard.schema.cluster.inventory import Inventory, add_objects, check_references
from draguard.schema.explain import PodOutcome, explain
from draguard.schema.model.releases import release


def pod(*claims: str) -> dict[str, Any]:
    """Pod `default/p` naming each claim by name."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c"}],
                     "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims]}}


def explain_pod(objects: list[dict[str, Any]], version: str = "1.37",
                patch: int | None = None) -> PodOutcome:
    """The only Pod's outcome; the objects must read without a finding."""
    chosen = release(version)
    inventory = Inventory()
    add_objects(inventory, objects, source="test", release=chosen, namespace="default")
    check_references(inventory)
    assert not inventory.findings, inventory.findings
    [outcome] = explain(inventory, release=chosen, patch=patch).pods
    return outcome
