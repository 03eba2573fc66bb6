"""The policy's limits: trimming long alternative lists and refusing forbidden classes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from draguard.schema.advice.codes import Advice
from draguard.schema.model.errors import FieldError, forbidden
from draguard.schema.model.paths import FieldPath
from draguard.schema.policy.claimspec import ClaimSite, Warn, alternatives_of, dict_items
from draguard.schema.policy.model import Limits


def trim_alternatives(devices: dict[str, Any], *, site: ClaimSite, limits: Limits,
                      warn: Warn) -> None:
    """Keep the first `maxAlternatives` entries of every `firstAvailable`, in place.

    The tail goes because the list is a preference order (§1.3): the cluster keeps
    the user's favourites. It applies to lists the user wrote too: the limit exists
    for the cluster (quota charges every alternative, issue 7), whoever wrote them.
    """
    cap = limits.max_alternatives
    if cap is None:
        return
    for i, request in dict_items(devices.get("requests")):
        alternatives = alternatives_of(request)
        if alternatives is None or len(alternatives) <= cap:
            continue
        dropped = [_name(a) for a in alternatives[cap:]]
        del alternatives[cap:]
        warn(Advice(site.request_path(i).child("firstAvailable"), "policy-alternatives-trimmed",
                    f"kept the first {cap} of {cap + len(dropped)} alternatives (policy "
                    f"limits.maxAlternatives); dropped {', '.join(dropped)}"))


def _name(alternative: Any) -> str:
    name = alternative.get("name") if isinstance(alternative, dict) else None
    return repr(name) if isinstance(name, str) else "an unnamed alternative"


def forbidden_classes(devices: dict[str, Any], *, site: ClaimSite,
                      limits: Limits) -> Iterator[FieldError]:
    """A Forbidden error at every device class name the cluster refuses.

    Paths are the internal shape's (contract §3): `…exactly.deviceClassName` also for
    v1beta1's flat field, `…firstAvailable[j].deviceClassName` for alternatives.
    """
    if not limits.forbidden_classes:
        return
    for i, request in dict_items(devices.get("requests")):
        exact = request if site.flat else request.get("exactly")
        if isinstance(exact, dict):
            yield from _check(exact.get("deviceClassName"), site.exact_path(i), limits)
        for j, alternative in dict_items(request.get("firstAvailable")):
            path = site.request_path(i).child("firstAvailable").index(j)
            yield from _check(alternative.get("deviceClassName"), path, limits)


def _check(device_class: Any, path: FieldPath, limits: Limits) -> Iterator[FieldError]:
    if not isinstance(device_class, str):
        return
    pattern = limits.forbidding_pattern(device_class)
    if pattern is not None:
        yield forbidden(path.child("deviceClassName"),
                        f"device class {device_class!r} is not allowed in this cluster "
                        f"(draguard policy limits.forbiddenClasses: {pattern!r})")
