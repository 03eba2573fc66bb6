"""`/mutate` as a pure function: object + policy → RFC 6902 patch, denial or nothing.

The policy edits a deep copy of the raw JSON object (never a decoded struct, so a
field draguard does not know survives byte for byte), then `jsonpatch` diffs the
original against the copy: the patch touches only what the policy changed. Steps,
in order: catalog expansion, `limits.maxAlternatives`, the `config-names-parent`
rewrite (issue 7 §4, after expansion so it sees the final alternatives), upstream
defaults (§4, last so that new alternatives are defaulted too), then the checks:
`limits.forbiddenClasses`, and the rule set on the mutated object when anything
changed (issue 4 §3: a mutation must never produce an object the apiserver rejects).

Call it for CREATE only: a claim's spec is immutable (§3.6), so a patch on UPDATE
could only turn an accepted update into "field is immutable".
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from draguard.schema.advice.codes import Advice, ignored_codes
from draguard.schema.model.defaults import default_devices
from draguard.schema.model.errors import ErrorType, FieldError
from draguard.schema.model.options import Options
from draguard.schema.model.releases import REQUESTS_MAX
from draguard.schema.policy.catalog import expand_requests
from draguard.schema.policy.claimspec import locate
from draguard.schema.policy.limits import forbidden_classes, trim_alternatives
from draguard.schema.policy.model import Policy
from draguard.schema.policy.references import rewrite_parent_references
from draguard.schema.validate import validate_object


@dataclass(frozen=True, slots=True)
class Mutation:
    """The answer to one object: a JSON patch, or errors (deny), plus warnings for the user.

    A denial carries no patch. `warnings` are `Advice` with `policy-*` codes, less
    those the object silences (the HTTP layer renders them and enforces the
    apiserver's size limits).
    """

    patch: list[dict[str, Any]] = field(default_factory=list)
    errors: tuple[FieldError, ...] = ()
    warnings: tuple[Advice, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class Applied:
    """The policy applied to a copy of the object, before diffing and the rule set."""

    mutated: Any
    errors: tuple[FieldError, ...] = ()
    warnings: tuple[Advice, ...] = ()
    notes: tuple[Advice, ...] = ()


def apply_policy(obj: Any, policy: Policy) -> Applied:
    """Apply every policy step to a deep copy of `obj`; `obj` itself is never changed."""
    site = locate(obj)
    if site is None or policy.is_empty or _over_request_limit(site.devices(obj)):
        return Applied(obj)
    mutated = copy.deepcopy(obj)
    devices = site.devices(mutated)
    if devices is None:
        return Applied(mutated)
    warnings: list[Advice] = []
    notes: list[Advice] = []
    expand_requests(devices, site=site, policy=policy, warn=warnings.append, note=notes.append)
    trim_alternatives(devices, site=site, limits=policy.limits, warn=warnings.append)
    if policy.config_names_parent == "rewrite":
        rewrite_parent_references(devices, site=site, warn=warnings.append)
    if policy.defaults:
        default_devices(devices, site.version)
    errors = tuple(forbidden_classes(devices, site=site, limits=policy.limits))
    ignored = ignored_codes(obj.get("metadata"))
    return Applied(mutated, errors, _heard(warnings, ignored), _heard(notes, ignored))


def _heard(advice: list[Advice], ignored: frozenset[str]) -> tuple[Advice, ...]:
    """The advice less the codes the object silences (`draguard.io/ignore`)."""
    return tuple(item for item in advice if item.code not in ignored)


def _over_request_limit(devices: dict[str, Any] | None) -> bool:
    """True when the object has more requests than upstream accepts (§3.2, at most 32).

    The apiserver rejects such an object whatever the patch says, and expanding, diffing
    and re-validating thousands of requests takes seconds of a worker thread (found by
    tests/hostile): leave it unchanged for the validating webhook to deny.
    """
    requests = devices.get("requests") if devices is not None else None
    return isinstance(requests, list) and len(requests) > REQUESTS_MAX


def make_patch(original: Any, mutated: Any) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn `original` into `mutated` (JSON pointers escaped)."""
    operations: list[dict[str, Any]] = jsonpatch.make_patch(original, mutated).patch
    return operations


def mutate(obj: Any, *, policy: Policy, options: Options) -> Mutation:
    """Apply the policy to one admission object; never raises for bad input."""
    applied = apply_policy(obj, policy)
    # Equality first: most objects need no change, and it is ~100× cheaper than the diff.
    # (Python's `==` equates 1, 1.0 and True, but no policy step ever swaps those.)
    if applied.mutated is obj or applied.mutated == obj:
        return Mutation(errors=applied.errors, warnings=applied.warnings)
    patch = make_patch(obj, applied.mutated)
    errors = applied.errors
    if patch:
        errors += tuple(_rejections(validate_object(applied.mutated, options=options).errors))
    if errors:
        # The error paths are those of the expanded object: say how it was expanded.
        return Mutation(errors=errors, warnings=applied.warnings + applied.notes)
    return Mutation(patch=patch, warnings=applied.warnings)


def _rejections(errors: tuple[FieldError, ...]) -> Iterator[FieldError]:
    """The rule-set errors that would make the apiserver reject the mutated object.

    `Unknown` (a field draguard's shapes lack) is not one: the admission object was
    decoded by the apiserver itself, so any field in it is one the cluster knows,
    typically from a newer release than draguard's tables. Denying it would block
    claims the cluster accepts; the field is carried through the patch untouched.
    """
    return (error for error in errors if error.type is not ErrorType.UNKNOWN)
