"""The lint engine: documents through a (fake) rule set, findings placed in the user's file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lint_fakes as fakes
import pytest

from draguard.schema import lint
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.read.sources import Source, split_documents
from draguard.schema.report import DocumentResult, Report, render

OPTIONS = Options(default_namespace="default")


def _check(text: str, *, jobs: int = 1) -> list[DocumentResult]:
    chunks = split_documents(Source("f.yaml", text, "yaml"))
    return list(lint.run(chunks, options=OPTIONS, validate=fakes.fake_validate, jobs=jobs))


def _where(result: DocumentResult) -> list[tuple[str, str, int, int]]:
    return [(e.type, str(e.field), e.line, e.column) for e in result.errors]


V1BETA1 = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c}
x-errors:
- [Invalid, "spec.devices.requests[0].exactly.count"]
- [Required, "spec.devices.requests[0].exactly.deviceClassName"]
- [Duplicate, "spec.devices.requests[1].firstAvailable[0]"]
spec:
  devices:
    requests:
    - name: gpu
      count: 0
    - name: b
      firstAvailable:
      - {name: x, deviceClassName: y}
"""


def test_v1beta1_paths_point_at_flat_fields() -> None:
    """For v1beta1 input `requests[i].exactly.X` is found at the flat `requests[i].X`."""
    (result,) = _check(V1BETA1)
    assert _where(result) == [
        ("Invalid", "spec.devices.requests[0].exactly.count", 12, 7),
        ("Required", "spec.devices.requests[0].exactly.deviceClassName", 11, 7),
        ("Duplicate", "spec.devices.requests[1].firstAvailable[0]", 15, 9),
    ]


def test_v1_exactly_is_found_as_written() -> None:
    """For v1 input the internal path is the user's own path."""
    text = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
x-errors: [[Invalid, "spec.spec.devices.requests[0].exactly.count"]]
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: x
          count: 0
"""
    (result,) = _check(text)
    assert _where(result) == [("Invalid", "spec.spec.devices.requests[0].exactly.count", 11, 11)]


ADMIN_HEAD = (
    "apiVersion: resource.k8s.io/{version}\nkind: {kind}\n"
    "x-errors: [[Forbidden, 'spec.devices.requests[0].adminAccess']]\n"
)


@pytest.mark.parametrize(
    ("kind", "version", "body", "where"),
    [
        pytest.param(
            "ResourceClaim",
            "v1",
            "spec:\n  devices:\n    requests:\n    - name: a\n      exactly:\n"
            "        adminAccess: true\n",
            (9, 9),
            id="claim-v1",
        ),
        pytest.param(
            "ResourceClaim",
            "v1beta1",
            "spec:\n  devices:\n    requests:\n    - name: a\n      adminAccess: true\n",
            (8, 7),
            id="claim-v1beta1-flat",
        ),
        pytest.param(
            "ResourceClaimTemplate",
            "v1",
            "spec:\n  spec:\n    devices:\n      requests:\n      - name: a\n"
            "        exactly:\n          adminAccess: true\n",
            (10, 11),
            id="template-v1",
        ),
    ],
)
def test_admin_access_quirk_path_is_found(
    kind: str, version: str, body: str, where: tuple[int, int]
) -> None:
    """The §3.7 error (no `.exactly`, no `spec.spec`) still points at the adminAccess field."""
    (result,) = _check(ADMIN_HEAD.format(version=version, kind=kind) + body)
    assert [(e.line, e.column) for e in result.errors] == [where]


@pytest.mark.parametrize(
    ("path", "shape", "expected"),
    [
        pytest.param(
            "spec.devices.requests[0].exactly.count",
            "v1beta1",
            ["spec.devices.requests[0].count", "spec.devices.requests[0].exactly.count"],
            id="v1beta1-flat-first",
        ),
        pytest.param(
            "spec.devices.requests[0].exactly.count",
            "v1",
            ["spec.devices.requests[0].exactly.count"],
            id="v1-as-is",
        ),
        pytest.param(
            "spec.devices.prioritizedRequests[0].options[1].name",
            "parallel",
            ["spec.devices.prioritizedRequests[0].options[1].name"],
            id="parallel-as-is",
        ),
        pytest.param(
            "spec.devices.requests[2].adminAccess",
            "v1",
            [
                "spec.devices.requests[2].adminAccess",
                "spec.devices.requests[2].exactly.adminAccess",
                "spec.spec.devices.requests[2].adminAccess",
                "spec.spec.devices.requests[2].exactly.adminAccess",
            ],
            id="admin-access-quirk",
        ),
        pytest.param(
            "spec.devices.config[0].requests[0]",
            "v1beta1",
            ["spec.devices.config[0].requests[0]"],
            id="config-requests-untouched",
        ),
    ],
)
def test_candidate_paths(path: str, shape: str, expected: list[str]) -> None:
    """Rule paths map to the user's document paths to try, best first."""
    got = lint.candidate_paths(fakes.parse_path(path), shape)
    assert [str(FieldPath(p)) for p in got] == expected


def test_required_field_points_at_nearest_parent() -> None:
    """A missing field (Required) is placed at the deepest part of its path that exists."""
    text = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
        "x-errors: [[Required, 'spec.devices.requests[0].exactly.deviceClassName']]\n"
        "spec:\n  devices:\n    requests:\n    - name: a\n      exactly: {}\n"
    )
    (result,) = _check(text)
    assert _where(result)[0][2:] == (8, 7)


def test_list_items_share_the_document_and_carry_item() -> None:
    """`kind: List` items are results of the list's document, numbered by `item`, located inside."""
    text = """\
kind: ConfigMap
---
apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: one}
- kind: Service
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: three}
  x-errors: [[Invalid, metadata.name]]
"""
    results = _check(text)
    assert [(r.document, r.item, r.name, r.skipped) for r in results] == [
        (0, None, None, True),
        (1, 0, "one", False),
        (1, 1, None, True),
        (1, 2, "three", False),
    ]
    assert _where(results[3]) == [("Invalid", "metadata.name", 12, 14)]


def test_typed_list_items_inherit_kind() -> None:
    """Items of a `ResourceClaimList` without their own apiVersion/kind take the list's."""
    text = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimList\nitems:\n- metadata: {name: a}\n"
    )
    (result,) = _check(text)
    assert (result.kind, result.api_version, result.name) == (
        "ResourceClaim",
        "resource.k8s.io/v1",
        "a",
    )


def test_broken_document_is_malformed_and_the_rest_is_checked() -> None:
    """A document that does not parse is one invalid result with its line; later ones still run."""
    text = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n---\n"
        "a: [1\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
        "x-errors: [[Invalid, kind]]\n"
    )
    results = _check(text)
    assert [r.valid for r in results] == [True, False, False]
    broken = results[1]
    assert (broken.document, broken.kind, broken.errors[0].type, str(broken.errors[0].field)) == (
        1,
        None,
        "Malformed",
        "",
    )
    assert broken.errors[0].line == 4
    assert broken.errors[0].message.startswith("Malformed value: cannot parse YAML")
    assert _where(results[2]) == [("Invalid", "kind", 7, 1)]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param("just text\n", "expected object, got string", id="scalar"),
        pytest.param("- a\n- b\n", "expected object, got array", id="list"),
    ],
)
def test_non_object_document_is_malformed(text: str, words: str) -> None:
    """A document that is not a mapping cannot be a Kubernetes object: Malformed at its start."""
    (result,) = _check(text)
    assert [(e.type, str(e.field), e.line) for e in result.errors] == [("Malformed", "", 1)]
    assert words in result.errors[0].message


def test_empty_and_null_documents_give_no_result() -> None:
    """Empty documents and explicit nulls are skipped silently, as kubectl does."""
    assert _check("---\n# nothing\n---\n~\n---\n") == []


def test_validator_crash_is_an_internal_error_of_that_object() -> None:
    """A bug in the rule set turns into an InternalError finding; other documents still run."""
    results = _check(
        "kind: ResourceClaim\nx-crash: true\n---\n"
        "kind: ResourceClaim\napiVersion: resource.k8s.io/v1\n"
    )
    assert results[0].errors[0].type == "InternalError"
    assert "RuntimeError: boom" in results[0].errors[0].message
    assert results[1].valid


def test_warnings_are_located_like_errors() -> None:
    """Warnings from the rule set carry their code and a position in the user's file."""
    text = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
        "x-warnings: [[parent-reference, kind]]\n"
    )
    (result,) = _check(text)
    assert result.valid
    assert [(w.code, str(w.field), w.line, w.column) for w in result.warnings] == [
        ("parent-reference", "kind", 2, 1)
    ]


def test_jobs_give_the_same_results_in_order() -> None:
    """Several processes give exactly the results of one, in document order."""
    docs = [
        f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c{i}}}\n"
        + ("x-errors: [[Invalid, metadata.name]]\n" if i % 3 == 0 else "")
        + ("x-warnings: [[parent-reference, kind]]\n" if i % 5 == 0 else "")
        for i in range(300)
    ]
    text = "---\n".join(docs)
    one = _check(text, jobs=1)
    assert sum(bool(r.errors) for r in one) == 100 and sum(bool(r.warnings) for r in one) == 60
    # Through the pool's wire form and back: the same records, paths as `FieldPath`s.
    assert _check(text, jobs=2) == one


@pytest.mark.parametrize("output", ["text", "json"])
def test_results_from_the_pool_are_rendered_as_they_come_in(output: str) -> None:
    """With parts asked for, every result from the pool's workers is rendered as it comes
    in (its disabled codes dropped first); the report is the one one process renders."""
    docs = [
        f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c{i}}}\n"
        + ("x-errors: [[Invalid, metadata.name]]\n" if i % 3 == 0 else "")
        + ("x-warnings: [[parent-reference, kind], [other-code, kind]]\n" if i % 5 == 0 else "")
        for i in range(300)
    ]
    chunks = split_documents(Source("f.yaml", "---\n".join(docs), "yaml"))
    disabled = frozenset({"other-code"})
    pooled = Report(disabled=disabled)
    parts = pooled.parts_for(output)
    assert parts is not None
    results = lint.run(chunks, options=OPTIONS, validate=fakes.fake_validate, jobs=2,
                       parts=parts)
    pooled.extend(results)
    assert len(parts.made) == len(results) == 300
    assert all(parts.made[id(r)][0] is r for r in pooled.results)  # none rendered again
    alone = Report(disabled=disabled)
    alone.extend(lint.run(chunks, options=OPTIONS, validate=fakes.fake_validate, jobs=1))
    assert alone.parts_for(output) is not None and not alone.parts.made  # type: ignore[union-attr]
    assert render(pooled, output) == render(alone, output)
    assert "other-code" not in render(pooled, output)


def test_linting_plain_block_yaml_loads_only_what_it_needs(tmp_path: Path) -> None:
    """A one-process lint of block YAML without selectors loads no pool, PyYAML, CEL or XML."""
    path = tmp_path / "claim.yaml"
    path.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
                    "metadata:\n  name: c\nspec:\n  devices:\n    requests:\n"
                    "    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n")
    script = (
        "import sys\n"
        "from draguard.webhook.cli import main\n"
        f"code = main.main(['lint', {str(path)!r}])\n"
        "heavy = ['multiprocessing', 'concurrent.futures', 'yaml', 'google.protobuf',\n"
        "         'draguard.schema.cel.check', 'xml.etree', 'importlib.metadata']\n"
        "print(code, [m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines()[-1] == "0 []"


def test_a_kind_lint_does_not_check_is_skipped_from_its_head() -> None:
    """A plain block document of another kind is skipped on its head; its value is not
    built, so a wrong indentation further down goes unreported (it is not lint's kind)."""
    results = _check("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
                     "data:\n  a: b\n c: d\n---\nkind: ConfigMap\ndata: [\n")
    first = results[0]
    assert (first.kind, first.name, first.skipped, first.line) == ("ConfigMap", "cm", True, 1)
    assert results[1].errors[0].type == "Malformed"  # not plain block YAML: read in full
