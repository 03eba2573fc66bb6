"""Cross-object checks: Pods and workload controllers against the claims in the same input.

Issue 7 `pod-names-subrequest` and `scoring-crash`. The apiserver validates a Pod's
`resources.claims[].request` only as a name; it never looks at the claim, so a
container naming a subrequest (`gpu/big`, or just `big`) or a request the claim does
not have is accepted and the pod then fails at allocation or at container start.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from draguard.schema.advice.codes import Advice, Version
from draguard.schema.model.fieldmap import PARALLEL_KEY
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.shapes import identify

# Where each workload kind keeps its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


@dataclass(frozen=True, slots=True)
class ClaimRequests:
    """A claim's top-level request names, each with its subrequest names (empty: exact)."""

    requests: dict[str, frozenset[str]]


@dataclass
class ClaimIndex:
    """Claims and templates of one input, by (namespace, name)."""

    claims: dict[tuple[str, str], ClaimRequests] = field(default_factory=dict)
    templates: dict[tuple[str, str], ClaimRequests] = field(default_factory=dict)


def index_claims(objects: Iterable[Any], *, default_namespace: str = "default") -> ClaimIndex:
    index = ClaimIndex()
    for obj in objects:
        doc_type = identify(obj)
        if doc_type is None:
            continue
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        key = (str(meta.get("namespace") or default_namespace), str(meta.get("name", "")))
        spec = obj.get("spec")
        if doc_type.kind == "ResourceClaimTemplate":
            spec = spec.get("spec") if isinstance(spec, dict) else None
        devices = spec.get("devices") if isinstance(spec, dict) else None
        target = index.templates if doc_type.kind == "ResourceClaimTemplate" else index.claims
        target[key] = _claim_requests(devices if isinstance(devices, dict) else {})
    return index


def _claim_requests(devices: dict[str, Any]) -> ClaimRequests:
    requests: dict[str, frozenset[str]] = {}
    entries = [(r, "firstAvailable") for r in devices.get("requests") or [] if isinstance(r, dict)]
    entries += [(p, "options") for p in devices.get(PARALLEL_KEY) or [] if isinstance(p, dict)]
    for request, key in entries:
        subs = request.get(key)
        subs = subs if isinstance(subs, list) else []
        requests[str(request.get("name", ""))] = frozenset(
            str(s.get("name", "")) for s in subs if isinstance(s, dict)
        )
    return ClaimRequests(requests)


def check_workload(
    obj: Any, index: ClaimIndex, *, version: Version, default_namespace: str = "default"
) -> Iterator[Advice]:
    """Advice for one Pod or workload controller; nothing for other objects."""
    if not isinstance(obj, dict) or obj.get("kind") not in POD_SPEC_PATHS:
        return
    spec_path = POD_SPEC_PATHS[str(obj["kind"])]
    pod_spec: Any = obj
    for key in spec_path:
        pod_spec = pod_spec.get(key) if isinstance(pod_spec, dict) else None
    if not isinstance(pod_spec, dict):
        return
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    namespace = str(meta.get("namespace") or default_namespace)
    resolved = _resolve_pod_claims(pod_spec, index, namespace)
    path = FieldPath(spec_path)
    for list_name in ("initContainers", "containers"):
        for c, container in enumerate(pod_spec.get(list_name) or []):
            if isinstance(container, dict):
                yield from _check_container(container, path.child(list_name).index(c), resolved)
    yield from _check_scoring_crash(pod_spec, path, version)


def _resolve_pod_claims(
    pod_spec: dict[str, Any], index: ClaimIndex, namespace: str
) -> dict[str, ClaimRequests | None]:
    """Pod claim name → the claim's requests when the claim or template is in the input."""
    out: dict[str, ClaimRequests | None] = {}
    for ref in pod_spec.get("resourceClaims") or []:
        if not isinstance(ref, dict):
            continue
        name = str(ref.get("name", ""))
        if ref.get("resourceClaimName"):
            out[name] = index.claims.get((namespace, str(ref["resourceClaimName"])))
        elif ref.get("resourceClaimTemplateName"):
            out[name] = index.templates.get((namespace, str(ref["resourceClaimTemplateName"])))
    return out


def _check_container(
    container: dict[str, Any], path: FieldPath, resolved: dict[str, ClaimRequests | None]
) -> Iterator[Advice]:
    resources = container.get("resources")
    claims = resources.get("claims") if isinstance(resources, dict) else None
    for k, claim in enumerate(claims or []):
        if not isinstance(claim, dict) or not claim.get("request"):
            continue
        target = resolved.get(str(claim.get("name", "")))
        if target is None:
            continue
        request = str(claim["request"])
        where = path.child("resources", "claims").index(k).child("request")
        message = _request_problem(request, target)
        if message:
            yield Advice(where, "pod-names-subrequest", message)


def _request_problem(request: str, target: ClaimRequests) -> str | None:
    if request in target.requests:
        return None
    parent = request.split("/", 1)[0]
    owners = [name for name, subs in target.requests.items() if request in subs]
    if "/" in request and parent in target.requests:
        return (
            f"`{request}` names a subrequest; a container may name only the request `{parent}` "
            "(it gets whichever alternative is allocated)"
        )
    if owners:
        return (
            f"`{request}` is a subrequest of `{owners[0]}`; a container may name only the request "
            f"`{owners[0]}`"
        )
    known = ", ".join(f"`{n}`" for n in target.requests) or "none"
    return f"the claim has no request `{request}` (its requests: {known})"


def _check_scoring_crash(
    pod_spec: dict[str, Any],
    path: FieldPath,
    version: Version,
) -> Iterator[Advice]:
    refs = [r for r in pod_spec.get("resourceClaims") or [] if isinstance(r, dict)]
    shared = any(r.get("resourceClaimName") for r in refs)
    per_pod = any(r.get("resourceClaimTemplateName") for r in refs)
    # kubernetes#139016: the scoring added with prioritized lists in 1.35 fails for any pod
    # with an allocated (shared) claim and an unallocated one, firstAvailable or not; fixed
    # by #139017, cherry-picked as #139362 (1.35.6) and #139363 (1.36.2); 1.34 does not score.
    affected = version.within(35, 0, 5) or version.within(36, 0, 1)
    if shared and per_pod and affected:
        fixed = "1.35.6" if version.release.minor == 35 else "1.36.2"
        yield Advice(
            path.child("resourceClaims"),
            "scoring-crash",
            f"a pod mixing a shared claim with a per-pod claim stays Pending in Kubernetes "
            f"{version.release.name}.x before {fixed} once the shared claim is allocated (the "
            "scheduler's scoring fails, kubernetes#139016); upgrade, or give the pod only one kind "
            "of claim",
        )
