"""Render the cluster manifests for a namespace, image, replica count and certificate mode.

The objects come from `deploy/overlays/<mode>` through `draguard.deploy.kustomize`
(the same YAML `kubectl kustomize` reads). The options are then applied exactly as
the kustomization from `wrapper_kustomization` would apply them: kustomize's
`namespace`, `images` and `replicas` transformers, plus `replacements` for the
namespace copies those transformers do not know about (the webhooks'
namespaceSelector, the certificate's DNS names, cert-manager's inject-ca-from).
Tests build that wrapper with `kubectl kustomize` and compare.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from draguard.deploy.kustomize import Manifest, add_component, build

CertMode = Literal["self", "cert-manager"]
CERT_MODES: tuple[CertMode, ...] = get_args(CertMode)

DEPLOY_ROOT = Path(__file__).resolve().parent
OVERLAYS: dict[CertMode, str] = {
    "self": "overlays/self-signed",
    "cert-manager": "overlays/cert-manager",
}
# `draguard serve --cluster-view` and the list/watch RBAC it needs (issue 20).
CLUSTER_VIEW = "components/cluster-view"

# The values written in deploy/base; every option defaults to what the YAML says.
DEFAULT_NAMESPACE = "draguard-system"
DEFAULT_IMAGE = "draguard:0.1.0"
DEFAULT_REPLICAS = 2
IMAGE_NAME = "draguard"
SERVICE = "draguard"
DEPLOYMENT = "draguard"
SERVING_CERTIFICATE = "draguard-serving"
# The label the apiserver sets on every namespace (1.21+): excluding by it needs no
# label the operator could forget (see README.md ("Install in a cluster")).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
_POD_OWNERS = {"Deployment": ("spec", "template"), "Job": ("spec", "template"),
               "CronJob": ("spec", "jobTemplate", "spec", "template")}  # fmt: skip


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """What `draguard deploy render` lets a user choose; the defaults render the overlay as is."""

    namespace: str = DEFAULT_NAMESPACE
    image: str = DEFAULT_IMAGE
    replicas: int = DEFAULT_REPLICAS
    certs: CertMode = "self"
    cluster_view: bool = False

    def __post_init__(self) -> None:
        # A namespace is a DNS label (RFC 1123), and it is also part of the
        # certificate's DNS names, so anything else would break TLS, not just apply.
        if not _DNS_LABEL.fullmatch(self.namespace):
            raise ValueError(f"namespace {self.namespace!r} is not a DNS label (RFC 1123)")
        # The webhooks exempt draguard's own namespace, and the manifests label it for
        # the restricted Pod Security Standard: a shared namespace would lose
        # validation for its claims, and a system namespace its privileged pods.
        if self.namespace in RESERVED_NAMESPACES or self.namespace.startswith("kube-"):
            raise ValueError(
                f"namespace {self.namespace!r} is shared; draguard needs a namespace of its own"
            )
        if self.replicas < 1:
            raise ValueError(f"replicas must be at least 1, not {self.replicas}")
        if not self.image or any(c.isspace() for c in self.image):
            raise ValueError(f"image {self.image!r} is not an image reference")
        if self.certs not in CERT_MODES:
            raise ValueError(f"certs must be one of {', '.join(CERT_MODES)}, not {self.certs!r}")


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An image reference split as kustomize's `images` entry wants it."""

    name: str
    tag: str | None = None
    digest: str | None = None

    @classmethod
    def parse(cls, reference: str) -> ImageRef:
        name, at, digest = reference.partition("@")
        if at:
            return cls(name=name, digest=digest)
        # A colon after the last slash is a tag; before it, a registry port.
        head, colon, tag = name.rpartition(":")
        if colon and "/" not in tag:
            return cls(name=head, tag=tag)
        return cls(name=name)

    def kustomize_entry(self) -> dict[str, str]:
        entry = {"name": IMAGE_NAME, "newName": self.name}
        if self.tag is not None:
            entry["newTag"] = self.tag
        if self.digest is not None:
            entry["digest"] = self.digest
        return entry


def overlay_dir(certs: CertMode) -> Path:
    """The kustomize overlay that `certs` renders."""
    return DEPLOY_ROOT / OVERLAYS[certs]


def render(options: RenderOptions | None = None) -> list[Manifest]:
    """The manifests for `options`, in kustomize's order."""
    options = options or RenderOptions()
    return [_customize(m, options) for m in _overlay(options.certs, options.cluster_view)]


@functools.lru_cache(maxsize=2 * len(CERT_MODES))
def _overlay(certs: CertMode, cluster_view: bool) -> tuple[Manifest, ...]:
    # Read once per process; `_customize` deep-copies, so the cache is never mutated.
    manifests = build(overlay_dir(certs))
    if cluster_view:
        manifests = add_component(manifests, DEPLOY_ROOT / CLUSTER_VIEW)
    return tuple(manifests)


def render_yaml(options: RenderOptions | None = None) -> str:
    """`render` as one multi-document YAML stream, ready for `kubectl apply -f -`."""
    options = options or RenderOptions()
    header = (
        f"# draguard manifests: certs={options.certs} namespace={options.namespace} "
        f"image={options.image} replicas={options.replicas}"
        + (" cluster-view" if options.cluster_view else "") + "\n"
    )
    return header + yaml.safe_dump_all(render(options), sort_keys=True, default_flow_style=False)


def wrapper_kustomization(options: RenderOptions, overlay: str) -> dict[str, Any]:
    """A kustomization over `overlay` (a path relative to it) that renders like `render(options)`.

    Documented in README.md ("Install in a cluster") for kustomize users who want another namespace;
    the tests build it with `kubectl kustomize` and compare with `render`.
    """
    source = {"kind": "Service", "name": SERVICE, "fieldPath": "metadata.namespace"}
    selector_path = (
        f"webhooks.*.namespaceSelector.matchExpressions.[key={NAMESPACE_NAME_LABEL}].values.1"
    )
    targets: list[dict[str, Any]] = [
        {"select": {"kind": kind}, "fieldPaths": [selector_path]} for kind in _WEBHOOK_KINDS
    ]
    if options.certs == "cert-manager":
        targets.append({
            "select": {"kind": "Certificate", "name": SERVING_CERTIFICATE},
            "fieldPaths": ["spec.dnsNames.1", "spec.dnsNames.2", "spec.dnsNames.3"],
            "options": {"delimiter": ".", "index": 1},
        })
        targets.extend(
            {
                "select": {"kind": kind},
                "fieldPaths": ["metadata.annotations.[cert-manager.io/inject-ca-from]"],
                "options": {"delimiter": "/", "index": 0},
            }
            for kind in _WEBHOOK_KINDS
        )
    components = {}
    if options.cluster_view:
        # The component sits two folders above the overlay (deploy/components/…).
        components = {"components": [f"{overlay}/../../{CLUSTER_VIEW}"]}
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [overlay],
        **components,
        "namespace": options.namespace,
        "images": [ImageRef.parse(options.image).kustomize_entry()],
        "replicas": [{"name": DEPLOYMENT, "count": options.replicas}],
        "replacements": [{"source": source, "targets": targets}],
    }


def _customize(manifest: Manifest, options: RenderOptions) -> Manifest:
    result = copy.deepcopy(manifest)
    _set_namespace(result, options.namespace)
    for container in _containers(result):
        if ImageRef.parse(str(container.get("image", ""))).name == IMAGE_NAME:
            container["image"] = options.image
    if result.get("kind") == "Deployment" and result["metadata"].get("name") == DEPLOYMENT:
        result["spec"]["replicas"] = options.replicas
    return result


def _set_namespace(manifest: Manifest, namespace: str) -> None:
    """What kustomize's `namespace:` does, plus the namespace copies it cannot see."""
    metadata = manifest["metadata"]
    kind = manifest.get("kind")
    if kind == "Namespace":
        metadata["name"] = namespace
    elif "namespace" in metadata:
        metadata["namespace"] = namespace
    for subject in manifest.get("subjects") or []:
        if subject.get("kind") == "ServiceAccount":
            subject["namespace"] = namespace
    if kind in _WEBHOOK_KINDS:
        for webhook in manifest.get("webhooks") or []:
            service = webhook.get("clientConfig", {}).get("service")
            if service is not None:
                service["namespace"] = namespace
            _retarget_selector(webhook.get("namespaceSelector") or {}, namespace)
    annotations = metadata.get("annotations") or {}
    inject = annotations.get("cert-manager.io/inject-ca-from")
    if inject is not None:
        annotations["cert-manager.io/inject-ca-from"] = f"{namespace}/{inject.partition('/')[2]}"
    if kind == "Certificate" and metadata.get("name") == SERVING_CERTIFICATE:
        names = manifest["spec"]["dnsNames"]
        renamed = [_with_namespace(name, namespace) for name in names[1:]]
        manifest["spec"]["dnsNames"] = names[:1] + renamed


def _retarget_selector(selector: dict[str, Any], namespace: str) -> None:
    # The second excluded name is draguard's own namespace (deploy/base/webhooks.yaml).
    for expression in selector.get("matchExpressions") or []:
        if expression.get("key") == NAMESPACE_NAME_LABEL and len(expression["values"]) > 1:
            expression["values"][1] = namespace


def _with_namespace(dns_name: str, namespace: str) -> str:
    labels = dns_name.split(".")
    labels[1] = namespace
    return ".".join(labels)


def _containers(manifest: Manifest) -> Iterator[dict[str, Any]]:
    path = _POD_OWNERS.get(str(manifest.get("kind")))
    if path is None:
        return
    node: Any = manifest
    for key in path:
        node = node.get(key) or {}
    spec = node.get("spec") or {}
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []
