"""The exported schemas against a real peer: kubernetes-validate's strict OpenAPI schemas.

Upstream's OpenAPI-derived schemas check field names, JSON types and required
fields; ours must be at least as strict. So for the same release and version,
whatever kubernetes-validate (strict) rejects, our schema rejects too. Documents
come from the corpus and from random damage (replaced values, removed and added
keys) to a valid baseline; the same damaged documents also check that whatever the
rule set accepts, our schema accepts.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import corpus
import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema.export import Variant, build_schema
from draguard.schema.model.options import Options
from draguard.schema.model.releases import DEFAULT_RELEASE, RELEASES
from draguard.schema.model.shapes import identify
from draguard.schema.validate import validate_object

CASES = Path(__file__).resolve().parents[1] / "cases"
PEER_RELEASES = ("1.34", "1.35", "1.36", "1.37")  # kubernetes-validate ships 1.25–1.37


@pytest.fixture(scope="module", autouse=True)
def _cached_peer_schemas() -> Iterator[None]:
    """kubernetes-validate re-reads its schema files on every call; read each once here."""
    with pytest.MonkeyPatch.context() as patch:
        original = kubernetes_validate.utils.schema_contents
        patch.setattr(
            kubernetes_validate.utils,
            "schema_contents",
            functools.lru_cache(maxsize=None)(original),
        )
        yield


def spec_left_out(doc: Any) -> bool:
    """True when a claim's `spec` (or a template's `spec`/`spec.spec`) is absent or null.

    Up to 1.36 upstream's OpenAPI marks these `required`, but the apiserver never
    enforced OpenAPI `required` on decode and validation accepts an empty spec; 1.37's
    OpenAPI dropped the requirement. Our schemas follow the apiserver, so here the peer
    is stricter by design.
    """
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return True
    return doc.get("kind") == "ResourceClaimTemplate" and not isinstance(spec.get("spec"), dict)


def peer_rejects(doc: Any, release: str) -> bool:
    """kubernetes-validate in strict mode, for the newest schemas not newer than `release`."""
    try:
        kubernetes_validate.validate(doc, release, strict=True)
    except kubernetes_validate.ValidationError:
        return True
    return False


@functools.cache
def _validator(kind: str, version: str, parallel: bool, release: str) -> Any:
    schema = build_schema(Variant(kind, version, parallel), RELEASES[release])
    return jsonschema.Draft202012Validator(schema)


def ours_rejects(doc: Any, release: str) -> bool:
    shape = identify(doc)
    assert shape is not None
    return not _validator(shape.kind, shape.version, shape.parallel, release).is_valid(doc)


def _corpus() -> list[Any]:
    params = []
    for case in corpus.load_cases():
        shape = identify(case.document)
        if shape is None or shape.parallel:
            continue  # the peer knows upstream shapes only
        release = case.kubernetes_version or DEFAULT_RELEASE.name
        if release in PEER_RELEASES and RELEASES[release].has_api_version(shape.version):
            params.append(pytest.param(case.document, release, id=case.id))
    return params


@pytest.mark.parametrize(("doc", "release"), _corpus())
def test_corpus_documents_the_peer_rejects_are_rejected(doc: Any, release: str):
    """A corpus document that kubernetes-validate rejects fails our schema as well."""
    if peer_rejects(doc, release) and not (release != "1.37" and spec_left_out(doc)):
        assert ours_rejects(doc, release)


def test_a_missing_spec_is_the_one_place_the_peer_is_stricter_before_1_37():
    """Up to 1.36 the peer requires `spec`; 1.37's peer and our schemas do not."""
    doc = baseline("ResourceClaim", "v1")
    del doc["spec"]
    assert peer_rejects(doc, "1.36") and not peer_rejects(doc, "1.37")
    assert not ours_rejects(doc, "1.36") and not ours_rejects(doc, "1.37")
    assert validate_object(doc).valid


def test_the_peer_is_really_consulted():
    """kubernetes-validate does reject an unknown field, so the checks above can fail."""
    doc = baseline("ResourceClaim", "v1")
    doc["spec"]["devices"]["requests"][0]["exactly"]["colour"] = "red"
    assert peer_rejects(doc, "1.37")
    assert not peer_rejects(baseline("ResourceClaim", "v1"), "1.37")


# ---------------------------------------------------------------------------------------
# Random damage to a valid baseline.


def baseline(kind: str, version: str) -> dict[str, Any]:
    body = {
        "deviceClassName": "nic.example.com",
        "selectors": [{"cel": {"expression": "device.driver == 'nic.example.com'"}}],
        "allocationMode": "ExactCount",
        "count": 1,
        "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
        "capacity": {"requests": {"memory": "1Gi"}},
    }
    nic = {"name": "nic", **body} if version == "v1beta1" else {"name": "nic", "exactly": body}
    spec = {
        "devices": {
            "requests": [
                nic,
                {
                    "name": "gpu",
                    "firstAvailable": [
                        {"name": "a", "deviceClassName": "a.example.com", "count": 2},
                        {"name": "b", "deviceClassName": "b.example.com", "allocationMode": "All"},
                    ],
                },
            ],
            "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "example.com/numa"}],
            "config": [
                {"requests": ["gpu/a"], "opaque": {"driver": "d.example.com", "parameters": {}}}
            ],
        }
    }
    if kind == "ResourceClaimTemplate":
        spec = {"metadata": {"labels": {"a": "b"}}, "spec": spec}
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": kind,
        "metadata": {"name": "c", "namespace": "n"},
        "spec": spec,
    }


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path below the top level (apiVersion and kind pick the schema: left alone)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if prefix or key not in ("apiVersion", "kind"):
                yield (*prefix, key)
                yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield (*prefix, i)
            yield from _paths(value, (*prefix, i))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.sampled_from(["", "x", "All", "gpu", "a.b/c", "1Gi"]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("ab"), inner),
    max_leaves=4,
)


@st.composite
def damaged(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    kind = draw(st.sampled_from(["ResourceClaim", "ResourceClaimTemplate"]))
    release = draw(st.sampled_from(PEER_RELEASES))
    version = draw(st.sampled_from(["v1", "v1beta2", "v1beta1"]))
    doc = baseline(kind, version)
    for _ in range(draw(st.integers(1, 2))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "remove", "add-key"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif action == "remove" and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(st.sampled_from(["extra", "name", "exactly", "count"]))] = draw(
                JSON_VALUES
            )
    return doc, release


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=damaged())
def test_damage_the_peer_rejects_is_rejected_and_what_lint_accepts_is_accepted(case):
    """Ours rejects what kubernetes-validate rejects, and accepts what the rule set accepts."""
    doc, release = case
    if identify(doc) is None:
        return
    peer_is_stricter = release != "1.37" and spec_left_out(doc)
    if not peer_is_stricter and peer_rejects(copy.deepcopy(doc), release):
        assert ours_rejects(doc, release)
    if validate_object(copy.deepcopy(doc), options=Options(release=RELEASES[release])).valid:
        assert not ours_rejects(doc, release)


def _key_paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths that end in a mapping key (list items are replaced through their parent's key)."""
    for path in _paths(node, prefix):
        if isinstance(path[-1], str):
            yield path


@pytest.mark.parametrize("value", [None, "", 0, True, "x", [], {}], ids=repr)
@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_every_field_replaced_is_judged_consistently(version: str, value: Any):
    """Each field of a claim replaced by one value: the peer's rejection implies ours, and
    lint's acceptance implies ours (1.37 and 1.35, which drops more fields)."""
    base = baseline("ResourceClaim", version)
    compared = 0
    for release in ("1.35", "1.37"):
        for path in _key_paths(base):
            doc = copy.deepcopy(base)
            parent = doc
            for step in path[:-1]:
                parent = parent[step]
            parent[path[-1]] = copy.deepcopy(value)
            peer_is_stricter = release != "1.37" and spec_left_out(doc)
            if not peer_is_stricter and peer_rejects(copy.deepcopy(doc), release):
                compared += 1
                assert ours_rejects(doc, release), (release, path)
            options = Options(release=RELEASES[release])
            if validate_object(copy.deepcopy(doc), options=options).valid:
                compared += 1
                assert not ours_rejects(doc, release), (release, path)
    assert compared > 20
