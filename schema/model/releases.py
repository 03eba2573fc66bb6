"""What each Kubernetes release does with DRA claims (`upstream-rules.md` §1–§3.9).

The one table of release facts: the kinds and API versions draguard knows, the API's
size limits, and one frozen `Release` per minor version holding every difference the
rule set, the converter and the skew report need, so that no code compares version
numbers itself.
"""

from __future__ import annotations

from dataclasses import dataclass

GROUP = "resource.k8s.io"
# The claim kinds draguard validates; anything else is skipped.
KINDS = ("ResourceClaim", "ResourceClaimTemplate")
# The resource.k8s.io versions of those kinds, newest first (§1.2 says which release has which).
API_VERSIONS = ("v1", "v1beta2", "v1beta1")

# §2.4 size limits, the same in every release (`pkg/apis/resource/types.go`).
REQUESTS_MAX = 32  # DeviceRequestsMaxSize: requests (parallel: plus prioritizedRequests), references
ALLOCATION_RESULTS_MAX = 32  # AllocationResultsMaxSize: devices allocated to one claim
FIRST_AVAILABLE_MAX = 8  # FirstAvailableDeviceRequestMaxSize
SELECTORS_MAX = 32  # DeviceSelectorsMaxSize
CONSTRAINTS_MAX = 32  # DeviceConstraintsMaxSize
CONFIG_MAX = 32  # DeviceConfigMaxSize
PARAMETERS_MAX = 10 * 1024  # OpaqueParametersMaxLength, bytes of JSON
EXPRESSION_MAX = 10 * 1024  # CELSelectorExpressionMaxLength, bytes
C_IDENTIFIER_MAX = 32  # DeviceMaxIDLength: the name part of an attribute name
DRIVER_NAME_MAX = 63  # DriverNameMaxLength
# What a selector's `device` may hold (the CEL cost estimate sizes it by these, compile.go).
DEVICE_DOMAIN_MAX = 63  # DeviceMaxDomainLength: the domain of an attribute or capacity name
ATTRIBUTE_VALUE_MAX = 64  # DeviceAttributeMaxValueLength
DEVICE_ATTRIBUTES_MAX = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice


class _Since:
    """A release fact that holds from one minor version on.

    A descriptor rather than one property per fact, so the facts read as the table they are.
    """

    def __init__(self, minor: int) -> None:
        self.minor = minor

    def __get__(self, release: Release, owner: object = None) -> bool:
        return release.minor >= self.minor


@dataclass(frozen=True, slots=True)
class Release:
    """One Kubernetes minor release, as far as DRA claims are concerned."""

    minor: int

    @property
    def name(self) -> str:
        return f"1.{self.minor}"

    # §1.1 feature gates: default state in this release (FEATURE_SINCE has the same minors).
    prioritized_list = _Since(34)
    admin_access = _Since(34)
    device_taints = _Since(36)
    consumable_capacity = _Since(36)

    # What the claim strategy's drop code actually removes, which is less than the gates
    # say before 1.35 (issue 17): `PrepareForCreate` → `dropDisabledFields` in
    # pkg/registry/resource/resourceclaim/strategy.go.
    @property
    def keeps_tolerations(self) -> bool:
        """False only where a drop exists (1.35, kubernetes#132927) and DRADeviceTaints is off.

        Up to 1.34 `dropDisabledFields` handles DRAPrioritizedList, DRAAdminAccess and
        DRAResourceClaimDeviceStatus only, so a 1.33/1.34 server keeps `tolerations`
        with DRADeviceTaints off; #132927 added the drop in 1.35.0, not backported.
        """
        return self.minor < 35 or self.device_taints

    @property
    def keeps_distinct_attribute(self) -> bool:
        """The 1.34 `distinctAttribute` drop ranged over copies of the constraints and
        removed nothing; kubernetes#134962 (1.35.0, not backported) made it work."""
        return self.minor < 35 or self.consumable_capacity

    # §2.3 which fields the API types have at all in this release: `capacity` and
    # `constraints[].distinctAttribute` from 1.34; `derivedAttributes` in the newest (1.37)
    # types, behind an alpha gate.
    has_capacity_fields = _Since(34)
    has_derived_attributes = _Since(37)

    @property
    def derived_attributes(self) -> bool:
        """DRADerivedAttributes is alpha and off by default wherever it exists (§1.1)."""
        return False

    # §1.2 API versions.
    def has_api_version(self, version: str) -> bool:
        """The version exists (possibly off by default) in this release."""
        if version == "v1beta1":
            return 32 <= self.minor < 38
        if version == "v1beta2":
            return 33 <= self.minor < 39
        if version == "v1":
            return self.minor >= 34
        return False

    def serves_by_default(self, version: str) -> bool:
        """Beta APIs are off by default; only v1 (1.34+) is served out of the box."""
        return version == "v1" and self.has_api_version(version)

    # §3.9 validation generations.
    @property
    def short_circuit_too_many(self) -> bool:
        """1.35+: TooMany on a list stops validation of its items (rule 3, 5, 8, 14, 17)."""
        return self.minor >= 35

    @property
    def duplicate_at_name(self) -> bool:
        """Before 1.35 duplicates were reported at `[i].name`, from 1.35 at `[i]` (rule 4, 9)."""
        return self.minor < 35

    @property
    def new_qualified_name_messages(self) -> bool:
        """1.35+ qualified-name messages (rule 20); older ones use Required/"must include a domain"."""
        return self.minor >= 35

    @property
    def rejects_extra_slashes(self) -> bool:
        """No release rejects `a/b/c` as an attribute name (issue 17).

        `validateQualifiedName` (pkg/apis/resource/validation/validation.go) splits at the
        first slash only, so `b/c` is checked as a C identifier nowhere and the name
        passes; the fix (kubernetes#141869) is open and PR #141644 is not merged, so 1.37
        ships without it. Kept as a property so the rule has one place to turn on.
        """
        return False

    @property
    def toleration_effects(self) -> tuple[str, ...]:
        """Rule 16: `None` joined the effects in 1.35 (sorted as upstream lists them)."""
        if self.minor >= 35:
            return ("NoExecute", "NoSchedule", "None")
        return ("NoExecute", "NoSchedule")

    @property
    def admin_access_label(self) -> str:
        """§2.3: the namespace label that allows admin access."""
        if self.minor <= 33:
            return "resource.k8s.io/admin-access"
        return "resource.kubernetes.io/admin-access"


# §1.1: the release in which each gated field's feature became on by default, and its
# gate. Before it a component that lacks the feature ignores the field (skew advice and
# the `draguard skew` report both read this one table).
FEATURE_SINCE: dict[str, tuple[int, str]] = {
    "firstAvailable": (34, "DRAPrioritizedList"),
    "adminAccess": (34, "DRAAdminAccess"),
    "tolerations": (36, "DRADeviceTaints"),
    "capacity": (36, "DRAConsumableCapacity"),
    "distinctAttribute": (36, "DRAConsumableCapacity"),
}
# §1.3: allocation results name `<request>/<subrequest>` from 1.33 (alpha there); a
# driver built against older client libraries does not parse that form.
SUBREQUEST_RESULTS_SINCE = 33

OLDEST = 33
NEWEST = 37
RELEASES = {f"1.{m}": Release(m) for m in range(OLDEST, 40)}
DEFAULT_RELEASE = RELEASES[f"1.{NEWEST}"]


def release(name: str) -> Release:
    """Look up `1.33` … `1.39` (also accepts `v1.35`, `1.35.2`); raises ValueError otherwise."""
    text = name.strip().lstrip("v")
    parts = text.split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        raise ValueError(f"not a Kubernetes version: {name!r} (expected e.g. 1.35)")
    key = f"{int(parts[0])}.{int(parts[1])}"
    if key not in RELEASES:
        known = ", ".join(RELEASES)
        raise ValueError(f"unsupported Kubernetes version {name!r}: draguard knows {known}")
    return RELEASES[key]
