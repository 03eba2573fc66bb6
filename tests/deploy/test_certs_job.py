"""The self-signed overlay's Job and CronJob, run for real against a fake apiserver.

Each container's command line from the rendered manifests is handed to
`draguard certs` in-process, with the pod's emptyDir as a temporary folder and a
fake cluster that holds the rendered webhook configurations and enforces the
rendered RBAC for the pod's ServiceAccount. So a command-line drift, a missing
permission or a CA that changes on renewal fails here, not in a cluster.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import io
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from cryptography import x509

from draguard.certs.authority import service_dns_names
from draguard.certs.cli import main as certs_main
from draguard.certs.cluster import ClusterError
from draguard.deploy.render import RenderOptions, render

Manifest = dict[str, Any]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
PLURALS = {"ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
           "MutatingWebhookConfiguration": "mutatingwebhookconfigurations"}


class FakeCluster:
    """Secrets and webhook configurations, behind the rendered RBAC of one ServiceAccount."""

    def __init__(self, manifests: list[Manifest], authorizer: Any) -> None:
        self.manifests = manifests
        self.authorizer = authorizer
        self.account = ""
        self.secrets: dict[tuple[str, str], Manifest] = {}
        self.configurations = {
            (m["kind"], m["metadata"]["name"]): copy.deepcopy(m)
            for m in manifests if m["kind"] in PLURALS
        }

    def _authorize(self, verb: str, group: str, resource: str, name: str,
                   namespace: str | None) -> None:
        if not self.authorizer(self.manifests, self.account, verb, group, resource, name,
                               namespace):
            raise ClusterError(f"forbidden: {self.account} cannot {verb} {resource} {name!r} "
                               f"in {namespace}", status=403)

    def read_secret(self, namespace: str, name: str) -> Manifest | None:
        self._authorize("get", "", "secrets", name, namespace)
        found = self.secrets.get((namespace, name))
        return copy.deepcopy(found) if found else None

    def create_secret(self, namespace: str, body: Manifest) -> None:
        # RBAC sees no name on create (the name is in the body).
        self._authorize("create", "", "secrets", "", namespace)
        key = (namespace, body["metadata"]["name"])
        if key in self.secrets:
            raise ClusterError("already exists", status=409)
        self.secrets[key] = copy.deepcopy(body)

    def replace_secret(self, namespace: str, name: str, body: Manifest) -> None:
        self._authorize("update", "", "secrets", name, namespace)
        assert (namespace, name) in self.secrets
        self.secrets[(namespace, name)] = copy.deepcopy(body)

    def read_webhook_configuration(self, kind: str, name: str) -> Manifest | None:
        self._authorize("get", "admissionregistration.k8s.io", PLURALS[kind], name, None)
        found = self.configurations.get((kind, name))
        return copy.deepcopy(found) if found else None

    def patch_webhook_configuration(self, kind: str, name: str, patch: list[Any]) -> None:
        self._authorize("patch", "admissionregistration.k8s.io", PLURALS[kind], name, None)
        key = (kind, name)
        self.configurations[key] = jsonpatch.JsonPatch(patch).apply(self.configurations[key])

    def secret_data(self, namespace: str, name: str) -> dict[str, bytes]:
        data = self.secrets[(namespace, name)]["data"]
        return {key: base64.b64decode(value) for key, value in data.items()}

    def ca_bundles(self) -> set[str]:
        return {webhook["clientConfig"].get("caBundle", "")
                for configuration in self.configurations.values()
                for webhook in configuration["webhooks"]}


def pod_of(manifests: list[Manifest], kind: str) -> Manifest:
    (owner,) = [m for m in manifests if m["kind"] == kind]
    spec = owner["spec"]["jobTemplate"]["spec"] if kind == "CronJob" else owner["spec"]
    pod: Manifest = spec["template"]["spec"]
    return pod


def run_pod(pod: Manifest, *, cluster: FakeCluster, namespace: str, scratch: Path,
            now: dt.datetime | None) -> list[str]:
    """Run the pod's containers in order as the kubelet would; their output lines."""
    cluster.account = pod["serviceAccountName"]
    folders = {v["name"]: scratch / v["name"] for v in pod["volumes"] if "emptyDir" in v}
    output: list[str] = []
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        args = [expand(arg, container, namespace) for arg in container["args"]]
        for mount in container["volumeMounts"]:
            if mount["name"] in folders:
                args = [a.replace(mount["mountPath"], str(folders[mount["name"]])) for a in args]
        assert args[0] == "certs", args
        out, err = io.StringIO(), io.StringIO()
        code = certs_main(args[1:], connect=lambda _: cluster, now=now, stdout=out, stderr=err)
        assert code == 0, f"{container['name']}: exit {code}: {err.getvalue()}"
        output.extend(out.getvalue().splitlines())
    return output


def expand(arg: str, container: Manifest, namespace: str) -> str:
    """The kubelet's $(VAR) expansion, for the downward-API variables the pods use."""
    for variable in container.get("env", []):
        assert variable["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
        arg = arg.replace(f"$({variable['name']})", namespace)
    return arg


def leaf_of(cluster: FakeCluster, namespace: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(cluster.secret_data(namespace, "draguard-tls")["tls.crt"])


@pytest.fixture(params=["draguard-system", "ops"])
def installed(request: pytest.FixtureRequest, tmp_path: Path,
              authorizer: Any) -> tuple[FakeCluster, list[Manifest], str]:
    """A fake cluster after the install Job ran, for the default and a custom namespace."""
    namespace: str = request.param
    manifests = render(RenderOptions(namespace=namespace))
    cluster = FakeCluster(manifests, authorizer)
    run_pod(pod_of(manifests, "Job"), cluster=cluster, namespace=namespace,
            scratch=tmp_path / "job", now=T0)
    return cluster, manifests, namespace


def test_install_job_writes_both_secrets_and_the_ca_bundle(
    installed: tuple[FakeCluster, list[Manifest], str],
) -> None:
    """After the Job, the TLS Secret, the CA Secret and both caBundles exist and agree."""
    cluster, _, namespace = installed
    tls = cluster.secret_data(namespace, "draguard-tls")
    ca = cluster.secret_data(namespace, "draguard-tls-ca")
    assert set(tls) == {"tls.crt", "tls.key", "ca.crt"}
    assert set(ca) == {"ca.crt", "ca.key"}
    assert tls["ca.crt"] == ca["ca.crt"]
    assert cluster.ca_bundles() == {base64.b64encode(ca["ca.crt"]).decode()}


def test_serving_certificate_names_the_rendered_service(
    installed: tuple[FakeCluster, list[Manifest], str],
) -> None:
    """The Job's certificate carries the DNS names of the Service the webhooks call."""
    cluster, manifests, namespace = installed
    (service,) = [m for m in manifests if m["kind"] == "Service"]
    sans = leaf_of(cluster, namespace).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert sans == list(service_dns_names(service["metadata"]["name"], namespace))
    for configuration in cluster.configurations.values():
        for webhook in configuration["webhooks"]:
            target = webhook["clientConfig"]["service"]
            assert f"{target['name']}.{target['namespace']}.svc" in sans


def test_rerunning_the_install_job_changes_nothing(
    installed: tuple[FakeCluster, list[Manifest], str], tmp_path: Path,
) -> None:
    """A second run (a re-apply after the TTL) keeps the CA, the serving pair and the bundles."""
    cluster, manifests, namespace = installed
    before = (copy.deepcopy(cluster.secrets), cluster.ca_bundles())
    run_pod(pod_of(manifests, "Job"), cluster=cluster, namespace=namespace,
            scratch=tmp_path / "again", now=T0 + dt.timedelta(days=1))
    assert (cluster.secrets, cluster.ca_bundles()) == before


@pytest.mark.parametrize(
    ("days", "renewed"),
    [pytest.param(10, False, id="early-kept"),
     pytest.param(300, True, id="last-third-renewed")],
)
def test_renewal_cronjob_renews_only_when_due_and_keeps_the_ca(
    installed: tuple[FakeCluster, list[Manifest], str], tmp_path: Path, days: int,
    renewed: bool,
) -> None:
    """The CronJob reissues the serving certificate in its last third, with the same CA and bundle."""
    cluster, manifests, namespace = installed
    ca_before = cluster.secret_data(namespace, "draguard-tls-ca")
    leaf_before = leaf_of(cluster, namespace)
    bundles_before = cluster.ca_bundles()
    run_pod(pod_of(manifests, "CronJob"), cluster=cluster, namespace=namespace,
            scratch=tmp_path / "cron", now=T0 + dt.timedelta(days=days))
    leaf_after = leaf_of(cluster, namespace)
    assert (leaf_after.serial_number != leaf_before.serial_number) is renewed
    assert cluster.secret_data(namespace, "draguard-tls-ca") == ca_before
    assert cluster.ca_bundles() == bundles_before
    if renewed:
        assert leaf_after.not_valid_after_utc > T0 + dt.timedelta(days=days + 300)


def test_the_job_fails_without_its_rbac(tmp_path: Path, authorizer: Any) -> None:
    """Without the certificate Role the Job cannot write its Secret: the fake does enforce RBAC."""
    manifests = [m for m in render() if not (m["kind"] == "Role"
                                             and m["metadata"]["name"] == "draguard-certs")]
    cluster = FakeCluster(manifests, authorizer)
    with pytest.raises(AssertionError, match="forbidden"):
        run_pod(pod_of(manifests, "Job"), cluster=cluster, namespace="draguard-system",
                scratch=tmp_path, now=T0)


def test_the_webhook_account_cannot_run_the_job(tmp_path: Path, authorizer: Any) -> None:
    """The webhook pods' ServiceAccount could not publish certificates even if it tried."""
    manifests = render()
    pod = copy.deepcopy(pod_of(manifests, "Job"))
    pod["serviceAccountName"] = "draguard"
    with pytest.raises(AssertionError, match="forbidden"):
        run_pod(pod, cluster=FakeCluster(manifests, authorizer), namespace="draguard-system",
                scratch=tmp_path, now=T0)
