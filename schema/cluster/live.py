"""Reading the cluster side of `explain` from a live cluster through the `kubernetes` client.

Lists what the allocator needs, as kubectl would with the user's kubeconfig (or the
in-cluster service account): DeviceClasses, ResourceSlices and Nodes, every
ResourceClaim (their allocations are the allocated state), and in the namespace the
ResourceClaimTemplates, ResourceQuotas and, when named, the Pod. Lists are paged
(`limit`/`continue`, as kubectl does) and a progress line goes to `progress` while a
large cluster is listed. Objects are kept as the JSON the apiserver sent (camelCase),
so they are read exactly as files are.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config

from draguard.schema.cluster.facts import Watched

PAGE = 500
RESOURCE = ("resource.k8s.io", "v1")


@dataclass(frozen=True, slots=True)
class Target:
    """Where to read from: kubeconfig file and context (None: defaults), or in-cluster."""

    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False


class LiveError(Exception):
    """The cluster could not be read (unreachable, unauthorised, bad kubeconfig)."""


def connect(target: Target) -> tuple[Any, str | None]:
    """An API client and the context's namespace (None when the context sets none)."""
    try:
        if target.in_cluster:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
            return client.ApiClient(), None
        api = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=target.kubeconfig, context=target.context)
        contexts, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=target.kubeconfig)
        chosen = next((c for c in contexts if c.get("name") == target.context), active)
        namespace = ((chosen or {}).get("context") or {}).get("namespace")
        return api, namespace
    except Exception as exc:  # the client raises its own and configparser/yaml errors
        raise LiveError(f"cannot load the cluster configuration: {exc}") from None


def list_objects(api: Any, *, namespace: str, pod: str | None,
                 progress: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    """Every object `explain` needs, each with `kind` and `apiVersion` filled in."""
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    group, version = RESOURCE
    api_version = f"{group}/{version}"
    lists: list[tuple[str, str, Callable[..., Any]]] = [
        ("DeviceClass", api_version, lambda **kw: custom.list_cluster_custom_object(
            group, version, "deviceclasses", **kw)),
        ("ResourceSlice", api_version, lambda **kw: custom.list_cluster_custom_object(
            group, version, "resourceslices", **kw)),
        ("ResourceClaim", api_version, lambda **kw: custom.list_cluster_custom_object(
            group, version, "resourceclaims", **kw)),
        ("ResourceClaimTemplate", api_version, lambda **kw: custom.list_namespaced_custom_object(
            group, version, namespace, "resourceclaimtemplates", **kw)),
        ("Node", "v1", lambda **kw: _raw(core.list_node(_preload_content=False, **kw))),
        ("ResourceQuota", "v1", lambda **kw: _raw(core.list_namespaced_resource_quota(
            namespace, _preload_content=False, **kw))),
    ]
    for kind, kind_version, call in lists:
        yield from _paged(kind, kind_version, call, progress)
    if pod is not None:
        found = _call(lambda: _raw(core.read_namespaced_pod(pod, namespace, _preload_content=False)),
                      f"Pod {namespace}/{pod}")
        yield {"kind": "Pod", "apiVersion": "v1", **found}


def list_watched(api: Any, watched: Iterable[Watched], *,
                 progress: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    """Every object of the `watched` kinds, cluster-wide (issue 20: lint --from-cluster)."""
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    for entry in watched:
        api_version = f"{entry.group}/{entry.version}" if entry.group else entry.version
        call: Callable[..., Any]
        if entry.group:
            call = functools.partial(custom.list_cluster_custom_object, entry.group,
                                     entry.version, entry.plural)
        elif entry.plural == "namespaces":
            call = functools.partial(_raw_list, core.list_namespace)
        else:
            call = functools.partial(_raw_list, core.list_resource_quota_for_all_namespaces)
        yield from _paged(entry.kind, api_version, call, progress)


def _raw_list(method: Callable[..., Any], **kwargs: Any) -> Any:
    return _raw(method(_preload_content=False, **kwargs))


def _paged(kind: str, api_version: str, call: Callable[..., Any],
           progress: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    token: str | None = None
    count = 0
    while True:
        kwargs: dict[str, Any] = {"limit": PAGE}
        if token:
            kwargs["_continue"] = token
        page = _call(lambda kw=kwargs: call(**kw), f"{kind} list")  # type: ignore[misc]
        for item in page.get("items") or []:
            if isinstance(item, dict):
                count += 1
                yield {**item, "kind": kind, "apiVersion": api_version}
        progress(f"listing {kind}s: {count}")
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def _call(call: Callable[[], Any], what: str) -> dict[str, Any]:
    try:
        result = call()
    except Exception as exc:  # ApiException, urllib3 errors: unreachable, refused, 403 …
        status = getattr(exc, "status", None)
        reason = getattr(exc, "reason", None) or str(exc).splitlines()[0]
        raise LiveError(f"{what}: {status} {reason}" if status else f"{what}: {reason}") from None
    if not isinstance(result, dict):
        raise LiveError(f"{what}: the server answered something that is not a JSON object")
    return result


def _raw(response: Any) -> Any:
    return json.loads(response.data)
