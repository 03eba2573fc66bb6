"""The operator's mutation policy: what `/mutate` changes in DRA claims and templates.

The policy is one YAML (or JSON) document, usually a ConfigMap key mounted as a file
and passed as `draguard serve --policy FILE`. `examples/policy.yaml` is a complete,
commented example. Every key is optional:

```yaml
apiVersion: draguard.io/v1alpha1   # if given, must be this
kind: MutationPolicy               # if given, must be this
catalog:                           # alternatives per device class (KEP-4816 portable templates)
  gpu.example.com:                 # a request for exactly this class is expanded …
    original: first                # first (default) | last | replace
    originalName: requested        # subrequest name for the request's own choice
    alternatives:                  # … into `firstAvailable` with these subrequests
    - name: h100                   # DNS label, unique within the entry
      deviceClassName: h100.nvidia.com
      count: 1                     # every DeviceSubRequest field: selectors (CEL
      selectors:                   # expressions, as strings), allocationMode, count,
      - device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0
      tolerations: []              # tolerations, capacity.requests
limits:
  maxAlternatives: 4               # 1..8: trim every firstAvailable list to its first N
  forbiddenClasses:                # shell-style patterns (fnmatch, case-sensitive)
  - "*.experimental.example.com"
defaults: true                     # apply upstream defaults (§4) to fields still unset
configNamesParent: rewrite         # rewrite (default) | keep (issue 7 `config-names-parent`)
clusterChecks:                     # the cluster-aware checks (issue 20): deny | warn | off
  class-missing: deny              # codes not named warn; also attribute-unknown,
  staleAfter: 300                  # alternative-unsatisfiable, quota-exceeded,
                                   # admin-access-namespace; staleAfter in seconds
```

A file without any document (empty, or only comments) is an error rather than "all
defaults": it is what a reader sees in the middle of a non-atomic rewrite, and the
store must then keep the policy in force. Write `{}` for a policy of defaults only.

What a catalog entry does with the request it expands (only requests that use
`exactly` in v1/v1beta2 or the flat `deviceClassName` in v1beta1 are expanded; a
request that already has `firstAvailable` is left as written):

- `first`: the request's own exact part (class, selectors, count, tolerations,
  capacity, and any field draguard does not know) becomes the first alternative,
  named `originalName`; the catalog's alternatives follow as fallbacks.
- `last`: the same, but the catalog's alternatives are tried first.
- `replace`: only the catalog's alternatives remain, so the class in the template
  may be a portable name the cluster does not even have. Because the request's own
  selectors, tolerations, capacity or a count other than 1 were written for that
  class and mean nothing for the catalog's classes, such a request is left unchanged
  with a warning rather than silently losing them.

A request with `adminAccess: true` is never expanded: subrequests cannot carry admin
access (`upstream-rules.md` §1.3), so moving it would drop the privilege request.

Order of the steps on each CREATE (`draguard.schema.policy.mutation`): catalog expansion,
`maxAlternatives`, the config rewrite, defaults; then `forbiddenClasses` is checked on
the result (so a portable class that `replace` swaps away is fine) and the rule set
runs on the mutated object. Loading checks each catalog entry against the rule set
too, so a CEL selector that does not compile fails the load at its line instead of
denying every claim it would expand. No `--policy` at all is `Policy.empty()`: every
object gets an empty patch.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from draguard.schema.cluster.settings import DEFAULT_SETTINGS, CheckSettings
from draguard.schema.model.paths import FieldPath

Placement = Literal["first", "last", "replace"]
ConfigRewrite = Literal["rewrite", "keep"]

API_VERSION = "draguard.io/v1alpha1"
KIND = "MutationPolicy"


class PolicyError(ValueError):
    """A policy file that cannot be used; names the file, line, column and field.

    `field` is None when the problem has no place in the document (unreadable file,
    bad YAML); the empty path is the document itself, rendered `(document)`.
    """

    def __init__(
        self, source: str, message: str, *, field: FieldPath | None = None,
        line: int | None = None, column: int | None = None,
    ) -> None:
        self.source = source
        self.message = message
        self.field = field
        self.line = line
        self.column = column
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.field is not None:
            return f"{where}: {self.field or '(document)'}: {self.message}"
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A DeviceToleration as the operator wrote it (unset fields stay unset)."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None

    def to_json(self) -> dict[str, Any]:
        names = (("key", self.key), ("operator", self.operator), ("value", self.value),
                 ("effect", self.effect), ("tolerationSeconds", self.toleration_seconds))
        return {name: value for name, value in names if value is not None}


@dataclass(frozen=True, slots=True)
class Alternative:
    """One catalog subrequest; `to_json` gives its DeviceSubRequest wire form."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str | None = None
    count: int | None = None
    tolerations: tuple[Toleration, ...] = ()
    capacity: tuple[tuple[str, str | int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "deviceClassName": self.device_class_name}
        if self.selectors:
            out["selectors"] = [{"cel": {"expression": expr}} for expr in self.selectors]
        if self.allocation_mode is not None:
            out["allocationMode"] = self.allocation_mode
        if self.count is not None:
            out["count"] = self.count
        if self.tolerations:
            out["tolerations"] = [t.to_json() for t in self.tolerations]
        if self.capacity:
            out["capacity"] = {"requests": dict(self.capacity)}
        return out


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """The alternatives the cluster offers for one device class, and where the original goes."""

    device_class_name: str
    alternatives: tuple[Alternative, ...]
    original: Placement = "first"
    original_name: str = "requested"


@dataclass(frozen=True, slots=True)
class Limits:
    """Cluster limits: a cap on alternatives and device classes that are refused."""

    max_alternatives: int | None = None
    forbidden_classes: tuple[str, ...] = ()

    def forbidding_pattern(self, device_class: str) -> str | None:
        """The first `forbiddenClasses` pattern matching the class, or None."""
        for pattern in self.forbidden_classes:
            if fnmatch.fnmatchcase(device_class, pattern):
                return pattern
        return None


@dataclass(frozen=True, slots=True)
class Policy:
    """A parsed, validated policy. The field defaults are those of a policy file `{}`."""

    catalog: Mapping[str, CatalogEntry] = field(default_factory=lambda: MappingProxyType({}))
    limits: Limits = Limits()
    defaults: bool = True
    config_names_parent: ConfigRewrite = "rewrite"
    cluster_checks: CheckSettings = DEFAULT_SETTINGS

    @classmethod
    def empty(cls) -> Policy:
        """No policy at all: `/mutate` answers every object with an empty patch."""
        return cls(defaults=False, config_names_parent="keep")

    @property
    def is_empty(self) -> bool:
        return self == Policy.empty()
