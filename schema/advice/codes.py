"""The warning system: the `Advice` record, every code it may carry, and silencing.

Every warning draguard gives beyond upstream's rules is an `Advice` with one of the
`CODES` (tests/schema/test_advice_codes.py checks both directions: each code is
emitted by some test document, and nothing emits a code missing here). Front ends
refuse unknown codes where users name them (`lint --disable`), and the
`draguard.io/ignore` annotation silences them per object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import Release

IGNORE_ANNOTATION = "draguard.io/ignore"
# The codes that annotation cannot silence (see their comment in CODES).
UNSILENCEABLE = frozenset(("failure-open-error", "failure-open-timeout"))

CODES = (
    "config-names-parent",
    "quota-charge",
    "all-mode-in-alternative",
    "alternative-counts-differ",
    "devices-over-32",
    "combinations",
    "pod-names-subrequest",
    "consumer-profile",
    "class-config-request-names",
    "scoring-crash",
    # What the selected release drops on create while a feature gate is off (§3.8).
    "release-drops-field",
    # Release skew (advice/skew.py): features older components lack.
    "skew-first-available",
    "skew-admin-access",
    "skew-tolerations",
    "skew-capacity",
    "skew-subrequest-results",
    "skew-distinct-attribute",
    # The admission webhook about the review itself (webhook/review.py), at no field path.
    # `not-checked`: the rule set skipped the object (a kind or version it does not know);
    # the object's author may silence it like any other code.
    "not-checked",
    # Failure mode open: the webhook allowed the object unchecked after an internal error
    # or after its review deadline. These cannot be silenced by the annotation: the
    # object's author must not be able to hide that admission control was bypassed (the
    # object may be the very cause of the error or the timeout).
    "failure-open-error",
    "failure-open-timeout",
    # The operator's mutation policy (policy/): what it did or could not do.
    "policy-not-expanded",
    "policy-expanded",
    "policy-alternatives-trimmed",
    "policy-config-not-rewritten",
    # Cluster-aware checks (cluster/checks.py, issue 20): need other objects than the claim.
    "class-missing",
    "attribute-unknown",
    "alternative-unsatisfiable",
    "quota-exceeded",
    "admin-access-namespace",
    # The webhook's cluster view is loading or stale, so those checks did not run.
    "cluster-view-stale",
)


@dataclass(frozen=True, slots=True, init=False)
class Advice:
    """One warning: where, a stable code, and what to do about it."""

    path: FieldPath
    code: str
    message: str
    release_note: bool = False  # about a bug of the selected release (for `draguard skew`)

    def __init__(
        self, path: FieldPath, code: str, message: str, release_note: bool = False
    ) -> None:
        # The generated __init__ of a frozen dataclass looks `object.__setattr__` up anew
        # for every field; a finding of every distinct claim the webhook judges is built
        # here, so the lookup is done once, at import (same fields, same frozen record).
        _set(self, "path", path)
        _set(self, "code", code)
        _set(self, "message", message)
        _set(self, "release_note", release_note)

    @property
    def field(self) -> str:
        return str(self.path)


_set = object.__setattr__


@dataclass(frozen=True, slots=True)
class Version:
    """A Kubernetes version down to the patch, when known (release notes need patches)."""

    release: Release
    patch: int | None = None

    def before(self, minor: int, patch: int) -> bool:
        """True when this version is `1.minor.x` with x < patch (unknown patch: assume affected)."""
        return self.release.minor == minor and (self.patch is None or self.patch < patch)

    def within(self, minor: int, first: int, last: int) -> bool:
        return self.release.minor == minor and (self.patch is None or first <= self.patch <= last)


def ignored_codes(metadata: Any) -> frozenset[str]:
    """Codes silenced by the object's `draguard.io/ignore: code,code` annotation."""
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    raw = annotations.get(IGNORE_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(raw, str):
        return _NONE
    return frozenset(code.strip() for code in raw.split(",") if code.strip()) - UNSILENCEABLE


_NONE: frozenset[str] = frozenset()


def unknown_codes(codes: Iterable[str]) -> list[str]:
    """The given codes that are not in `CODES`, in the order given."""
    return [code for code in codes if code not in CODES]


def refusal(codes: Iterable[str]) -> str | None:
    """A message naming the unknown codes and listing the valid ones; None when all are known."""
    unknown = unknown_codes(codes)
    if not unknown:
        return None
    names = ", ".join(unknown)
    noun = "code" if len(unknown) == 1 else "codes"
    return f"unknown warning {noun}: {names} (valid: {', '.join(CODES)})"
