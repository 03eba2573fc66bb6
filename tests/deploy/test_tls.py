"""The apiserver's view: the rendered webhook configuration's caBundle and service name reach serve.

`draguard certs` makes the CA and serving certificate for the rendered Service,
`draguard certs bundle` gives the caBundle, which is patched into the rendered
webhook configurations the way `draguard certs publish` patches them. Then the
real `draguard serve` (gunicorn, TLS) starts with the rendered Deployment's own
arguments, its mounts mapped to temporary folders, and a client that trusts only
that caBundle calls 127.0.0.1 with the service DNS name from `clientConfig`, as
the apiserver would call `https://<service>.<namespace>.svc:443/<path>`.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from draguard.certs.cli import main as certs_main
from draguard.certs.cluster import ca_bundle_patch
from draguard.deploy.render import RenderOptions, render

Manifest = dict[str, Any]
NAMESPACE = "dra-ops"  # not serve's default, so the names must really come from the manifests
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


@dataclass(frozen=True)
class Installed:
    """What a cluster would hold after install, and the running server."""

    configurations: dict[str, Manifest]
    port: int
    other_ca: bytes


def certs(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = certs_main(list(argv), stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    return out.getvalue()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def one(manifests: list[Manifest], kind: str) -> Manifest:
    (found,) = [m for m in manifests if m["kind"] == kind]
    return found


def mounted_folders(manifests: list[Manifest], root: Path, tls_dir: Path) -> dict[str, Path]:
    """Each volume of the webhook pod as a folder: the Secret from `tls_dir`, the ConfigMap's keys."""
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    folders: dict[str, Path] = {}
    for volume in pod["volumes"]:
        folder = root / volume["name"]
        folder.mkdir(parents=True)
        if "secret" in volume:
            # `draguard certs publish` puts these three files into the Secret.
            for key in ("tls.crt", "tls.key", "ca.crt"):
                (folder / key).write_bytes((tls_dir / key).read_bytes())
        if "configMap" in volume:
            configmap = next(m for m in manifests if m["kind"] == "ConfigMap"
                             and m["metadata"]["name"] == volume["configMap"]["name"])
            for key, value in configmap["data"].items():
                (folder / key).write_text(value)
        folders[volume["name"]] = folder
    return folders


def serve_argv(manifests: list[Manifest], folders: dict[str, Path], port: int) -> list[str]:
    """The Deployment's container arguments with mounts mapped and loopback instead of 0.0.0.0."""
    (container,) = one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    mounts = sorted(container["volumeMounts"], key=lambda m: -len(m["mountPath"]))

    def mapped(arg: str) -> str:
        flag, equals, value = arg.partition("=")
        for mount in mounts:  # longest mount path first, each argument mapped once
            if value == mount["mountPath"] or value.startswith(mount["mountPath"] + "/"):
                return flag + equals + str(folders[mount["name"]]) + value[len(mount["mountPath"]):]
        return arg

    args = [mapped(arg) for arg in container["args"]]
    replaced = {"--host=0.0.0.0": "--host=127.0.0.1", "--port=8443": f"--port={port}"}
    assert set(replaced) <= set(args), args
    return [replaced.get(a, a) for a in args]


def context_trusting(bundle_b64: str) -> ssl.SSLContext:
    """A client context that trusts exactly one caBundle, verifying the host name."""
    context = ssl.create_default_context(cadata=base64.b64decode(bundle_b64).decode())
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    return context


def call(port: int, context: ssl.SSLContext, server_name: str, method: str, path: str,
         body: bytes | None = None) -> tuple[int, bytes]:
    """One HTTPS request to 127.0.0.1 with SNI and verification for `server_name`."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=server_name) as tls:
        head = [f"{method} {path} HTTP/1.1", f"Host: {server_name}", "Connection: close"]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        tls.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + (body or b""))
        response = b""
        while chunk := tls.recv(65536):
            response += chunk
    status_line, _, rest = response.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def service_name(configuration: Manifest) -> tuple[str, str]:
    """The DNS name and path the apiserver uses for the configuration's (only) webhook."""
    (webhook,) = configuration["webhooks"]
    service = webhook["clientConfig"]["service"]
    return f"{service['name']}.{service['namespace']}.svc", service["path"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    """Certificates for the rendered Service, caBundle in the webhooks, serve running."""
    root = tmp_path_factory.mktemp("cluster")
    manifests = render(RenderOptions(namespace=NAMESPACE))
    service = one(manifests, "Service")["metadata"]
    tls_dir = root / "certs"
    certs("init", "--dir", str(tls_dir), "--service", service["name"],
          "--namespace", service["namespace"])
    bundle = certs("bundle", "--dir", str(tls_dir)).strip()
    configurations = {}
    for kind in WEBHOOK_KINDS:
        configuration = copy.deepcopy(one(manifests, kind))
        patch = ca_bundle_patch(configuration, bundle)
        configurations[kind] = jsonpatch.JsonPatch(patch).apply(configuration)
    other = root / "other"
    certs("init", "--dir", str(other))

    port = free_port()
    argv = serve_argv(manifests, mounted_folders(manifests, root / "pod", tls_dir), port)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAGUARD_")}
    log = root / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "draguard.webhook.cli.main", *argv],
                                   stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root)
    try:
        wait_ready(process, port, configurations["ValidatingWebhookConfiguration"], log)
        yield Installed(configurations, port, (other / "ca.crt").read_bytes())
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_ready(process: subprocess.Popen[bytes], port: int, configuration: Manifest,
               log: Path) -> None:
    bundle = configuration["webhooks"][0]["clientConfig"]["caBundle"]
    name, _ = service_name(configuration)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"draguard serve exited {process.returncode}:\n{log.read_text()}")
        try:
            if call(port, context_trusting(bundle), name, "GET", "/readyz")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    pytest.fail(f"draguard serve not ready in 30 s:\n{log.read_text()}")


def admission_review(uid: str) -> bytes:
    claim = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "team-a"},
        "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "big", "deviceClassName": "big.example.com"},
            {"name": "small", "deviceClassName": "small.example.com", "count": 2}]}]}},
    }
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "operation": "CREATE", "namespace": "team-a", "name": "gpu",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"},
        "object": claim}}
    return json.dumps(review).encode()


@pytest.mark.parametrize("kind", WEBHOOK_KINDS)
def test_client_trusting_only_the_ca_bundle_reaches_serve_by_service_name(
    installed: Installed, kind: str
) -> None:
    """With only the configuration's caBundle and its service name, the review is answered."""
    configuration = installed.configurations[kind]
    bundle = configuration["webhooks"][0]["clientConfig"]["caBundle"]
    name, path = service_name(configuration)
    assert name == f"draguard.{NAMESPACE}.svc"
    status, body = call(installed.port, context_trusting(bundle), name, "POST", path,
                        admission_review(f"uid-{kind}"))
    assert status == 200, body
    response = json.loads(body)["response"]
    assert response["uid"] == f"uid-{kind}"
    assert response["allowed"] is True


def test_both_configurations_carry_the_same_bundle(installed: Installed) -> None:
    """Validating and mutating webhooks trust the same CA, so one rotation serves both."""
    bundles = {webhook["clientConfig"]["caBundle"]
               for configuration in installed.configurations.values()
               for webhook in configuration["webhooks"]}
    assert len(bundles) == 1


def test_another_namespace_s_service_name_is_refused(installed: Installed) -> None:
    """The certificate is for the rendered namespace only: another service name fails to verify."""
    configuration = installed.configurations["ValidatingWebhookConfiguration"]
    bundle = configuration["webhooks"][0]["clientConfig"]["caBundle"]
    with pytest.raises(ssl.SSLCertVerificationError):
        call(installed.port, context_trusting(bundle), "draguard.draguard-system.svc",
             "GET", "/healthz")


def test_a_client_trusting_another_ca_is_refused(installed: Installed) -> None:
    """A caBundle from another CA does not verify the server: the bundle really matters."""
    configuration = installed.configurations["ValidatingWebhookConfiguration"]
    name, _ = service_name(configuration)
    other = base64.b64encode(installed.other_ca).decode()
    with pytest.raises(ssl.SSLCertVerificationError):
        call(installed.port, context_trusting(other), name, "GET", "/healthz")
