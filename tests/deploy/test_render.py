"""`draguard deploy render` renders the same objects as `kubectl kustomize` of the overlays."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from draguard.deploy import cli
from draguard.deploy.kustomize import KustomizeError, build
from draguard.deploy.render import (
    CERT_MODES,
    DEFAULT_NAMESPACE,
    DEPLOY_ROOT,
    RESERVED_NAMESPACES,
    CertMode,
    ImageRef,
    RenderOptions,
    overlay_dir,
    render,
    render_yaml,
    wrapper_kustomization,
)
from draguard.webhook.cli.main import main as draguard_main

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

CUSTOM = [
    pytest.param(RenderOptions(certs=mode, namespace="dra-admission", replicas=3,
                               image="registry.example:5000/team/draguard:1.2.3"),
                 id=f"{mode}-tagged-image")
    for mode in CERT_MODES
] + [
    pytest.param(RenderOptions(certs=mode, namespace="dra-view", cluster_view=True),
                 id=f"{mode}-cluster-view")
    for mode in CERT_MODES
] + [
    pytest.param(RenderOptions(certs=mode, namespace="x", replicas=1,
                               image="registry.example/draguard@sha256:" + "ab" * 32),
                 id=f"{mode}-digest-image-one-replica")
    for mode in CERT_MODES
]


def kustomize(root: Path) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize root` prints."""
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(root)], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def write_kustomization(folder: Path, content: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(content, sort_keys=False))
    return folder


def relative(target: Path, start: Path) -> str:
    # kustomize refuses absolute paths in `resources`.
    return os.path.relpath(target, start)


@needs_kubectl
@pytest.mark.parametrize("mode", CERT_MODES)
def test_default_render_equals_kubectl_kustomize_of_the_overlay(mode: CertMode) -> None:
    """With no options, render gives exactly kubectl kustomize's objects, in its order."""
    options = RenderOptions(certs=mode)
    assert render(options) == kustomize(overlay_dir(options.certs))


@needs_kubectl
@pytest.mark.parametrize("options", CUSTOM)
def test_render_with_options_equals_kubectl_kustomize_of_the_wrapper(
    options: RenderOptions, tmp_path: Path
) -> None:
    """Namespace, image and replicas render like the documented wrapper kustomization."""
    folder = tmp_path / "wrapper"
    overlay = relative(overlay_dir(options.certs), folder)
    write_kustomization(folder, wrapper_kustomization(options, overlay))
    assert render(options) == kustomize(folder)


COMPONENTS = [
    pytest.param("fail-open", {"ValidatingWebhookConfiguration": "Ignore",
                               "MutatingWebhookConfiguration": "Ignore"}, id="fail-open"),
    pytest.param("mutate-fail-closed", {"ValidatingWebhookConfiguration": "Fail",
                                        "MutatingWebhookConfiguration": "Fail"},
                 id="mutate-fail-closed"),
]


@needs_kubectl
@pytest.mark.parametrize("mode", CERT_MODES)
@pytest.mark.parametrize(("component", "expected"), COMPONENTS)
def test_failure_policy_components_build_like_kubectl_kustomize(
    mode: CertMode, component: str, expected: dict[str, str], tmp_path: Path
) -> None:
    """The Python kustomize subset applies a component's patches like kustomize."""
    folder = tmp_path / component
    write_kustomization(folder, {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative(overlay_dir(mode), folder)],
        "components": [relative(DEPLOY_ROOT / "components" / component, folder)],
    })
    built = build(folder)
    assert built == kustomize(folder)
    policies = {m["kind"]: m["webhooks"][0]["failurePolicy"] for m in built
                if m["kind"].endswith("WebhookConfiguration")}
    assert policies == expected


@pytest.mark.parametrize("mode", CERT_MODES)
def test_client_ca_component_requires_client_certificates(mode: CertMode, tmp_path: Path
                                                          ) -> None:
    """The mutual-TLS component (issue 15 §5): the flag, the CA mounted, TCP probes."""
    folder = tmp_path / "client-ca"
    write_kustomization(folder, {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative(overlay_dir(mode), folder)],
        "components": [relative(DEPLOY_ROOT / "components" / "client-ca", folder)],
    })
    built = build(folder)
    if KUBECTL is not None:
        assert built == kustomize(folder)
    [deployment] = [m for m in built if m["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert "--client-ca=/etc/draguard/client-ca/ca.crt" in container["args"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["client-ca"] == "/etc/draguard/client-ca"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["client-ca"]["configMap"]["name"] == "draguard-client-ca"
    assert "tcpSocket" in container["readinessProbe"] and "tcpSocket" in container["livenessProbe"]


@pytest.mark.parametrize("options", CUSTOM)
def test_no_default_namespace_survives_a_namespace_change(options: RenderOptions) -> None:
    """After choosing a namespace, no object mentions draguard-system any more."""
    assert DEFAULT_NAMESPACE not in render_yaml(options)


@settings(max_examples=examples(25), deadline=None)
@given(namespace=st.from_regex(r"[a-z]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True).filter(
           lambda n: n not in RESERVED_NAMESPACES and not n.startswith("kube-")),
       mode=st.sampled_from(CERT_MODES))
def test_every_namespaced_object_lands_in_the_chosen_namespace(
    namespace: str, mode: CertMode
) -> None:
    """Every namespaced object, subject and service reference follows --namespace."""
    manifests = render(RenderOptions(namespace=namespace, certs=mode))
    for manifest in manifests:
        metadata = manifest["metadata"]
        if manifest["kind"] == "Namespace":
            assert metadata["name"] == namespace
        assert metadata.get("namespace", namespace) == namespace
        for subject in manifest.get("subjects", []):
            assert subject["namespace"] == namespace
        for webhook in manifest.get("webhooks", []):
            assert webhook["clientConfig"]["service"]["namespace"] == namespace


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        pytest.param("draguard", ImageRef("draguard"), id="bare"),
        pytest.param("draguard:0.1.0", ImageRef("draguard", tag="0.1.0"), id="tag"),
        pytest.param("reg:5000/a/draguard", ImageRef("reg:5000/a/draguard"), id="port-no-tag"),
        pytest.param("reg:5000/a/draguard:v1", ImageRef("reg:5000/a/draguard", tag="v1"),
                     id="port-and-tag"),
        pytest.param("r/draguard@sha256:00", ImageRef("r/draguard", digest="sha256:00"),
                     id="digest"),
    ],
)
def test_image_references_split_into_name_tag_and_digest(
    reference: str, expected: ImageRef
) -> None:
    """An image reference splits as kustomize's `images` transformer expects."""
    assert ImageRef.parse(reference) == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"namespace": "Draguard"}, id="namespace-uppercase"),
        pytest.param({"namespace": "a" * 64}, id="namespace-too-long"),
        pytest.param({"namespace": "ns.dotted"}, id="namespace-dotted"),
        pytest.param({"namespace": "default"}, id="namespace-default-shared"),
        pytest.param({"namespace": "kube-system"}, id="namespace-kube-system"),
        pytest.param({"namespace": "kube-anything"}, id="namespace-kube-prefix"),
        pytest.param({"replicas": 0}, id="replicas-zero"),
        pytest.param({"image": "has space"}, id="image-space"),
        pytest.param({"image": ""}, id="image-empty"),
        pytest.param({"certs": "vault"}, id="certs-unknown"),
    ],
)
def test_unusable_options_are_refused(kwargs: dict[str, Any]) -> None:
    """Options that would render broken manifests raise ValueError."""
    with pytest.raises(ValueError):
        RenderOptions(**kwargs)


def test_cli_without_options_prints_the_self_signed_overlay(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`draguard deploy render` with no options prints the default manifests and exits 0."""
    assert draguard_main(["deploy", "render"]) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert printed == render(RenderOptions())


def test_cli_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """`draguard deploy render --help` documents every option and exits 0."""
    assert cli.main(["render", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--namespace", "--image", "--replicas", "--certs"))


@needs_kubectl
def test_base_builds_like_kubectl_kustomize() -> None:
    """The shared base alone also builds exactly as kustomize builds it."""
    assert build(DEPLOY_ROOT / "base") == kustomize(DEPLOY_ROOT / "base")


def test_cli_passes_every_option_through(capsys: pytest.CaptureFixture[str]) -> None:
    """Each flag of `draguard deploy render` reaches the rendered objects."""
    argv = ["render", "--namespace", "ops", "--image", "r/d:9", "--replicas", "4",
            "--certs", "cert-manager", "--cluster-view"]
    assert cli.main(argv) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert printed == render(RenderOptions(namespace="ops", image="r/d:9", replicas=4,
                                           certs="cert-manager", cluster_view=True))


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="no-subcommand"),
        pytest.param(["publish"], id="unknown-subcommand"),
        pytest.param(["render", "--certs", "vault"], id="unknown-cert-mode"),
        pytest.param(["render", "--replicas", "two"], id="replicas-not-a-number"),
        pytest.param(["render", "--replicas", "0"], id="replicas-zero"),
        pytest.param(["render", "--namespace", "Bad_NS"], id="namespace-invalid"),
        pytest.param(["render", "--namespace", "default"], id="namespace-shared"),
    ],
)
def test_cli_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A usage error exits 2, prints nothing on stdout and says why on stderr."""
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err


@pytest.mark.parametrize(
    ("kustomization", "message"),
    [
        pytest.param({"namePrefix": "x-"}, "does not implement", id="unsupported-field"),
        pytest.param({"patches": [{"target": {"kind": "Service"},
                                   "patch": "metadata:\n  labels: {a: b}\n"}]},
                     "JSON6902", id="strategic-merge-patch"),
        pytest.param({"patches": [{"target": {"kind": "Secret"},
                                   "patch": "- {op: remove, path: /data}\n"}]},
                     "matches no resource", id="patch-target-missing"),
        pytest.param({"patches": [{"target": {"kind": "Service", "labelSelector": "a=b"},
                                   "patch": "[]"}]},
                     "target must use only", id="patch-label-selector"),
        pytest.param({"resources": ["service.yaml", "service.yaml"]}, "defined twice",
                     id="duplicate-resource"),
    ],
)
def test_kustomizations_beyond_the_subset_are_refused(
    kustomization: dict[str, Any], message: str, tmp_path: Path
) -> None:
    """A kustomize feature the Python renderer lacks is an error, never a silent difference."""
    (tmp_path / "service.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\n"
    )
    write_kustomization(tmp_path, {"resources": ["service.yaml"], **kustomization})
    with pytest.raises(KustomizeError, match=message):
        build(tmp_path)


@needs_kubectl
def test_the_documented_wrapper_kustomization_renders_like_the_cli(tmp_path: Path) -> None:
    """The README's kustomization for another namespace gives what `deploy render` prints."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (block,) = [b.partition("\n")[2] for b in text.split("```")[1::2]
                if b.startswith("yaml") and "kind: Kustomization" in b]
    documented = yaml.safe_load(block)
    options = RenderOptions(namespace=documented["namespace"], certs="cert-manager",
                            image="registry.example/draguard:0.1.0")
    folder = tmp_path / "site" / "draguard-install"
    documented["resources"] = [relative(overlay_dir(options.certs), folder)]
    write_kustomization(folder, documented)
    assert kustomize(folder) == render(options)
    assert documented == wrapper_kustomization(options, documented["resources"][0])
