"""The one entry point every front end uses: read → default → convert → drop → rules.

`validate_object` follows the apiserver's create pipeline (`upstream-rules.md` §3.0);
`validate_update` its update pipeline (§3.6). Both accept any JSON-like value and
never raise for bad input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draguard.schema.errors import FieldError
from draguard.schema.options import DEFAULT_OPTIONS, Options


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome for one document.

    `skipped` is true for anything that is not a ResourceClaim or ResourceClaimTemplate
    of a known resource.k8s.io version; such documents carry no errors.
    `shape` is `v1`, `v1beta2`, `v1beta1` or `parallel`. `internal` is the object in the
    hub (v1) shape after defaulting, conversion and gate drops, when it could be built.
    """

    kind: str | None
    api_version: str | None
    name: str | None
    namespace: str | None
    shape: str | None
    errors: tuple[FieldError, ...] = ()
    skipped: bool = False
    skip_reason: str = ""
    internal: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def valid(self) -> bool:
        return not self.skipped and not self.errors


def validate_object(obj: Any, *, options: Options = DEFAULT_OPTIONS) -> Verdict:
    """Validate one object as the apiserver would on create."""
    raise NotImplementedError


def validate_update(old: Any, new: Any, *, options: Options = DEFAULT_OPTIONS) -> Verdict:
    """Validate an update as the apiserver would: metadata rules plus an immutable spec."""
    raise NotImplementedError
