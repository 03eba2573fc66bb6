"""Quota preview: what creating a Pod's claims would charge against ResourceQuota.

Core ResourceQuota's claim evaluator (kubernetes/kubernetes
`pkg/quota/v1/evaluator/core/resource_claims.go`, as remembered — no copy was at
hand): each claim counts 1 against `resourceclaims` and
`count/resourceclaims.resource.k8s.io`; each request charges
`<class>.deviceclass.resource.k8s.io/devices` its count (`All`: 32, the result limit);
a `firstAvailable` request charges, per class, the largest count among its
alternatives; the charges add up across requests. Creation is refused when usage plus
the charge exceeds a hard limit the quota sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from draguard.schema.cluster.inventory import Claim
from draguard.schema.cluster.quantity import parse_quantity

ALL_COUNT = 32  # resourceapi.AllocationResultsMaxSize
PER_CLASS = ".deviceclass.resource.k8s.io/devices"
CLAIM_COUNTS = ("resourceclaims", "count/resourceclaims.resource.k8s.io")


def claim_charge(claim: Claim) -> dict[str, int]:
    """The quota resources one claim consumes on creation."""
    charge: dict[str, int] = dict.fromkeys(CLAIM_COUNTS, 1)
    for request in claim.devices.get("requests") or []:
        alternatives = request.get("firstAvailable") or [request.get("exactly") or {}]
        largest: dict[str, int] = {}
        for alternative in alternatives:
            resource = f"{alternative.get('deviceClassName', '')}{PER_CLASS}"
            count = _count(alternative)
            largest[resource] = max(largest.get(resource, 0), count)
        for resource, count in largest.items():
            charge[resource] = charge.get(resource, 0) + count
    return charge


def _count(request: Mapping[str, Any]) -> int:
    if request.get("allocationMode") == "All":
        return ALL_COUNT
    count = request.get("count")
    return count if isinstance(count, int) else 1


@dataclass(frozen=True, slots=True)
class QuotaVerdict:
    quota: str
    resource: str
    hard: Fraction
    used: Fraction
    charge: int

    @property
    def refused(self) -> bool:
        return self.used + self.charge > self.hard

    def render(self) -> str:
        state = "exceeded" if self.refused else "ok"
        return (f"ResourceQuota {self.quota}: {self.resource}: used {_text(self.used)} + "
                f"{self.charge} of {_text(self.hard)}: {state}")


def _text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(float(value))


def check_quotas(namespace: str, claims: Iterable[Claim],
                 quotas: Iterable[Mapping[str, Any]]) -> list[QuotaVerdict]:
    """Each hard limit in the namespace that the claims' total charge touches."""
    total: dict[str, int] = {}
    for claim in claims:
        for resource, amount in claim_charge(claim).items():
            total[resource] = total.get(resource, 0) + amount
    verdicts: list[QuotaVerdict] = []
    for quota in quotas:
        meta = quota.get("metadata") if isinstance(quota.get("metadata"), dict) else {}
        if (meta or {}).get("namespace", "default") != namespace:
            continue
        hard = quantities((quota.get("spec") or {}).get("hard"))
        used = quantities((quota.get("status") or {}).get("used"))
        for resource, limit in sorted(hard.items()):
            if resource in total:
                verdicts.append(QuotaVerdict(str((meta or {}).get("name", "")), resource, limit,
                                             used.get(resource, Fraction(0)), total[resource]))
    return verdicts


def quantities(value: Any) -> dict[str, Fraction]:
    """A quota's `hard` or `used` map as exact amounts; unparsable amounts are left out."""
    out: dict[str, Fraction] = {}
    if isinstance(value, Mapping):
        for key, amount in value.items():
            parsed = parse_quantity(amount)
            if parsed is not None:
                out[str(key)] = parsed
    return out
