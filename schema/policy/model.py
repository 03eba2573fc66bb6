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
import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

Placement = Literal["first", "last", "replace"]
ConfigRewrite = Literal["rewrite", "keep"]

API_VERSION = "draguard.io/v1alpha1"
KIND = "MutationPolicy"
# FirstAvailableDeviceRequestMaxSize (upstream-rules.md §2.4).
MAX_ALTERNATIVES = 8


class PolicyError(ValueError):
    """A policy file that cannot be used; names the file, line, column and field."""

    def __init__(
        self, source: str, message: str, *, field: str = "", line: int | None = None,
        column: int | None = None,
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
        if self.field:
            return f"{where}: {self.field}: {self.message}"
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

    @classmethod
    def empty(cls) -> Policy:
        """No policy at all: `/mutate` answers every object with an empty patch."""
        return cls(defaults=False, config_names_parent="keep")

    @property
    def is_empty(self) -> bool:
        return self == Policy.empty()


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate a policy file; raise PolicyError for anything unusable."""
    source = os.fspath(path)
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise PolicyError(source, f"cannot read the policy: {exc.strerror or exc}") from exc
    return parse_policy(data, source=source)


def parse_policy(data: bytes | str, *, source: str = "<policy>") -> Policy:
    """Parse policy text (YAML 1.2, so JSON too); raise PolicyError naming line and field."""
    from draguard.schema.policy.file import read_policy

    return read_policy(data, source=source)


@dataclass(frozen=True, slots=True)
class PolicyStatus:
    """What the store knows, for `/metrics` and logs: last good load and last failure."""

    path: str | None
    generation: int
    sha256: str | None
    failures: int
    error: str | None


log = logging.getLogger("draguard.policy")

_FileSignature = tuple[int, int, int, int]
# Files modified this recently are re-read even when their stat looks unchanged: on a
# file system with coarse timestamps a second same-size write would be invisible
# (git's "racily clean" index entries, same cure).
_RACY_SECONDS = 2.0


class PolicyStore:
    """The current policy from a file, reloaded when it changes, keeping the last good one.

    `current()` costs one `stat` at most every `check_interval` seconds. A change of
    inode, size or modification time (a ConfigMap update swaps a symlink, so the inode
    changes) triggers a read; a new SHA-256 triggers a parse. An unreadable or invalid
    file leaves the last good policy in force (`Policy.empty()` if there never was
    one) and is recorded in `status()` for the metric and the log. Thread-safe.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None, *, check_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        self._path = os.fspath(path) if path is not None else None
        self._on_failure = on_failure  # e.g. a metric's inc(): once per distinct failure
        self._interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._policy = Policy.empty()
        self._generation = 0
        self._good_digest: str | None = None
        self._seen_digest: str | None = None
        self._signature: _FileSignature | None = None
        self._racy = False
        self._checked_at: float | None = None
        self._failures = 0
        self._error: str | None = None

    def current(self) -> Policy:
        if self._path is None:
            return self._policy
        with self._lock:
            now = self._clock()
            if self._checked_at is None or now - self._checked_at >= self._interval:
                self._checked_at = now
                self._refresh(self._path)
            return self._policy

    def status(self) -> PolicyStatus:
        with self._lock:
            return PolicyStatus(self._path, self._generation, self._good_digest,
                                self._failures, self._error)

    def _refresh(self, path: str) -> None:
        try:
            st = os.stat(path)
        except OSError as exc:
            self._signature = None
            self._seen_digest = None
            self._fail(f"{path}: cannot read the policy: {exc.strerror or exc}")
            return
        signature = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        if signature == self._signature and not self._racy:
            return
        self._signature = signature
        self._racy = time.time() - st.st_mtime_ns / 1e9 < _RACY_SECONDS
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            self._signature = None
            self._fail(f"{path}: cannot read the policy: {exc.strerror or exc}")
            return
        digest = hashlib.sha256(data).hexdigest()
        if digest == self._seen_digest:
            return  # same bytes as last time: same outcome, already recorded
        self._seen_digest = digest
        if digest == self._good_digest:
            self._error = None  # back to the policy in force
            return
        try:
            policy = parse_policy(data, source=path)
        except PolicyError as exc:
            self._fail(str(exc))
            return
        self._policy = policy
        self._good_digest = digest
        self._generation += 1
        self._error = None
        log.info("policy %s loaded: generation %d, sha256 %s", path, self._generation, digest)

    def _fail(self, message: str) -> None:
        # Count a failure once per distinct problem, not once per check of the same file.
        if message != self._error:
            self._failures += 1
            log.error("policy not loaded, keeping generation %d: %s", self._generation, message)
            if self._on_failure is not None:
                self._on_failure()
        self._error = message


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_dns_label(text: str) -> bool:
    """Request and subrequest names (`upstream-rules.md` §3.2)."""
    return len(text) <= 63 and _DNS_LABEL.fullmatch(text) is not None


def is_dns_subdomain(text: str) -> bool:
    """Device class names (`upstream-rules.md` §3.2)."""
    return len(text) <= 253 and _DNS_SUBDOMAIN.fullmatch(text) is not None
