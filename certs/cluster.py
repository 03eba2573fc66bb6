"""Certificates in the cluster: Secrets for the pods, `caBundle` for the apiserver (issue 5 §2b).

The state folder stays the source of truth while a command runs; this module copies
it to and from the cluster. The serving pair goes into a `kubernetes.io/tls` Secret
(`tls.crt`, `tls.key`, `ca.crt`) that the webhook pods mount; the CA's key goes into
a separate Opaque Secret (`ca.crt`, `ca.key`) that only the certificate Job reads,
so that a renewal months later signs with the same CA and the `caBundle` already in
both webhook configurations stays valid.

Every API call goes through `ClusterApi`, which speaks wire-shaped dicts, so tests
use a fake and check the exact bodies; `KubernetesApi` is the official client behind it.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from draguard.certs.errors import CertificateFileError
from draguard.certs.files import (
    CERT_MODE,
    KEY_MODE,
    StatePaths,
    ca_bundle_b64,
    load_authority,
    load_pair,
    write_atomically,
)
from draguard.certs.inspection import parse_pair

JsonObject = dict[str, Any]
WebhookKind = Literal["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"]
WEBHOOK_KINDS: tuple[WebhookKind, ...] = get_args(WebhookKind)
SecretOutcome = Literal["created", "updated", "unchanged"]
PatchOutcome = Literal["patched", "unchanged", "not-found", "no-webhooks"]

LABELS = {
    "app.kubernetes.io/name": "draguard",
    "app.kubernetes.io/component": "certificates",
    "app.kubernetes.io/managed-by": "draguard-certs",
}
# A replace that races another writer gets 409 Conflict; read again and retry.
CONFLICT_ATTEMPTS = 3


class ClusterError(Exception):
    """An API call failed; `status` is the HTTP status (0 when there was no answer)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class ClusterApi(Protocol):
    """The few Kubernetes calls `draguard certs` makes, on wire-shaped (camelCase) dicts."""

    def read_secret(self, namespace: str, name: str) -> JsonObject | None: ...

    def create_secret(self, namespace: str, body: JsonObject) -> None: ...

    def replace_secret(self, namespace: str, name: str, body: JsonObject) -> None: ...

    def read_webhook_configuration(self, kind: WebhookKind, name: str) -> JsonObject | None: ...

    def patch_webhook_configuration(
        self, kind: WebhookKind, name: str, patch: list[JsonObject]
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class PublishResult:
    """What `publish` changed: each Secret and each webhook configuration."""

    secrets: tuple[tuple[str, SecretOutcome], ...]
    configurations: tuple[tuple[WebhookKind, PatchOutcome, int], ...]

    @property
    def found_configuration(self) -> bool:
        return any(outcome != "not-found" for _, outcome, _ in self.configurations)


def default_ca_secret(secret: str) -> str:
    """The CA Secret's name beside the serving Secret `secret`."""
    return f"{secret}-ca"


# --- bodies ----------------------------------------------------------------------------


def tls_secret_body(
    *, name: str, namespace: str, cert_pem: bytes, key_pem: bytes, ca_pem: bytes
) -> JsonObject:
    """The `kubernetes.io/tls` Secret the webhook pods mount."""
    return _secret(
        name,
        namespace,
        "kubernetes.io/tls",
        {"tls.crt": cert_pem, "tls.key": key_pem, "ca.crt": ca_pem},
    )


def ca_secret_body(*, name: str, namespace: str, cert_pem: bytes, key_pem: bytes) -> JsonObject:
    """The Opaque Secret that keeps the CA (with its key) for later renewals."""
    return _secret(name, namespace, "Opaque", {"ca.crt": cert_pem, "ca.key": key_pem})


def ca_bundle_patch(configuration: Mapping[str, Any], bundle_b64: str) -> list[JsonObject]:
    """A JSON Patch that sets `clientConfig.caBundle` on every webhook that lacks this bundle.

    Each `add` is preceded by a `test` of that webhook's name, so a configuration
    reordered since it was read fails the patch instead of getting the bundle on
    the wrong entry. Webhooks that already carry the bundle are left alone.
    """
    patch: list[JsonObject] = []
    for index, webhook in enumerate(configuration.get("webhooks") or []):
        if (webhook.get("clientConfig") or {}).get("caBundle") == bundle_b64:
            continue
        patch.append({"op": "test", "path": f"/webhooks/{index}/name", "value": webhook["name"]})
        patch.append(
            {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle_b64}
        )
    return patch


# --- operations ------------------------------------------------------------------------


def publish(
    api: ClusterApi,
    state_dir: Path | str,
    *,
    secret: str,
    namespace: str,
    webhook_config: str,
    ca_secret: str | None = None,
    now: dt.datetime | None = None,
) -> PublishResult:
    """Write both Secrets from the state folder and put its CA into both webhook configurations.

    The local files are checked first (parse, match, CA is a CA and valid at `now`):
    garbage never reaches the cluster. Raises `CertificateFileError` or `ClusterError`.
    """
    paths = StatePaths.of(state_dir)
    ca = load_authority(paths, now=now)
    leaf = load_pair(paths.tls_cert, paths.tls_key)
    ca_name = ca_secret or default_ca_secret(secret)
    # The CA first: once the serving Secret exists, the CA key must be recoverable.
    secrets = (
        (
            ca_name,
            apply_secret(
                api,
                ca_secret_body(
                    name=ca_name, namespace=namespace, cert_pem=ca.cert_pem, key_pem=ca.key_pem
                ),
            ),
        ),
        (
            secret,
            apply_secret(
                api,
                tls_secret_body(
                    name=secret,
                    namespace=namespace,
                    cert_pem=leaf.cert_pem,
                    key_pem=leaf.key_pem,
                    ca_pem=ca.cert_pem,
                ),
            ),
        ),
    )
    bundle = ca_bundle_b64(paths.dir)
    configurations = tuple(
        (kind, *patch_ca_bundle(api, kind, webhook_config, bundle)) for kind in WEBHOOK_KINDS
    )
    return PublishResult(secrets, configurations)


def apply_secret(api: ClusterApi, body: JsonObject) -> SecretOutcome:
    """Create the Secret, or replace its data (keeping others' labels and annotations)."""
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    for attempt in range(CONFLICT_ATTEMPTS):
        existing = api.read_secret(namespace, name)
        if existing is None:
            api.create_secret(namespace, body)
            return "created"
        if existing.get("type", "Opaque") != body["type"]:
            raise ClusterError(
                f"Secret {namespace}/{name} has type {existing.get('type')!r}, not "
                f"{body['type']!r}; the type cannot change, delete the Secret first"
            )
        if existing.get("data") == body["data"]:
            return "unchanged"
        try:
            api.replace_secret(namespace, name, _replacement(existing, body))
        except ClusterError as exc:
            if exc.status != 409 or attempt == CONFLICT_ATTEMPTS - 1:
                raise
            continue
        return "updated"
    raise AssertionError("unreachable")  # pragma: no cover


def patch_ca_bundle(
    api: ClusterApi, kind: WebhookKind, name: str, bundle_b64: str
) -> tuple[PatchOutcome, int]:
    """Put `bundle_b64` into every webhook of one configuration; how many changed."""
    configuration = api.read_webhook_configuration(kind, name)
    if configuration is None:
        return "not-found", 0
    if not configuration.get("webhooks"):
        return "no-webhooks", 0
    patch = ca_bundle_patch(configuration, bundle_b64)
    if not patch:
        return "unchanged", 0
    api.patch_webhook_configuration(kind, name, patch)
    return "patched", len(patch) // 2


def fetch_authority(
    api: ClusterApi, state_dir: Path | str, *, ca_secret: str, namespace: str
) -> bool:
    """Copy the CA from its Secret into the state folder; `False` when there is no such Secret.

    Raises `CertificateFileError` (naming the Secret key) when the Secret holds garbage.
    """
    return _fetch_pair(
        api, state_dir, secret=ca_secret, namespace=namespace, cert_key="ca.crt", key_key="ca.key"
    )


def fetch_serving(api: ClusterApi, state_dir: Path | str, *, secret: str, namespace: str) -> bool:
    """Copy the serving pair from its Secret into the state folder; `False` when it is absent."""
    return _fetch_pair(
        api, state_dir, secret=secret, namespace=namespace, cert_key="tls.crt", key_key="tls.key"
    )


def _fetch_pair(
    api: ClusterApi,
    state_dir: Path | str,
    *,
    secret: str,
    namespace: str,
    cert_key: str,
    key_key: str,
) -> bool:
    body = api.read_secret(namespace, secret)
    if body is None:
        return False
    data = body.get("data") or {}
    where = f"Secret {namespace}/{secret}"
    cert_pem = _decoded(data, cert_key, where)
    key_pem = _decoded(data, key_key, where)
    parse_pair(
        cert_pem, key_pem, cert_source=f"{where} {cert_key}", key_source=f"{where} {key_key}"
    )
    paths = StatePaths.of(state_dir)
    paths.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomically(paths.dir / key_key, key_pem, mode=KEY_MODE)
    write_atomically(paths.dir / cert_key, cert_pem, mode=CERT_MODE)
    return True


def _decoded(data: Mapping[str, str], key: str, where: str) -> bytes:
    if key not in data:
        raise CertificateFileError(f"{where} {key}", "missing from the Secret")
    try:
        return base64.b64decode(data[key], validate=True)
    except ValueError:
        raise CertificateFileError(f"{where} {key}", "not valid base64") from None


def _secret(name: str, namespace: str, type_: str, data: Mapping[str, bytes]) -> JsonObject:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(LABELS)},
        "type": type_,
        "data": {key: base64.b64encode(value).decode("ascii") for key, value in data.items()},
    }


def _replacement(existing: Mapping[str, Any], body: JsonObject) -> JsonObject:
    # A PUT replaces the whole object: carry over what others put in metadata, and the
    # resourceVersion so that a concurrent writer makes us fail (409) instead of losing.
    old_meta = existing.get("metadata") or {}
    metadata: JsonObject = {
        "name": body["metadata"]["name"],
        "namespace": body["metadata"]["namespace"],
        "labels": {**(old_meta.get("labels") or {}), **body["metadata"]["labels"]},
    }
    if old_meta.get("annotations"):
        metadata["annotations"] = dict(old_meta["annotations"])
    if old_meta.get("resourceVersion"):
        metadata["resourceVersion"] = old_meta["resourceVersion"]
    return {**body, "metadata": metadata}


# --- the official client ---------------------------------------------------------------


class KubernetesApi:
    """`ClusterApi` over the official `kubernetes` client.

    Reads ask for the raw JSON (`_preload_content=False`) so that callers see exactly
    what the apiserver sent, not the client's model objects.
    """

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        # Typed as Any: we send wire dicts where the generated stubs expect models.
        self._core: Any = client.CoreV1Api(api_client)
        self._admission: Any = client.AdmissionregistrationV1Api(api_client)

    @classmethod
    def connect(cls, *, in_cluster: bool = False, kubeconfig: str | None = None) -> KubernetesApi:
        """Connect with the pod's service account, a kubeconfig file, or whichever is there."""
        from kubernetes import client
        from kubernetes import config as kube_config

        config: Any = kube_config  # its loaders are untyped
        try:
            if in_cluster:
                config.load_incluster_config()
            elif kubeconfig is not None:
                config.load_kube_config(config_file=kubeconfig)
            else:
                try:
                    config.load_incluster_config()
                except config.ConfigException:
                    config.load_kube_config()
        except (config.ConfigException, OSError) as exc:
            raise ClusterError(f"cannot load Kubernetes configuration: {exc}") from None
        return cls(client.ApiClient())

    def read_secret(self, namespace: str, name: str) -> JsonObject | None:
        return self._read(lambda: self._core.read_namespaced_secret(name, namespace, **_RAW))

    def create_secret(self, namespace: str, body: JsonObject) -> None:
        self._call(lambda: self._core.create_namespaced_secret(namespace, body, **_JSON))

    def replace_secret(self, namespace: str, name: str, body: JsonObject) -> None:
        self._call(lambda: self._core.replace_namespaced_secret(name, namespace, body, **_JSON))

    def read_webhook_configuration(self, kind: WebhookKind, name: str) -> JsonObject | None:
        if kind == "ValidatingWebhookConfiguration":
            return self._read(
                lambda: self._admission.read_validating_webhook_configuration(name, **_RAW)
            )
        return self._read(lambda: self._admission.read_mutating_webhook_configuration(name, **_RAW))

    def patch_webhook_configuration(
        self, kind: WebhookKind, name: str, patch: list[JsonObject]
    ) -> None:
        if kind == "ValidatingWebhookConfiguration":
            method = self._admission.patch_validating_webhook_configuration
        else:
            method = self._admission.patch_mutating_webhook_configuration
        self._call(lambda: method(name, patch, _content_type="application/json-patch+json"))

    def _read(self, call: Any) -> JsonObject | None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            response = call()
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _cluster_error(exc) from None
        except (OSError, HTTPError) as exc:
            raise ClusterError(f"cannot reach the apiserver: {exc}") from None
        loaded: JsonObject = json.loads(response.data)
        return loaded

    def _call(self, call: Any) -> None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            call()
        except ApiException as exc:
            raise _cluster_error(exc) from None
        except (OSError, HTTPError) as exc:
            raise ClusterError(f"cannot reach the apiserver: {exc}") from None


_RAW: dict[str, Any] = {"_preload_content": False}
# The generated create/replace methods ignore `_content_type`; headers get through.
_JSON: dict[str, Any] = {"_headers": {"Content-Type": "application/json"}}


def _cluster_error(exc: Any) -> ClusterError:
    status = int(getattr(exc, "status", 0) or 0)
    message = getattr(exc, "reason", "") or ""
    with contextlib.suppress(TypeError, ValueError, AttributeError):
        message = json.loads(exc.body).get("message", message)
    return ClusterError(f"apiserver answered {status}: {message}", status=status)
