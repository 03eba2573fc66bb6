"""Where a DRA object keeps its device requests, and in which shape.

The mutating policy edits the raw JSON object in place (never a decoded struct), so
it needs to know only three things: the kind (a template nests the claim spec under
`spec.spec`, `upstream-rules.md` §2.6), whether requests are flat (v1beta1, §2.2) or
use `exactly` (v1beta2/v1, §2.1), and the apiserver path of each part, which is
always that of the internal shape (contract §3: `.exactly.` even for v1beta1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from draguard.schema.advice.codes import Advice
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import API_VERSIONS, GROUP, KINDS

# Where a policy step reports what the user should know (an `Advice` with a `policy-*`
# code, rendered and silenced like every other warning).
Warn = Callable[[Advice], None]

# Where each kind keeps its claim spec: a template nests it under `spec.spec` (§2.6).
_SPEC_AT = dict(zip(KINDS, (("spec",), ("spec", "spec")), strict=True))


@dataclass(frozen=True, slots=True)
class ClaimSite:
    """The location and shape of one object's `devices` part."""

    kind: str
    version: str
    spec: tuple[str, ...]

    @property
    def flat(self) -> bool:
        """v1beta1 keeps the exact fields on the request itself (§2.2)."""
        return self.version == "v1beta1"

    @property
    def devices_path(self) -> FieldPath:
        return FieldPath((*self.spec, "devices"))

    def request_path(self, i: int) -> FieldPath:
        return self.devices_path.child("requests").index(i)

    def exact_path(self, i: int) -> FieldPath:
        """The internal `exactly` path, also for v1beta1's flat fields (contract §3)."""
        return self.request_path(i).child("exactly")

    def devices(self, obj: Any) -> dict[str, Any] | None:
        """The object's `devices` mapping, or None when the object has none to edit."""
        node = obj
        for name in (*self.spec, "devices"):
            if not isinstance(node, dict):
                return None
            node = node.get(name)
        return node if isinstance(node, dict) else None


def locate(obj: Any) -> ClaimSite | None:
    """The site of a ResourceClaim or ResourceClaimTemplate in resource.k8s.io, else None."""
    if not isinstance(obj, dict):
        return None
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or kind not in _SPEC_AT:
        return None
    group, _, version = api_version.partition("/")
    if group != GROUP or version not in API_VERSIONS:
        return None
    return ClaimSite(kind, version, _SPEC_AT[kind])


def dict_items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The (index, item) pairs of a list that are mappings; anything else yields nothing.

    Malformed input is the rule set's business (it reports `Malformed`); the policy
    simply leaves what it cannot read untouched.
    """
    if not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def alternatives_of(request: dict[str, Any]) -> list[Any] | None:
    """The request's `firstAvailable` list when it is a non-empty list (§3.3 rule 7)."""
    value = request.get("firstAvailable")
    return value if isinstance(value, list) and value else None
