"""Shared helpers for the deploy tests, as fixtures (importlib mode: no imports between tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Manifest = dict[str, Any]
Authorizer = Callable[[list[Manifest], str, str, str, str, str, "str | None"], bool]


def allowed(manifests: list[Manifest], account: str, verb: str, group: str, resource: str,
            name: str, namespace: str | None) -> bool:
    """Whether the RBAC objects in `manifests` let ServiceAccount `account` do `verb`.

    Like the apiserver's RBAC authorizer for what draguard uses (no wildcards, no
    aggregation): a RoleBinding grants in its own namespace only, a rule with
    `resourceNames` never matches a request without a name (create, list).
    """
    bindings = [m for m in manifests if m["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    for binding in bindings:
        if not any(s["kind"] == "ServiceAccount" and s["name"] == account
                   for s in binding["subjects"]):
            continue
        if binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] != namespace:
            continue
        ref = binding["roleRef"]
        roles = [m for m in manifests
                 if m["kind"] == ref["kind"] and m["metadata"]["name"] == ref["name"]]
        for role in roles:
            for rule in role["rules"]:
                names = rule.get("resourceNames")
                if (group in rule["apiGroups"] and resource in rule["resources"]
                        and verb in rule["verbs"] and (names is None or name in names)):
                    return True
    return False


@pytest.fixture
def authorizer() -> Authorizer:
    """The RBAC check above, for tests that ask what a ServiceAccount may do."""
    return allowed
