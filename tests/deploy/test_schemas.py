"""Every rendered object is valid against the Kubernetes schemas, in strict mode."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from kubernetes_validate.utils import SchemaNotFoundError, latest_version

from draguard.deploy.render import CERT_MODES, RenderOptions, render
from draguard.schema.model.releases import OLDEST

Manifest = dict[str, Any]

NEWEST_SCHEMAS = latest_version()
# draguard supports clusters from 1.OLDEST on; the manifests must apply there too.
KUBERNETES_VERSIONS = (NEWEST_SCHEMAS, f"1.{OLDEST}")
CERT_MANAGER_SCHEMA = json.loads(
    (Path(__file__).parent / "data" / "cert-manager-v1.schema.json").read_text(encoding="utf-8")
)
OPTIONS = [
    option
    for mode in CERT_MODES
    for option in (
        RenderOptions(certs=mode),
        RenderOptions(certs=mode, namespace="ops", replicas=3, image="r.example:5000/d@sha256:0"),
    )
]
OBJECTS = [
    pytest.param(manifest, id=f"{o.certs}-{o.namespace}-{manifest['kind']}-"
                 f"{manifest['metadata']['name']}")
    for o in OPTIONS
    for manifest in render(o)
]


def validate(manifest: Manifest, version: str) -> None:
    """kubernetes-validate in strict mode; cert-manager's CRDs against their vendored subset."""
    if manifest["apiVersion"].startswith("cert-manager.io/"):
        jsonschema.Draft202012Validator(CERT_MANAGER_SCHEMA).validate(manifest)
    else:
        kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("manifest", OBJECTS)
def test_rendered_object_is_valid_in_strict_mode(manifest: Manifest, version: str) -> None:
    """The object passes strict schema validation (unknown fields are errors)."""
    validate(manifest, version)


def test_only_cert_manager_objects_lack_a_kubernetes_schema() -> None:
    """kubernetes-validate knows every rendered kind but cert-manager's Issuer and Certificate."""
    missing = set()
    for options in OPTIONS:
        for manifest in render(options):
            try:
                kubernetes_validate.validate(manifest, NEWEST_SCHEMAS, strict=True)
            except SchemaNotFoundError:
                missing.add((manifest["apiVersion"], manifest["kind"]))
    assert missing == {("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate")}


def _deployment() -> Manifest:
    found: Manifest = next(m for m in render() if m["kind"] == "Deployment")
    return copy.deepcopy(found)


def _serving_certificate() -> Manifest:
    manifests = render(RenderOptions(certs="cert-manager"))
    found: Manifest = next(m for m in manifests if m["metadata"]["name"] == "draguard-serving")
    return copy.deepcopy(found)


def _unknown_container_field() -> Manifest:
    manifest = _deployment()
    manifest["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    return manifest


def _probe_scheme_wrong_type() -> Manifest:
    manifest = _deployment()
    manifest["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"] = {
        "path": "/readyz", "port": "https", "scheme": 443}
    return manifest


def _certificate_typo() -> Manifest:
    manifest = _serving_certificate()
    manifest["spec"]["dnsName"] = manifest["spec"].pop("dnsNames")
    return manifest


def _certificate_bad_duration() -> Manifest:
    manifest = _serving_certificate()
    manifest["spec"]["renewBefore"] = "4 months"
    return manifest


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(_unknown_container_field, id="deployment-unknown-field"),
        pytest.param(_probe_scheme_wrong_type, id="deployment-wrong-type"),
        pytest.param(_certificate_typo, id="certificate-unknown-field"),
        pytest.param(_certificate_bad_duration, id="certificate-bad-duration"),
    ],
)
def test_validation_rejects_a_broken_object(broken: Any) -> None:
    """The validators above reject a typo or a wrong type, so passing them means something."""
    with pytest.raises(jsonschema.ValidationError):
        validate(broken(), NEWEST_SCHEMAS)
