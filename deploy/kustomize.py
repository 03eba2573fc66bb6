"""The subset of kustomize that draguard's own `deploy/` tree uses, in Python.

`draguard deploy render` must give the same objects as `kubectl kustomize` of an
overlay, for users without kustomize. Rather than copy the manifests into Python,
this reads the very same YAML files and applies the few kustomize features they
use: `resources` (files and folders), `components`, and JSON6902 `patches` with a
`target`. Anything else in a kustomization is refused loudly, so that a new
feature used in the YAML cannot silently render differently here; the tests
compare with `kubectl kustomize` wherever kubectl exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

Manifest = dict[str, Any]

KUSTOMIZATION_FILE = "kustomization.yaml"
_SUPPORTED_KEYS = frozenset({"apiVersion", "kind", "resources", "components", "patches"})
_TARGET_KEYS = ("group", "version", "kind", "name", "namespace")

# kustomize's "legacy" output order (its default): kinds others depend on first,
# webhook configurations last so that nothing is intercepted before it exists.
_ORDER_FIRST = (
    "Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
    "ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding",
    "ClusterRoleBinding", "ConfigMap", "Secret", "Endpoints", "Service", "LimitRange",
    "PriorityClass", "PersistentVolume", "PersistentVolumeClaim", "Deployment",
    "StatefulSet", "CronJob", "PodDisruptionBudget",
)  # fmt: skip
_ORDER_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
# libyaml when PyYAML was built with it: the same YAML 1.1 safe loading, faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class KustomizeError(ValueError):
    """A kustomization this renderer cannot reproduce faithfully, or a broken one."""


@dataclass(frozen=True, slots=True)
class ResourceId:
    """What kustomize identifies an object by: group, version, kind, namespace, name."""

    group: str
    version: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, manifest: Manifest) -> ResourceId:
        group, _, version = str(manifest.get("apiVersion", "")).rpartition("/")
        metadata = manifest.get("metadata") or {}
        return cls(
            group=group,
            version=version,
            kind=str(manifest.get("kind", "")),
            namespace=str(metadata.get("namespace") or ""),
            name=str(metadata.get("name", "")),
        )

    def sort_key(self) -> tuple[int, str, str, str]:
        """kustomize's legacy order: kind rank, then group_version_kind, namespace, name."""
        if self.kind in _ORDER_FIRST:
            rank = _ORDER_FIRST.index(self.kind) - len(_ORDER_FIRST)
        elif self.kind in _ORDER_LAST:
            rank = 1 + _ORDER_LAST.index(self.kind)
        else:
            rank = 0
        gvk = f"{self.group or '~G'}_{self.version or '~V'}_{self.kind or '~K'}"
        return (rank, gvk, self.namespace, self.name)

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}.{self.group or 'core'}/{self.version} {where}{self.name}"


def build(root: Path) -> list[Manifest]:
    """The objects `kubectl kustomize root` prints, in the same order."""
    return sort_legacy(_accumulate(root, expected_kind="Kustomization"))


def add_component(manifests: Iterable[Manifest], component: Path) -> list[Manifest]:
    """`manifests` with a kustomize Component applied (its resources, then its patches),
    as a kustomization listing it under `components:` would; in kustomize's order."""
    added = [*manifests, *_accumulate_resources_only(component)]
    patched = _apply_patches(added, _load_kustomization(component, "Component"), component)
    _check_unique(patched, component)
    return sort_legacy(patched)


def sort_legacy(manifests: Iterable[Manifest]) -> list[Manifest]:
    """Order objects as kustomize's default (legacy) sort does."""
    return sorted(manifests, key=lambda m: ResourceId.of(m).sort_key())


def load_documents(path: Path) -> list[Manifest]:
    """The non-empty YAML documents of one file, each required to be a mapping."""
    text = path.read_text(encoding="utf-8")
    documents = [d for d in yaml.load_all(text, Loader=_LOADER) if d]
    for document in documents:
        if not isinstance(document, dict):
            raise KustomizeError(f"{path}: a resource document must be a mapping")
    return documents


def _accumulate(root: Path, *, expected_kind: str) -> list[Manifest]:
    kustomization = _load_kustomization(root, expected_kind)
    manifests: list[Manifest] = []
    for entry in kustomization.get("resources") or []:
        path = root / str(entry)
        if path.is_dir():
            manifests.extend(_accumulate(path, expected_kind="Kustomization"))
        else:
            manifests.extend(load_documents(path))
    # A component adds its resources, then patches everything accumulated so far.
    for entry in kustomization.get("components") or []:
        component = root / str(entry)
        manifests.extend(_accumulate_resources_only(component))
        patches = _load_kustomization(component, "Component")
        manifests = _apply_patches(manifests, patches, component)
    manifests = _apply_patches(manifests, kustomization, root)
    _check_unique(manifests, root)
    return manifests


def _accumulate_resources_only(component: Path) -> list[Manifest]:
    kustomization = _load_kustomization(component, "Component")
    if kustomization.get("components"):
        raise KustomizeError(f"{component}: nested components are not supported")
    manifests: list[Manifest] = []
    for entry in kustomization.get("resources") or []:
        manifests.extend(load_documents(component / str(entry)))
    return manifests


def _load_kustomization(root: Path, expected_kind: str) -> Mapping[str, Any]:
    path = root / KUSTOMIZATION_FILE
    if not path.is_file():
        raise KustomizeError(f"{root}: no {KUSTOMIZATION_FILE}")
    loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(loaded, dict):
        raise KustomizeError(f"{path}: not a mapping")
    unsupported = sorted(set(loaded) - _SUPPORTED_KEYS)
    if unsupported:
        raise KustomizeError(f"{path}: fields this renderer does not implement: {unsupported}")
    kind = loaded.get("kind", "Kustomization")
    if kind != expected_kind:
        raise KustomizeError(f"{path}: kind {kind!r}, expected {expected_kind!r}")
    return loaded


def _apply_patches(
    manifests: list[Manifest], kustomization: Mapping[str, Any], root: Path
) -> list[Manifest]:
    for number, entry in enumerate(kustomization.get("patches") or []):
        where = f"{root / KUSTOMIZATION_FILE}: patches[{number}]"
        operations = _patch_operations(entry, root, where)
        target = entry.get("target") or {}
        unknown = sorted(set(target) - set(_TARGET_KEYS))
        if unknown or not target:
            raise KustomizeError(f"{where}: target must use only {_TARGET_KEYS}, got {unknown}")
        matched = [i for i, m in enumerate(manifests) if _selects(target, ResourceId.of(m))]
        if not matched:
            raise KustomizeError(f"{where}: target {dict(target)} matches no resource")
        patch = jsonpatch.JsonPatch(operations)
        for index in matched:
            manifests[index] = patch.apply(manifests[index])
    return manifests


def _patch_operations(entry: Mapping[str, Any], root: Path, where: str) -> list[Any]:
    if "patch" in entry:
        operations = yaml.safe_load(str(entry["patch"]))
    elif "path" in entry:
        operations = yaml.safe_load((root / str(entry["path"])).read_text(encoding="utf-8"))
    else:
        raise KustomizeError(f"{where}: needs `patch` or `path`")
    # Strategic-merge patches (a mapping) need kustomize's per-type merge keys.
    if not isinstance(operations, list):
        raise KustomizeError(f"{where}: only JSON6902 (list) patches are supported")
    return operations


def _selects(target: Mapping[str, Any], rid: ResourceId) -> bool:
    return all(str(value) == getattr(rid, key) for key, value in target.items())


def _check_unique(manifests: list[Manifest], root: Path) -> None:
    seen: set[ResourceId] = set()
    for manifest in manifests:
        rid = ResourceId.of(manifest)
        if rid in seen:
            raise KustomizeError(f"{root}: {rid} is defined twice")
        seen.add(rid)
