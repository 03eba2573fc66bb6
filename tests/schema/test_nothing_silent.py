"""Issue 17 "nothing passes in silence": old API versions, templates, convert's stdout.

Every command (lint, skew, convert, roundtrip) gives the same answer for the same input,
decided in one place: `shapes.unserved_version` (+ `Release.no_such_version`) for a
claim in a version no release serves, `templates.find` for a template.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from draguard.schema.cli import convert as convert_cli
from draguard.schema.cli import lint as lint_cli
from draguard.schema.cli import roundtrip as roundtrip_cli
from draguard.schema.cli import skew as skew_cli
from draguard.schema.model.releases import release
from draguard.schema.model.shapes import unserved_version
from draguard.schema.read import templates

RELEASES = ["1.34", "1.35", "1.36", "1.37"]


def claim_text(api_version: str, kind: str = "ResourceClaim", name: str = "c") -> str:
    request = (
        "    - name: gpu\n      deviceClassName: gpu.example.com\n"
        if api_version.endswith(("alpha2", "alpha3", "v1beta1"))
        else "    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n"
    )
    spec = f"spec:\n  devices:\n    requests:\n{request}"
    if kind == "ResourceClaimTemplate":
        spec = "spec:\n  spec:\n" + "".join(f"  {line}\n" for line in spec.splitlines()[1:])
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n{spec}"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def lint(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = lint_cli.main(argv, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def run(main: Any, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


# --- v1alpha2 / v1alpha3 ------------------------------------------------------------------
# Claims were alpha in v1alpha2 (classic DRA, 1.26-1.30) and v1alpha3 (1.31-1.33, off by
# default); from 1.34 v1alpha3 holds DeviceTaintRule only (upstream
# pkg/apis/resource/v1alpha3/register.go; the generated v1.33.0 OpenAPI of
# Azure/bicep-types-k8s still lists ResourceClaim@v1alpha3). The apiserver has no such
# resource; kubectl's REST mapping says: no matches for kind "..." in version "...".


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("api", ["v1alpha3", "v1alpha2"])
@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceClaimTemplate"])
def test_lint_reports_an_unserved_version(tmp_path: Path, version: str, api: str, kind: str) -> None:
    path = write(tmp_path, "old.yaml", claim_text(f"resource.k8s.io/{api}", kind))
    status, out, _ = lint(["--kubernetes-version", version, "-o", "json", path])
    assert status == 1
    report = json.loads(out)
    assert report["summary"] == {"documents": 1, "valid": 0, "invalid": 1, "skipped": 0}
    (error,) = report["results"][0]["errors"]
    assert (error["field"], error["type"], error["line"]) == ("apiVersion", "Unknown", 1)
    assert (f'no matches for kind "{kind}" in version "resource.k8s.io/{api}": '
            f"Kubernetes {version} serves it as resource.k8s.io/v1") in error["message"]


def test_release_1_33_names_its_beta_version_and_the_alpha() -> None:
    obj = yaml.safe_load(claim_text("resource.k8s.io/v1alpha3"))
    err = unserved_version(obj, release("1.33"))
    assert err is not None
    assert err.detail == (
        'no matches for kind "ResourceClaim" in version "resource.k8s.io/v1alpha3": '
        "Kubernetes 1.33 serves it as resource.k8s.io/v1beta2 (v1alpha3 had it in 1.31–1.33, "
        "an alpha API off by default, which draguard does not check)"
    )


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "v1", "kind": "Pod"},
        {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule"},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"},
        {"apiVersion": "example.com/v1alpha3", "kind": "ResourceClaim"},
        "text",
    ],
)
def test_only_claims_of_unknown_versions_are_unserved(obj: Any) -> None:
    assert unserved_version(obj, release("1.37")) is None


def test_lint_list_item_of_an_old_version(tmp_path: Path) -> None:
    text = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1alpha3\n"
            "  kind: ResourceClaim\n  metadata: {name: x}\n")
    status, out, _ = lint([write(tmp_path, "list.yaml", text)])
    assert status == 1
    assert out.startswith(f"{tmp_path}/list.yaml:4:3: apiVersion: Unknown field: no matches")


@pytest.mark.parametrize("version", RELEASES)
def test_skew_rejects_an_unserved_version_everywhere(
    tmp_path: Path, version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "old.yaml", claim_text("resource.k8s.io/v1alpha3"))
    status, out, _ = run(skew_cli.main, ["--from", version, "--to", version, "-o", "json", path],
                         capsys)
    assert status == 1
    (view,) = json.loads(out)["results"][0]["releases"]
    assert (view["served"], view["verdict"], view["if_enabled"]) == (False, "rejected", None)
    assert view["explanation"].startswith('no matches for kind "ResourceClaim"')
    assert f"Kubernetes {version} serves it as resource.k8s.io/v1" in view["explanation"]


@pytest.mark.parametrize("version", RELEASES)
def test_convert_refuses_an_unserved_version_even_with_loss_allowed(
    tmp_path: Path, version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "old.yaml", claim_text("resource.k8s.io/v1alpha3"))
    for extra in ([], ["--allow-loss"]):
        status, out, err = run(
            convert_cli.main, ["--to", "v1", "--kubernetes-version", version, *extra, path], capsys
        )
        assert status == 1
        assert "v1alpha3" not in out  # not echoed unchanged
        assert f"{path}: document 0: refused: apiVersion: no matches for kind" in err
        assert f"Kubernetes {version} serves it as resource.k8s.io/v1" in err


@pytest.mark.parametrize("version", RELEASES)
def test_roundtrip_refuses_every_trip_of_an_unserved_version(
    tmp_path: Path, version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "old.yaml", claim_text("resource.k8s.io/v1alpha3"))
    status, out, _ = run(roundtrip_cli.main, ["--kubernetes-version", version, path], capsys)
    assert status == 1
    assert "refused (12 trips): apiVersion: Unknown field: no matches for kind" in out


# --- templates ------------------------------------------------------------------------------

HELM = claim_text("resource.k8s.io/v1", name="{{ .Values.name }}")
ENVSUBST = claim_text("resource.k8s.io/v1").replace("gpu.example.com", "${GPU_CLASS}")
TOKEN = claim_text("resource.k8s.io/v1").replace("gpu.example.com", "@@GPU_CLASS@@")


@pytest.mark.parametrize(
    ("text", "line", "column", "mark"),
    [
        pytest.param(HELM, 3, 8, "{{ .Values.name }}", id="helm"),
        pytest.param(ENVSUBST, 9, 25, "${GPU_CLASS}", id="envsubst"),
        pytest.param(TOKEN, 9, 25, "@@GPU_CLASS@@", id="token"),
        pytest.param("a: ${X:-default}\n", 0, 3, "${X:-default}", id="default"),
        pytest.param("{{- if .Values.on }}\na: b\n{{- end }}\n", 0, 0, "{{- if .Values.on }}",
                     id="action-line"),
    ],
)
def test_find_names_the_first_placeholder(text: str, line: int, column: int, mark: str) -> None:
    assert templates.find(text) == templates.Placeholder(line, column, mark)


@pytest.mark.parametrize(
    "text",
    [
        "a: b\n# {{ .Values.x }} in a comment\n",
        "a: '$HOME and {x}'\n",
        'expression: device.attributes["a"].b == "x" && [{"k": 1}].size() > 0\n',
        "a: user@@example\n",
    ],
)
def test_find_leaves_plain_yaml_alone(text: str) -> None:
    assert templates.find(text) is None


def test_lint_counts_a_template_apart(tmp_path: Path) -> None:
    path = write(tmp_path, "chart.yaml", HELM + "---\n" + claim_text("resource.k8s.io/v1"))
    status, out, _ = lint([path])
    assert status == 0
    assert out.splitlines() == [
        f"{path}:4:9: this looks like a template (Helm/Go template {{{{ }}}}: "
        "{{ .Values.name }}): render it first (helm template, envsubst or the like) "
        "and check the output",
        "2 documents: 1 valid, 0 invalid, 0 skipped, 1 templated",
    ]
    status, out, _ = lint(["-o", "json", path])
    report = json.loads(out)
    assert report["summary"]["templated"] == 1
    assert [(t["document"], t["line"], t["column"]) for t in report["templated"]] == [(0, 4, 9)]


def test_lint_without_templates_keeps_the_contract_summary(tmp_path: Path) -> None:
    _, out, _ = lint(["-o", "json", write(tmp_path, "c.yaml", claim_text("resource.k8s.io/v1"))])
    report = json.loads(out)
    assert "templated" not in report and "templated" not in report["summary"]


@pytest.mark.parametrize("text", [HELM, ENVSUBST, TOKEN], ids=["helm", "envsubst", "token"])
@pytest.mark.parametrize("command", ["skew", "roundtrip"])
def test_skew_and_roundtrip_name_a_template_without_exit_2(
    tmp_path: Path, text: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "t.yaml", text + "---\n" + claim_text("resource.k8s.io/v1"))
    main = skew_cli.main if command == "skew" else roundtrip_cli.main
    status, out, err = run(main, [path], capsys)
    assert status in (0, 1)
    assert f"{path}:" in err and "document 0: this looks like a template" in err
    assert f"draguard {command}: 1 document looks like a template, not checked" in err
    assert "document 1" in out  # the other document is still checked


def test_convert_leaves_a_template_as_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "t.yaml", HELM)
    status, out, err = run(convert_cli.main, ["--to", "v1beta1", path], capsys)
    assert status == 0
    assert out == HELM
    assert f"{path}:4: document 0: this looks like a template" in err
    assert "'" not in err.split("template", 1)[1].replace("{{ .Values.name }}", "")  # no reprs


# --- convert to stdout ------------------------------------------------------------------------

TOLERATIONS = claim_text("resource.k8s.io/v1").replace(
    "gpu.example.com", "gpu.example.com\n        tolerations: [{key: k, operator: Exists}]"
)


def test_several_files_are_one_yaml_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`---` between files, so that YAML tools read every object, not one of three."""
    paths = [write(tmp_path, f"{n}.yaml", claim_text("resource.k8s.io/v1beta1", name=n))
             for n in ("a", "b", "c")]
    status, out, _ = run(convert_cli.main, ["--to", "v1", *paths], capsys)
    assert status == 0
    objects = [d for d in yaml.safe_load_all(out) if d is not None]
    assert [d["metadata"]["name"] for d in objects] == ["a", "b", "c"]
    assert all(d["apiVersion"] == "resource.k8s.io/v1" for d in objects)
    assert out.count("# file: ") == 3


def test_refused_document_is_not_echoed_and_names_version_and_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1.35 drops tolerations (DRADeviceTaints off; the drop is kubernetes#132927, 1.35.0)."""
    path = write(tmp_path, "t.yaml", TOLERATIONS)
    status, out, err = run(convert_cli.main, ["--to", "v1", "--kubernetes-version", "1.35", path],
                           capsys)
    assert status == 1
    assert "tolerations" not in out and "apiVersion" not in out
    assert err == (f"{path}: document 0: refused: spec.devices.requests[0].exactly.tolerations: "
                   "feature gate DRADeviceTaints is off by default in Kubernetes 1.35, whose "
                   "apiserver drops this field on create\n")


def test_source_version_missing_in_the_release_is_not_called_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "c.yaml", claim_text("resource.k8s.io/v1"))
    status, _, err = run(convert_cli.main, ["--to", "v1beta1", "--kubernetes-version", "1.33", path],
                         capsys)
    assert status == 1
    assert "Unknown" not in err and "dropped: dropped" not in err
    assert (f"{path}: document 0: refused: apiVersion: resource.k8s.io/v1 does not exist in "
            "Kubernetes 1.33: that apiserver cannot read the source") in err


# --- duplicate keys ---------------------------------------------------------------------------
# kubectl keeps the last value without a word (kubernetes#125885, #99286, #89303); the
# apiserver's strict decoding refuses the body: `duplicate field "metadata"`.

DUPLICATE_YAML = claim_text("resource.k8s.io/v1", name="one").replace(
    "spec:", "metadata:\n  name: two\nspec:", 1
)
DUPLICATE_JSON = (
    '{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",\n'
    ' "metadata": {"name": "a", "name": "b"},\n'
    ' "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}\n'
)


def test_lint_reports_a_duplicate_yaml_key_with_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", DUPLICATE_YAML)
    status, out, _ = lint([path])
    assert status == 1
    assert out.splitlines() == [
        f'{path}:5:1: metadata: Malformed value: duplicate key "metadata" (lines 3 and 5): the '
        "apiserver's strict decoding refuses it (duplicate field \"metadata\"); kubectl "
        "silently sends the last value (line 5)",
        "1 document: 0 valid, 1 invalid, 0 skipped",
    ]
    _, out, _ = lint(["-o", "json", path])
    assert json.loads(out)["results"][0]["name"] == "two"  # checked as kubectl sends it


def test_lint_reports_a_duplicate_json_key(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.json", DUPLICATE_JSON)
    status, out, _ = lint([path])
    assert status == 1
    assert out.startswith(f'{path}:2:28: metadata.name: Malformed value: duplicate key "name" '
                          "(line 2, columns 15 and 28)")


def test_lint_places_a_duplicate_inside_a_list_item(tmp_path: Path) -> None:
    text = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1\n"
            "  kind: ResourceClaim\n  metadata: {name: a}\n  spec:\n    devices:\n"
            "      requests:\n      - name: r\n        exactly:\n          count: 1\n"
            "          deviceClassName: c\n          count: 2\n")
    status, out, _ = lint([write(tmp_path, "list.yaml", text)])
    assert status == 1
    assert ":14:11: spec.devices.requests[0].exactly.count: Malformed value: duplicate key " \
           '"count" (lines 12 and 14)' in out


def test_duplicates_elsewhere_stay_quiet_in_lint(tmp_path: Path) -> None:
    """Only what lint checks: a ConfigMap with a repeated key is still just skipped."""
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: '1', x: '2'}\n"
    assert lint([write(tmp_path, "cm.yaml", text)])[0] == 0


@pytest.mark.parametrize(("name", "text"), [("dup.yaml", DUPLICATE_YAML), ("dup.json", DUPLICATE_JSON)])
def test_convert_refuses_a_duplicate_key(
    tmp_path: Path, name: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, name, text)
    for extra in ([], ["--allow-loss"]):
        status, out, err = run(convert_cli.main, ["--to", "v1beta1", *extra, path], capsys)
        assert status == 1  # not 2: the rest of the run goes on
        assert "refused (see stderr), not written" in out
        assert f"{path}: document 0: refused: metadata" in err and "duplicate key" in err


def test_skew_names_a_duplicate_and_checks_the_last_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "dup.yaml", DUPLICATE_YAML)
    status, out, err = run(skew_cli.main, ["--from", "1.37", "--to", "1.37", path], capsys)
    assert status == 0
    assert "ResourceClaim two" in out
    assert f'draguard skew: {path}:5: document 0: duplicate key "metadata" (lines 3 and 5)' in err


def test_lint_reports_a_template_inside_a_list_item(tmp_path: Path) -> None:
    """A List read item by item still says "render it first" for a templated item."""
    text = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1\n"
            "  kind: ResourceClaim\n  metadata:\n    name: '{{ .Values.name }}'\n  spec:\n"
            "    devices:\n      requests:\n      - name: r\n        exactly:\n"
            "          deviceClassName: c\n")
    status, out, _ = lint([write(tmp_path, "list.yaml", text)])
    assert status == 0
    assert ":7:" in out and "looks like a template" in out
    assert out.splitlines()[-1].endswith("1 templated")
