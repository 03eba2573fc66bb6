"""The exported schema set: metaschema validity, file names, releases, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from draguard.schema.cli.export import main
from draguard.schema.export import Variant, build_schema, export_schemas, variants
from draguard.schema.model.releases import DEFAULT_RELEASE, RELEASES
from draguard.webhook.cli.main import main as draguard


def kubeconform_file_name(kind: str, api_version: str) -> str:
    """kubeconform's default `{{ .ResourceKind }}{{ .KindSuffix }}.json`, re-derived.

    Its KindSuffix is `-` + the group's first DNS label + `-` + the version, all
    lower-cased (pkg/registry/registry.go, `schemaPath`).
    """
    group, _, version = api_version.partition("/")
    return f"{kind.lower()}-{group.split('.')[0].lower()}-{version.lower()}.json"


ALL_RELEASE_VARIANTS = [
    pytest.param(release, variant, id=f"{name}:{variant.file_name}")
    for name, release in RELEASES.items()
    for variant in variants(release)
]


@pytest.mark.parametrize(("release", "variant"), ALL_RELEASE_VARIANTS)
def test_every_schema_is_a_valid_draft_2020_12_schema(release, variant):
    """Each exported schema passes jsonschema's draft 2020-12 metaschema check."""
    schema = build_schema(variant, release)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(("release", "variant"), ALL_RELEASE_VARIANTS)
def test_every_pattern_compiles_without_look_arounds(release, variant):
    """No pattern uses look-arounds, which kubeconform's Go (RE2) regexp cannot compile."""
    patterns = list(_patterns(build_schema(variant, release)))
    assert patterns
    for pattern in patterns:
        assert "(?=" not in pattern and "(?!" not in pattern and "(?<" not in pattern, pattern


def _patterns(node: object):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern":
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


@pytest.mark.parametrize(
    "variant", [v for v in variants() if not v.parallel], ids=lambda v: v.file_name
)
def test_upstream_shapes_are_named_as_kubeconform_looks_them_up(variant):
    """An upstream-shape schema has exactly the name kubeconform's default template asks for."""
    assert variant.file_name == kubeconform_file_name(variant.kind, variant.api_version)


def test_parallel_shapes_carry_a_suffix_no_upstream_name_has():
    """Parallel-shape schemas end in `-parallel.json` and never collide with an upstream name."""
    names = [v.file_name for v in variants()]
    upstream = {n for n in names if not n.endswith("-parallel.json")}
    parallel = [n for n in names if n.endswith("-parallel.json")]
    assert len(parallel) == len(upstream)
    assert {n.replace("-parallel.json", ".json") for n in parallel} == upstream


@pytest.mark.parametrize(
    ("release", "versions"),
    [
        pytest.param("1.33", {"v1beta1", "v1beta2"}, id="1.33-no-v1"),
        pytest.param("1.34", {"v1beta1", "v1beta2", "v1"}, id="1.34-all"),
        pytest.param("1.37", {"v1beta1", "v1beta2", "v1"}, id="1.37-all"),
        # v1beta1 is installed behind DRAResourceV1beta1API in 1.38 (issue 17).
        pytest.param("1.38", {"v1beta1", "v1beta2", "v1"}, id="1.38-v1beta1-gated"),
        pytest.param("1.39", {"v1"}, id="1.39-v1beta2-removed"),
    ],
)
def test_a_release_exports_the_versions_it_has(release, versions):
    """Only API versions that exist in the release (§1.2) get a schema, for both kinds."""
    chosen = RELEASES[release]
    exported = {(v.kind, v.version) for v in variants(chosen, parallel=False)}
    assert exported == {
        (k, v) for k in ("ResourceClaim", "ResourceClaimTemplate") for v in versions
    }


def test_every_schema_says_what_it_leaves_to_the_rule_set():
    """Each schema's description names the checks that stay in `draguard lint`."""
    for schema in export_schemas().values():
        assert "draguard lint" in schema["description"]
        assert "CEL" in schema["description"]


def test_schema_ids_are_unique_per_release():
    """`$id`s differ across files and releases, so a registry can hold them side by side."""
    ids = [
        schema["$id"]
        for release in RELEASES.values()
        for schema in export_schemas(release).values()
    ]
    assert len(ids) == len(set(ids))


def test_cli_writes_one_file_per_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """`draguard schema --out DIR` writes every schema under its kubeconform name and lists it."""
    assert main(["--out", str(tmp_path / "schemas")]) == 0
    printed = capsys.readouterr().out.split()
    expected = export_schemas()
    assert sorted(Path(p).name for p in printed) == sorted(expected)
    for name, schema in expected.items():
        assert json.loads((tmp_path / "schemas" / name).read_text()) == schema


def test_cli_without_out_prints_all_schemas_as_one_object(capsys: pytest.CaptureFixture[str]):
    """Without `--out`, stdout is one JSON object from file name to schema."""
    assert main(["--no-parallel"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == export_schemas(parallel=False)


def test_cli_kubernetes_version_selects_the_release(capsys: pytest.CaptureFixture[str]):
    """`--kubernetes-version 1.33` exports 1.33's versions with 1.33 in their ids."""
    assert main(["--kubernetes-version", "1.33"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == export_schemas(RELEASES["1.33"])
    assert not any("-v1.json" in name for name in printed)


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--kubernetes-version", "1.20"], id="unknown-release"),
        pytest.param(["--bogus"], id="unknown-option"),
    ],
)
def test_cli_usage_errors_exit_2(argv, capsys: pytest.CaptureFixture[str]):
    """Usage errors exit 2 and explain themselves on stderr."""
    assert main(argv) == 2
    assert "draguard schema" in capsys.readouterr().err


def test_cli_unwritable_out_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """An `--out` that is a file cannot hold schemas: exit 2 with a message."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["--out", str(blocker)]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_default_release_is_the_newest():
    """Without options the schemas describe the default (newest) release."""
    schema = build_schema(Variant("ResourceClaim", "v1"))
    assert schema["$id"].split("/")[-2] == DEFAULT_RELEASE.name


def test_the_draguard_command_dispatches_to_the_schema_cli(tmp_path: Path):
    """`draguard schema --out DIR` through the console command's dispatcher writes the files."""
    assert draguard(["schema", "--out", str(tmp_path), "--no-parallel"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(export_schemas(parallel=False))
