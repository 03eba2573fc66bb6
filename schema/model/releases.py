"""What each Kubernetes release does with DRA claims (`upstream-rules.md` §1–§3.9).

The one table of release facts: the kinds and API versions draguard knows, the API's
size limits, and one frozen `Release` per minor version holding every difference the
rule set, the converter and the skew report need, so that no code compares version
numbers itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

GROUP = "resource.k8s.io"
# The claim kinds draguard validates; anything else is skipped.
KINDS = ("ResourceClaim", "ResourceClaimTemplate")
# The resource.k8s.io versions of those kinds, newest first (§1.2 says which release has which).
API_VERSIONS = ("v1", "v1beta2", "v1beta1")
# §1.2: older versions of those kinds, with the releases that had them (both ends
# included); no release draguard knows serves them by default. v1alpha2 is classic DRA
# (1.26–1.30); v1alpha3 (1.31–1.33) was alpha, off by default, and from 1.34 holds
# DeviceTaintRule only (pkg/apis/resource/v1alpha3/register.go; bicep-types-k8s'
# generated v1.33.0 resource.k8s.io/v1alpha3 still lists ResourceClaim).
RETIRED_VERSIONS: dict[str, tuple[int, int]] = {"v1alpha2": (26, 30), "v1alpha3": (31, 33)}

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
# derivedAttributes (DRADerivedAttributes, alpha from 1.37; staging/src/k8s.io/api/
# resource/v1/types.go): at most 32 per request (`+k8s:maxItems=32`,
# DeviceDerivedAttributesMaxSize), and one CEL cost budget for all of a claim's
# expressions together (DeviceClaimDerivedAttributeCELMaxCost).
DERIVED_ATTRIBUTES_MAX = 32
DERIVED_ATTRIBUTES_COST_MAX = 1_000_000


class _Since:
    """A release fact that holds from one minor version on.

    A descriptor rather than one property per fact, so the facts read as the table they are.
    """

    def __init__(self, minor: int) -> None:
        self.minor = minor

    def __get__(self, release: Release, owner: object = None) -> bool:
        return release.minor >= self.minor


class _Gate(_Since):
    """A feature gate's state in a release: its default from `minor` on, unless
    `--feature-gates` set it (`Release.gates`, checked by `with_gates`)."""

    def __init__(self, gate: str, minor: int) -> None:
        super().__init__(minor)
        self.gate = gate

    def __get__(self, release: Release, owner: object = None) -> bool:
        for name, value in release.gates:
            if name == self.gate:
                return value
        return release.minor >= self.minor


@dataclass(frozen=True, slots=True)
class Release:
    """One Kubernetes minor release, as far as DRA claims are concerned."""

    minor: int
    # Gates set by `--feature-gates` (name, value), sorted; empty = every gate at its
    # default. Only `with_gates` makes them, after checking them as kube-apiserver does.
    gates: tuple[tuple[str, bool], ...] = ()

    @property
    def name(self) -> str:
        return f"1.{self.minor}"

    # §1.1 feature gates: default state in this release (FEATURE_SINCE has the same
    # minors), or the value `--feature-gates` gave.
    prioritized_list = _Gate("DRAPrioritizedList", 34)
    admin_access = _Gate("DRAAdminAccess", 34)
    device_taints = _Gate("DRADeviceTaints", 36)
    consumable_capacity = _Gate("DRAConsumableCapacity", 36)

    def with_gates(self, values: Mapping[str, bool]) -> Release | str:
        """This release with `--feature-gates` values applied, or the error a
        kube-apiserver of this release gives at start-up (see `check_gate`)."""
        for gate, value in values.items():
            problem = check_gate(self, gate, value)
            if problem is not None:
                return problem
        merged = {**dict(self.gates), **values}
        # A gate at its default is left out, so that the release stays the table's own.
        changed = tuple(sorted((gate, value) for gate, value in merged.items()
                               if value != _default(self, gate)))
        return self if changed == self.gates else Release(self.minor, changed)

    def gate_enabled(self, gate: str) -> bool:
        """The gate's value here: set by `--feature-gates`, else its default (False when
        this release does not have it)."""
        for name, value in self.gates:
            if name == gate:
                return value
        spec = gate_spec(self, gate)
        return spec is not None and spec.default

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
        """DRADerivedAttributes: alpha and off by default wherever it exists (§1.1),
        on when `--feature-gates` says so."""
        return self.gate_enabled("DRADerivedAttributes")

    def derived_attributes_on(self, gates: frozenset[str]) -> bool:
        """The field is kept: the release has it and DRADerivedAttributes is on, by
        default (never yet) or by `Options.feature_gates`."""
        if not self.has_derived_attributes:
            return False
        return self.derived_attributes or ALPHA_GATES["derivedAttributes"] in gates

    # §1.2 API versions.
    def has_api_version(self, version: str) -> bool:
        """The version exists (possibly off by default, or behind `api_gate`) in this release."""
        if version == "v1beta1":
            return 32 <= self.minor <= 38
        if version == "v1beta2":
            return 33 <= self.minor < 39
        if version == "v1":
            return self.minor >= 34
        return False

    def serves_by_default(self, version: str) -> bool:
        """Beta APIs are off by default; only v1 (1.34+) is served out of the box."""
        return version == "v1" and self.has_api_version(version)

    def api_gate(self, version: str) -> str | None:
        """The feature gate without which this release does not install `version` at all.

        1.38 installs resource.k8s.io/v1beta1 only with DRAResourceV1beta1API on, off by
        default (pkg/apis/resource/install/install.go: "Not installing
        resource.k8s.io/v1beta1, DRAResourceV1beta1API feature gate is disabled"; its
        test case is named "disabled-by-default"), never as a preferred version. The
        gate is not in the 1.37 table (pkg/features/kube_features.go at 1.37), so 1.37
        installs v1beta1 as before; its prerelease lifecycle says removed in 1.38, and
        no release after 1.38 is known to have it.
        """
        if version != "v1beta1" or self.minor < 38 or self.gate_enabled("DRAResourceV1beta1API"):
            return None  # with `--feature-gates=DRAResourceV1beta1API=true` installed again
        return "DRAResourceV1beta1API"

    @property
    def dynamic_resource_allocation_gate(self) -> bool:
        """Whether the `DynamicResourceAllocation` gate still exists (GA and locked on
        since 1.35; kube_features.go: "remove completely in 1.38", kubernetes#134459).
        Claims are unaffected either way; a component started with
        `--feature-gates=DynamicResourceAllocation=true` fails to start once it is gone."""
        return self.minor < 38

    @property
    def claim_version(self) -> str:
        """The version to write claims in for this release: v1 from 1.34, else v1beta2
        (1.33: beta, off by default)."""
        return "v1" if self.minor >= 34 else "v1beta2"

    def no_such_version(self, kind: str, version: str) -> str:
        """What a client hears for `kind` in a version this release does not serve at all.

        The apiserver has no resource there (404); kubectl's REST mapping says it first,
        in these words. Then the version that serves the object instead.
        """
        api_version = f"{GROUP}/{version}"
        text = (f'no matches for kind "{kind}" in version "{api_version}": Kubernetes '
                f"{self.name} serves it as {GROUP}/{self.claim_version}")
        served = RETIRED_VERSIONS.get(version)
        if served is not None:
            first, last = served
            text += f" ({version} had it in 1.{first}–1.{last}"
            if first <= self.minor <= last:
                text += ", an alpha API off by default, which draguard does not check"
            text += ")"
        return text

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
    def declarative_beta(self) -> bool:
        """1.37+: `+k8s:beta(since: "1.37")` declarative rules are enforced (issue 17).

        `DeclarativeValidationBeta` is on by default from 1.36, and the claim types' tags
        carry the beta prefix from 1.37 (alpha, always shadowed, in 1.36). Enforced, a
        beta error replaces the hand-written error it covers (same type, field and
        origin) and is appended after all hand-written errors: apiserver
        pkg/registry/rest `ValidateDeclarativelyWithMigrationChecks`, apimachinery
        pkg/api/validate `FilterCoveredHandwrittenErrors`.
        """
        return self.minor >= 37

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
# Alpha gates whose fields exist only behind them (off by default wherever they exist).
ALPHA_GATES: dict[str, str] = {"derivedAttributes": "DRADerivedAttributes"}


@dataclass(frozen=True, slots=True)
class GateSpec:
    """A feature gate from one minor on: its default and whether it is locked to it."""

    since: int
    default: bool
    locked: bool = False


# The DRA feature gates, as kube-apiserver's versioned specs list them
# (`defaultVersionedKubernetesFeatureGates`, pkg/features at 1.37: each gate's
# {Version, Default, PreRelease, LockToDefault} list), with the first minor that no
# longer has the gate (the "remove in 1.xx" comments there; 1.38+ are those plans).
FEATURE_GATES: dict[str, tuple[GateSpec, ...]] = {
    "DynamicResourceAllocation": (GateSpec(26, False), GateSpec(34, True), GateSpec(35, True, True)),
    "DRAPrioritizedList": (GateSpec(33, False), GateSpec(34, True), GateSpec(37, True, True)),
    "DRAAdminAccess": (GateSpec(32, False), GateSpec(34, True), GateSpec(36, True, True)),
    "DRADeviceTaints": (GateSpec(33, False), GateSpec(36, True), GateSpec(38, True, True)),
    "DRAConsumableCapacity": (GateSpec(34, False), GateSpec(36, True)),
    "DRADerivedAttributes": (GateSpec(37, False),),
    "DRAListTypeAttributes": (GateSpec(36, False),),
    "DRAResourceClaimDeviceStatus": (GateSpec(32, False), GateSpec(33, True), GateSpec(37, True, True)),
    "DRADeviceBindingConditions": (GateSpec(34, False), GateSpec(36, True)),
    "DRAPartitionableDevices": (GateSpec(33, False), GateSpec(36, True)),
    "DRAExtendedResource": (GateSpec(34, False), GateSpec(36, True), GateSpec(37, True, True)),
    "DRADeviceTaintRules": (GateSpec(35, False), GateSpec(37, True), GateSpec(38, True, True)),
    "DRADeviceCompatibilityGroups": (GateSpec(37, False),),
    "DRAOptionalNodeOperations": (GateSpec(37, False),),
    # Release.api_gate: 1.38 installs resource.k8s.io/v1beta1 only with it on.
    "DRAResourceV1beta1API": (GateSpec(38, False),),
}
GATE_REMOVED: dict[str, int] = {
    "DynamicResourceAllocation": 38, "DRAAdminAccess": 39, "DRAPrioritizedList": 40,
    "DRAResourceClaimDeviceStatus": 40, "DRAExtendedResource": 40, "DRADeviceTaints": 41,
    "DRADeviceTaintRules": 41,
}
# Values draguard cannot imitate: the gate changes how claims are checked in a way the
# rules do not model (the CEL environment, the whole API group, an API version).
UNMODELLED: dict[tuple[str, bool], str] = {
    ("DynamicResourceAllocation", False): "the resource.k8s.io API switched off",
    ("DRAListTypeAttributes", True): "list-type attributes in the CEL environment",
}


def gate_spec(release: Release, gate: str) -> GateSpec | None:
    """The gate's spec in `release`; None when that release does not have it."""
    specs = FEATURE_GATES.get(gate, ())
    if release.minor >= GATE_REMOVED.get(gate, 99):
        return None
    current = [spec for spec in specs if spec.since <= release.minor]
    return current[-1] if current else None


# strconv.ParseBool's spellings (Go strconv/atob.go), which `--feature-gates` takes.
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_feature_gates(text: str) -> dict[str, bool] | str:
    """`A=true,B=false` → {A: True, B: False}, as component-base featuregate `Set` reads
    the flag (feature_gate.go): empty items skipped, key and value trimmed, the value one
    of strconv.ParseBool's spellings; else the error in its words."""
    gates: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            return f"missing bool value for {key}"
        if value not in _TRUE + _FALSE:
            return (f"invalid value of {key}={value}, err: "
                    f'strconv.ParseBool: parsing "{value}": invalid syntax')
        gates[key] = value in _TRUE
    return gates


def _default(release: Release, gate: str) -> bool:
    spec = gate_spec(release, gate)
    return spec is not None and spec.default


def check_gate(release: Release, gate: str, value: bool) -> str | None:
    """Why `--feature-gates=gate=value` is refused for `release`, or None.

    component-base featuregate `unsafeSetFromMap` (feature_gate.go): a name the binary
    does not know is "unrecognized feature gate: X" (a 1.36 kube-apiserver does not know
    a 1.37 gate, nor a 1.38 one the gate removed in 1.38); a gate with LockToDefault
    set to another value is "cannot set feature gate X to V, feature is locked to D".
    """
    spec = gate_spec(release, gate)
    if spec is None:
        if gate not in FEATURE_GATES:
            return (f"unrecognized feature gate: {gate} (draguard knows the DRA gates: "
                    f"{', '.join(sorted(FEATURE_GATES))})")
        first = FEATURE_GATES[gate][0].since
        removed = GATE_REMOVED.get(gate)
        why = (f"removed in 1.{removed}" if removed is not None and release.minor >= removed
               else f"added in 1.{first}")
        return f"unrecognized feature gate: {gate} (Kubernetes {release.name} does not have it: {why})"
    if spec.locked and value != spec.default:
        return (f"cannot set feature gate {gate} to {str(value).lower()}, "
                f"feature is locked to {str(spec.default).lower()}")
    if value != spec.default and (gate, value) in UNMODELLED:
        return (f"draguard does not imitate {gate}={str(value).lower()} "
                f"({UNMODELLED[gate, value]}); leave it at its default "
                f"({str(spec.default).lower()}) in {release.name}")
    return None


def gate_of(field: str) -> str:
    """The feature gate whose being off makes a release drop `field` (§3.8)."""
    if field in FEATURE_SINCE:
        return FEATURE_SINCE[field][1]
    return ALPHA_GATES.get(field, "its feature gate")


# The supported version skew (https://kubernetes.io/releases/version-skew-policy/):
# kube-scheduler and kube-controller-manager "may be up to one minor version older" than
# kube-apiserver; kubelet "may be up to three minor versions older" (and with it the DRA
# drivers it calls). A component within that window that lacks a feature is a real risk
# for a cluster at the target release; one outside it is not (issue 17).
CONTROL_PLANE_SKEW = 1
KUBELET_SKEW = 3


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
