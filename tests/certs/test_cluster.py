"""Cluster mode against a fake API: exact Secrets, caBundle patches, fetching the CA back."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from draguard.certs.cli import main
from draguard.certs.cluster import (
    LABELS,
    ClusterError,
    JsonObject,
    WebhookKind,
    apply_secret,
    ca_bundle_patch,
    publish,
    tls_secret_body,
)
from draguard.certs.errors import CertificateFileError
from draguard.certs.files import StatePaths, ca_bundle_b64, renew

NS = "draguard-system"
VALIDATING: WebhookKind = "ValidatingWebhookConfiguration"
MUTATING: WebhookKind = "MutatingWebhookConfiguration"
DAY = dt.timedelta(days=1)


class FakeCluster:
    """An in-memory `ClusterApi` that records every call and applies patches with jsonpatch."""

    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], JsonObject] = {}
        self.configurations: dict[tuple[WebhookKind, str], JsonObject] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.conflicts = 0

    def read_secret(self, namespace: str, name: str) -> JsonObject | None:
        self.calls.append(("read_secret", namespace, name))
        found = self.secrets.get((namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def create_secret(self, namespace: str, body: JsonObject) -> None:
        self.calls.append(("create_secret", namespace, copy.deepcopy(body)))
        name = body["metadata"]["name"]
        if (namespace, name) in self.secrets:
            raise ClusterError("already exists", status=409)
        self._store(namespace, name, body, version=1)

    def replace_secret(self, namespace: str, name: str, body: JsonObject) -> None:
        self.calls.append(("replace_secret", namespace, name, copy.deepcopy(body)))
        if self.conflicts:
            self.conflicts -= 1
            self._bump(namespace, name)
            raise ClusterError("the object has been modified", status=409)
        current = self.secrets[(namespace, name)]["metadata"]["resourceVersion"]
        if body["metadata"].get("resourceVersion") != current:
            raise ClusterError("stale resourceVersion", status=409)
        self._store(namespace, name, body, version=int(current) + 1)

    def read_webhook_configuration(self, kind: WebhookKind, name: str) -> JsonObject | None:
        self.calls.append(("read_webhook_configuration", kind, name))
        found = self.configurations.get((kind, name))
        return copy.deepcopy(found) if found is not None else None

    def patch_webhook_configuration(
        self, kind: WebhookKind, name: str, patch: list[JsonObject]
    ) -> None:
        self.calls.append(("patch_webhook_configuration", kind, name, copy.deepcopy(patch)))
        self.configurations[(kind, name)] = jsonpatch.apply_patch(
            self.configurations[(kind, name)], patch
        )

    def writes(self) -> list[tuple[Any, ...]]:
        return [call for call in self.calls if not call[0].startswith("read")]

    def _store(self, namespace: str, name: str, body: JsonObject, *, version: int) -> None:
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(version)
        self.secrets[(namespace, name)] = stored

    def _bump(self, namespace: str, name: str) -> None:
        meta = self.secrets[(namespace, name)]["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)


def webhook_configuration(kind: WebhookKind, *names: str, bundle: str | None = None) -> JsonObject:
    """A webhook configuration as the apiserver returns it, with `names` as its webhooks."""
    webhooks = []
    for name in names:
        client_config: JsonObject = {"service": {"name": "draguard", "namespace": NS}}
        if bundle is not None:
            client_config["caBundle"] = bundle
        webhooks.append({"name": name, "clientConfig": client_config, "sideEffects": "None"})
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "draguard", "resourceVersion": "7"},
        "webhooks": webhooks,
    }


@pytest.fixture
def cluster() -> FakeCluster:
    """A fake cluster holding draguard's two webhook configurations, without caBundle yet."""
    fake = FakeCluster()
    fake.configurations[(VALIDATING, "draguard")] = webhook_configuration(
        VALIDATING, "claims.validate.draguard.io", "templates.validate.draguard.io"
    )
    fake.configurations[(MUTATING, "draguard")] = webhook_configuration(
        MUTATING, "claims.mutate.draguard.io"
    )
    return fake


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _publish(cluster: FakeCluster, state: StatePaths) -> Any:
    return publish(
        cluster,
        state.dir,
        secret="draguard-tls",
        namespace=NS,
        webhook_config="draguard",
        now=dt.datetime(2030, 1, 2, tzinfo=dt.UTC),  # a day after the `state` fixture's issue
    )


def _cli(argv: list[str], cluster: FakeCluster, now: dt.datetime) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, connect=lambda _: cluster, now=now, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# --- publish ---------------------------------------------------------------------------


def test_publish_writes_exactly_these_secrets(cluster: FakeCluster, state: StatePaths) -> None:
    """A first publish creates the CA Secret and then the kubernetes.io/tls Secret, byte-exact."""
    _publish(cluster, state)
    created = [call for call in cluster.writes() if call[0] == "create_secret"]
    assert created == [
        (
            "create_secret",
            NS,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "draguard-tls-ca", "namespace": NS, "labels": LABELS},
                "type": "Opaque",
                "data": {
                    "ca.crt": _b64(state.ca_cert.read_bytes()),
                    "ca.key": _b64(state.ca_key.read_bytes()),
                },
            },
        ),
        (
            "create_secret",
            NS,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "draguard-tls", "namespace": NS, "labels": LABELS},
                "type": "kubernetes.io/tls",
                "data": {
                    "tls.crt": _b64(state.tls_cert.read_bytes()),
                    "tls.key": _b64(state.tls_key.read_bytes()),
                    "ca.crt": _b64(state.ca_cert.read_bytes()),
                },
            },
        ),
    ]


def test_publish_patches_every_webhook(cluster: FakeCluster, state: StatePaths) -> None:
    """Each webhook of both configurations gets the bundle, guarded by a test of its name."""
    result = _publish(cluster, state)
    bundle = ca_bundle_b64(state.dir)
    patches = [call for call in cluster.writes() if call[0] == "patch_webhook_configuration"]
    assert patches == [
        (
            "patch_webhook_configuration",
            VALIDATING,
            "draguard",
            [
                {"op": "test", "path": "/webhooks/0/name", "value": "claims.validate.draguard.io"},
                {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": bundle},
                {
                    "op": "test",
                    "path": "/webhooks/1/name",
                    "value": "templates.validate.draguard.io",
                },
                {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": bundle},
            ],
        ),
        (
            "patch_webhook_configuration",
            MUTATING,
            "draguard",
            [
                {"op": "test", "path": "/webhooks/0/name", "value": "claims.mutate.draguard.io"},
                {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": bundle},
            ],
        ),
    ]
    assert result.configurations == ((VALIDATING, "patched", 2), (MUTATING, "patched", 1))
    for configuration in cluster.configurations.values():
        for webhook in configuration["webhooks"]:
            assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == (
                state.ca_cert.read_bytes()
            )


def test_publish_twice_changes_nothing(cluster: FakeCluster, state: StatePaths) -> None:
    """Publishing the same folder again reads but writes nothing."""
    _publish(cluster, state)
    cluster.calls.clear()
    result = _publish(cluster, state)
    assert cluster.writes() == []
    assert result.secrets == (("draguard-tls-ca", "unchanged"), ("draguard-tls", "unchanged"))
    assert result.configurations == ((VALIDATING, "unchanged", 0), (MUTATING, "unchanged", 0))


def test_publish_after_renewal_touches_only_the_serving_secret(
    cluster: FakeCluster, state: StatePaths, now: dt.datetime
) -> None:
    """A renewal keeps the CA, so only the tls Secret changes and no caBundle is patched."""
    _publish(cluster, state)
    renew(state.dir, now=now + 250 * DAY)
    cluster.calls.clear()
    result = _publish(cluster, state)
    assert [call[0] for call in cluster.writes()] == ["replace_secret"]
    assert result.secrets == (("draguard-tls-ca", "unchanged"), ("draguard-tls", "updated"))
    stored = cluster.secrets[(NS, "draguard-tls")]
    assert stored["data"]["tls.crt"] == _b64(state.tls_cert.read_bytes())


def test_update_keeps_foreign_metadata(cluster: FakeCluster, state: StatePaths) -> None:
    """Replacing a Secret keeps others' labels and annotations and sends its resourceVersion."""
    body = tls_secret_body(
        name="draguard-tls", namespace=NS, cert_pem=b"old", key_pem=b"old", ca_pem=b"old"
    )
    body["metadata"]["labels"] = {"team": "platform"}
    body["metadata"]["annotations"] = {"note": "kept"}
    cluster.secrets[(NS, "draguard-tls")] = {
        **body,
        "metadata": {**body["metadata"], "resourceVersion": "41"},
    }
    _publish(cluster, state)
    replaced = [call for call in cluster.writes() if call[0] == "replace_secret"]
    assert len(replaced) == 1
    metadata = replaced[0][3]["metadata"]
    assert metadata == {
        "name": "draguard-tls",
        "namespace": NS,
        "labels": {"team": "platform", **LABELS},
        "annotations": {"note": "kept"},
        "resourceVersion": "41",
    }


def test_conflict_is_retried(cluster: FakeCluster, state: StatePaths) -> None:
    """A 409 from a concurrent writer leads to a fresh read and a second replace."""
    cluster.secrets[(NS, "x")] = {
        **tls_secret_body(name="x", namespace=NS, cert_pem=b"a", key_pem=b"a", ca_pem=b"a")
    }
    cluster.secrets[(NS, "x")]["metadata"]["resourceVersion"] = "1"
    cluster.conflicts = 1
    body = tls_secret_body(name="x", namespace=NS, cert_pem=b"b", key_pem=b"b", ca_pem=b"b")
    assert apply_secret(cluster, body) == "updated"
    assert [call[0] for call in cluster.writes()] == ["replace_secret", "replace_secret"]
    assert cluster.secrets[(NS, "x")]["data"] == body["data"]


def test_secret_type_cannot_change(cluster: FakeCluster, state: StatePaths) -> None:
    """An existing Secret of another type is an error, not a silent replacement."""
    cluster.secrets[(NS, "draguard-tls")] = {
        "metadata": {"name": "draguard-tls", "namespace": NS, "resourceVersion": "1"},
        "type": "Opaque",
        "data": {},
    }
    with pytest.raises(ClusterError, match="type 'Opaque'"):
        _publish(cluster, state)


def test_stale_patch_fails_instead_of_hitting_the_wrong_webhook(state: StatePaths) -> None:
    """A patch computed before the webhooks were reordered fails on its name test."""
    before = webhook_configuration(VALIDATING, "a.draguard.io", "b.draguard.io")
    reordered = webhook_configuration(VALIDATING, "b.draguard.io", "a.draguard.io")
    reordered["webhooks"][1]["clientConfig"]["caBundle"] = "current"
    patch = ca_bundle_patch(before, "new")
    patch = [op for op in patch if op["path"].startswith("/webhooks/1")]
    with pytest.raises(jsonpatch.JsonPatchTestFailed):
        jsonpatch.apply_patch(reordered, patch)


def test_only_webhooks_lacking_the_bundle_are_patched() -> None:
    """Webhooks that already carry the bundle get no operations."""
    configuration = webhook_configuration(VALIDATING, "a.draguard.io", "b.draguard.io")
    configuration["webhooks"][0]["clientConfig"]["caBundle"] = "same"
    assert ca_bundle_patch(configuration, "same") == [
        {"op": "test", "path": "/webhooks/1/name", "value": "b.draguard.io"},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "same"},
    ]


def test_publish_refuses_broken_local_files(cluster: FakeCluster, state: StatePaths) -> None:
    """Garbage in the state folder never reaches the cluster: no API call is made."""
    state.tls_key.write_bytes(b"junk")
    with pytest.raises(CertificateFileError):
        _publish(cluster, state)
    assert cluster.calls == []


@pytest.mark.parametrize(
    ("present", "code", "said"),
    [
        pytest.param(
            (VALIDATING,),
            0,
            "MutatingWebhookConfiguration draguard: not-found",
            id="validating-only",
        ),
        pytest.param((), 1, "neither webhook configuration", id="none"),
    ],
)
def test_publish_cli_exit_codes(
    cluster: FakeCluster,
    state: StatePaths,
    now: dt.datetime,
    present: tuple[WebhookKind, ...],
    code: int,
    said: str,
) -> None:
    """`publish` exits 1 only when neither webhook configuration exists."""
    for kind in (VALIDATING, MUTATING):
        if kind not in present:
            del cluster.configurations[(kind, "draguard")]
    argv = [
        "publish",
        "--dir",
        str(state.dir),
        "--namespace",
        NS,
        "--secret",
        "draguard-tls",
        "--webhook-config",
        "draguard",
        "--in-cluster",
    ]
    result, out, _ = _cli(argv, cluster, now)
    assert result == code
    assert said in out


# --- reading the CA back ---------------------------------------------------------------


def _published(cluster: FakeCluster, state: StatePaths) -> FakeCluster:
    _publish(cluster, state)
    cluster.calls.clear()
    return cluster


def test_init_from_secret_reuses_the_cluster_ca(
    cluster: FakeCluster, state: StatePaths, tmp_path: Path, now: dt.datetime
) -> None:
    """A Job with an empty folder fetches the CA and serving pair from the Secrets, reusing both."""
    _published(cluster, state)
    fresh = tmp_path / "job"
    code, out, err = _cli(
        ["init", "--dir", str(fresh), "--from-secret", "draguard-tls", "--in-cluster"], cluster, now
    )
    assert (code, err) == (0, "")
    assert "reused" in out
    for name in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
        assert (fresh / name).read_bytes() == (state.dir / name).read_bytes()
    assert cluster.writes() == []


def test_init_from_secret_starts_a_ca_when_there_is_none(
    cluster: FakeCluster, tmp_path: Path, now: dt.datetime
) -> None:
    """On a first install there is no CA Secret: init creates a CA and publish then saves it."""
    code, out, _ = _cli(
        ["init", "--dir", str(tmp_path / "job"), "--from-secret", "draguard-tls"], cluster, now
    )
    assert code == 0
    assert "created a new CA" in out
    assert ("read_secret", NS, "draguard-tls-ca") in cluster.calls


@pytest.mark.parametrize(
    ("later", "said", "renewed"),
    [
        pytest.param(dt.timedelta(0), "not renewed", False, id="not-due"),
        pytest.param(250 * DAY, "renewed the serving certificate", True, id="due"),
    ],
)
def test_renew_from_secret_keeps_the_cluster_ca(
    cluster: FakeCluster,
    state: StatePaths,
    tmp_path: Path,
    now: dt.datetime,
    later: dt.timedelta,
    said: str,
    renewed: bool,
) -> None:
    """The CronJob's renew signs with the CA from the Secret, and only when due."""
    _published(cluster, state)
    fresh = tmp_path / "cron"
    code, out, _ = _cli(
        ["renew", "--dir", str(fresh), "--from-secret", "draguard-tls"], cluster, now + later
    )
    assert code == 0
    assert said in out
    assert (fresh / "ca.crt").read_bytes() == state.ca_cert.read_bytes()
    assert ((fresh / "tls.crt").read_bytes() != state.tls_cert.read_bytes()) is renewed


def test_renew_from_secret_without_a_ca_is_an_error(
    cluster: FakeCluster, tmp_path: Path, now: dt.datetime
) -> None:
    """Renewal in the cluster without the CA Secret exits 2 and names the Secret."""
    code, _, err = _cli(
        ["renew", "--dir", str(tmp_path), "--from-secret", "draguard-tls"], cluster, now
    )
    assert code == 2
    assert f"Secret {NS}/draguard-tls-ca: not found" in err


@pytest.mark.parametrize(
    ("spoil", "named"),
    [
        pytest.param(lambda data: data.update({"ca.key": _b64(b"junk")}), "ca.key", id="junk-key"),
        pytest.param(lambda data: data.pop("ca.crt"), "ca.crt", id="missing-cert"),
        pytest.param(lambda data: data.update({"ca.crt": "%%%"}), "ca.crt", id="bad-base64"),
    ],
)
def test_garbage_in_the_ca_secret_is_named(
    cluster: FakeCluster,
    state: StatePaths,
    tmp_path: Path,
    now: dt.datetime,
    spoil: Callable[[dict[str, str]], object],
    named: str,
) -> None:
    """A CA Secret with unusable data exits 2 naming the Secret and its key."""
    _published(cluster, state)
    spoil(cluster.secrets[(NS, "draguard-tls-ca")]["data"])
    code, _, err = _cli(
        ["init", "--dir", str(tmp_path / "job"), "--from-secret", "draguard-tls"], cluster, now
    )
    assert code == 2
    assert f"Secret {NS}/draguard-tls-ca {named}: " in err
    assert "Traceback" not in err


def test_cluster_errors_exit_2(state: StatePaths, now: dt.datetime) -> None:
    """An apiserver error ends the command with exit 2 and its message, no traceback."""

    class Forbidden(FakeCluster):
        def read_secret(self, namespace: str, name: str) -> JsonObject | None:
            raise ClusterError('apiserver answered 403: secrets "x" is forbidden', status=403)

    argv = [
        "publish",
        "--dir",
        str(state.dir),
        "--secret",
        "draguard-tls",
        "--webhook-config",
        "draguard",
    ]
    code, _, err = _cli(argv, Forbidden(), now)
    assert code == 2
    assert "403" in err and "Traceback" not in err
