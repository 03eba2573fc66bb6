"""What each Kubernetes release does with a claim (issue 3 §4, contract §4 `skew`).

For every release in a range: is the document's apiVersion there and served by
default, which fields the release drops while their feature gate is off by default
(`upstream-rules.md` §3.8), the verdict of that release's validation after the drop,
and the changed meaning in words. Also the view of components (scheduler, kubelet,
drivers) that are older than the features the claim uses.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from draguard.schema.advice.codes import Advice
from draguard.schema.advice.skew import SKEW_CODES
from draguard.schema.model.errors import FieldError
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import DEFAULT_RELEASE, FEATURE_SINCE, GROUP, RELEASES, Release
from draguard.schema.model.shapes import identify, unserved_version
from draguard.schema.validate import validate_object

_GATE_OF = {name: gate for name, (_, gate) in FEATURE_SINCE.items()}


@dataclass(frozen=True, slots=True)
class ReleaseView:
    """One release's treatment of one document."""

    version: str
    served: bool
    dropped: tuple[FieldPath, ...]
    verdict: str  # accepted | changed | rejected
    errors: tuple[FieldError, ...]
    explanation: str
    if_enabled: ReleaseView | None = None
    notes: tuple[str, ...] = ()  # known bugs of this release that the document runs into

    @property
    def fine(self) -> bool:
        return self.verdict == "accepted"


def releases_between(first: str, last: str) -> list[Release]:
    lo, hi = RELEASES[first].minor, RELEASES[last].minor
    if lo > hi:
        raise ValueError(f"--from {first} is after --to {last}")
    return [r for r in RELEASES.values() if lo <= r.minor <= hi]


def skew_document(obj: Any, releases: list[Release]) -> list[ReleaseView] | None:
    """Per release, what happens to `obj`; None when it is not a DRA claim or template."""
    doc_type = identify(obj)
    if doc_type is None:
        if not releases or unserved_version(obj, releases[0]) is None:
            return None
        return [_unserved_view(obj, release) for release in releases]
    return [_view(obj, doc_type.version, release) for release in releases]


def _unserved_view(obj: Any, release: Release) -> ReleaseView:
    """A claim in a version no release serves (v1alpha3): rejected everywhere (issue 17)."""
    err = unserved_version(obj, release)
    detail = err.detail if err is not None else ""
    return ReleaseView(release.name, False, (), "rejected", (), detail)


def _view(obj: Any, version: str, release: Release) -> ReleaseView:
    api_version = f"{GROUP}/{version}"
    if not release.has_api_version(version):
        explanation = _absence(api_version, version, release)
        # Also say what the release's gates would do, e.g. 1.33 dropping firstAvailable.
        dropped = validate_object(
            obj, options=Options(release=release, default_namespace="default")
        ).dropped
        words = "; ".join(describe_drops(obj, dropped))
        # `dropped` lists what the words describe, so that JSON readers see it too.
        return ReleaseView(
            release.name,
            False,
            dropped,
            "rejected",
            (),
            f"{explanation}; and {words}" if words else explanation,
        )
    enabled = _enabled_view(obj, release)
    if release.serves_by_default(version):
        return enabled
    gate = release.api_gate(version)
    how = f"--runtime-config={api_version}=true"
    if gate is not None:
        how = f"the {gate} feature gate (off by default) and {how}"
    explanation = (
        f"{api_version} is a beta API, not served by default in {release.name} (enable it with "
        f"{how})"
        # The words, not just the verdict (which `if_enabled` carries): in 1.33 no version
        # that has firstAvailable is served by default, so this is the only place its drop
        # is explained.
        + (f"; if enabled: {enabled.explanation}" if enabled.explanation else "")
    )
    return ReleaseView(
        release.name,
        False,
        (),
        "rejected",
        (),
        explanation,
        if_enabled=enabled,
        notes=enabled.notes,
    )


def _absence(api_version: str, version: str, release: Release) -> str:
    removed = {"v1beta1": 39, "v1beta2": 39}.get(version)
    if removed is not None and release.minor >= removed:
        if version == "v1beta1":  # lifecycle: removed in 1.38, where a gate still installs it
            return f"{api_version} was removed in 1.38 (1.38 installs it only with DRAResourceV1beta1API)"
        return f"{api_version} was removed in 1.{removed}"
    introduced = {"v1beta1": 32, "v1beta2": 33, "v1": 34}[version]
    return f"{api_version} does not exist before 1.{introduced}"


def _enabled_view(obj: Any, release: Release) -> ReleaseView:
    verdict = validate_object(obj, options=Options(release=release, default_namespace="default"))
    dropped = verdict.dropped
    state = "rejected" if verdict.errors else ("changed" if dropped else "accepted")
    words = list(describe_drops(obj, dropped))
    if state == "rejected":
        more = f" (+{len(verdict.errors) - 1} more)" if len(verdict.errors) > 1 else ""
        words.append(f"rejected: {verdict.errors[0]}{more}")
    notes = tuple(f"{w.field}: {w.message}" for w in verdict.warnings if w.release_note)
    return ReleaseView(
        release.name, True, dropped, state, verdict.errors, "; ".join(words), notes=notes
    )


def describe_drops(obj: Any, dropped: tuple[FieldPath, ...]) -> Iterator[str]:
    """The meaning of each dropped field, in words ("request `gpu` loses its 3 alternatives…")."""
    if not dropped:
        return
    # The newest release drops nothing, so its internal object still holds every field.
    full = validate_object(obj, options=Options(default_namespace="default")).internal or {}
    for path in dropped:
        field = str(path.parts[-1])
        gate = _GATE_OF.get(field, "its feature gate")
        request = _request_of(full, path)
        name = request.get("name", "?") if request else "?"
        if field == "firstAvailable":
            count = len(_lookup(full, path) or [])
            what = "its only alternative" if count == 1 else f"its {count} alternatives"
            yield f"request `{name}` loses {what} and becomes empty ({gate} is off by default)"
        elif field == "distinctAttribute":
            yield f"{path} loses distinctAttribute ({gate} is off by default)"
        else:
            yield f"request `{name}` loses {field} at {path} ({gate} is off by default)"


def _request_of(document: dict[str, Any], path: FieldPath) -> dict[str, Any] | None:
    parts = path.parts
    if "requests" not in parts:
        return None
    at = parts.index("requests")
    node = _lookup(document, FieldPath(parts[: at + 2]))
    return node if isinstance(node, dict) else None


def _lookup(document: Any, path: FieldPath) -> Any:
    node = document
    for part in path.parts:
        if not _has(node, part):
            return None
        node = node[part]
    return node


def _has(node: Any, part: Any) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def skew_advice(obj: Any, releases: Sequence[Release] = ()) -> list[Advice]:
    """The `skew-*` advice for clusters at `releases` (default: the newest): the
    scheduler/kubelet/driver view within each one's version-skew window (advice/skew.py),
    each code and field once, as the oldest release that gives it words it.

    The same `Advice` lint and the webhook give, less the codes the object silences
    with `draguard.io/ignore`.
    """
    seen: dict[tuple[str, str], Advice] = {}
    for release in releases or (DEFAULT_RELEASE,):
        verdict = validate_object(obj, options=Options(release=release, default_namespace="default"))
        for item in verdict.warnings:
            if item.code in SKEW_CODES:
                seen.setdefault((item.code, item.field), item)
    return list(seen.values())
