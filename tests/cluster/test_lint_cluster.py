"""`draguard lint --cluster-objects DIR` and `--from-cluster`: the cluster checks in lint's outputs."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fakeapi import FakeApi

from draguard.schema.cli import lint as lint_cli

HERE = Path(__file__).resolve().parent
OBJECTS = HERE / "objects"
CLAIMS = HERE / "claims" / "claims.yaml"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = lint_cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _by_claim(out: str) -> dict[str, list[tuple[str, str]]]:
    """Claim name → sorted (code or error type, field) of its cluster findings."""
    found: dict[str, list[tuple[str, str]]] = {}
    for result in json.loads(out)["results"]:
        items = [(w["code"], w["field"]) for w in result.get("warnings", [])]
        items += [(e["type"], e["field"]) for e in result.get("errors", [])]
        found[result.get("name") or result["file"]] = sorted(
            i for i in items if not i[0].startswith(("skew-", "quota-charge", "alternative-counts")))
    return found


EXPECTED = {
    "fine": [],
    "missing": [("class-missing", "spec.devices.requests[0].firstAvailable[0].deviceClassName")],
    "typo": [("attribute-unknown",
              "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression")],
    "big": [("quota-exceeded", "spec.devices.requests")],
    "eight": [("alternative-unsatisfiable", "spec.devices.requests[0].exactly.count")],
    "admin": [("Forbidden", "spec.devices.requests[0].adminAccess")],
}


def test_cluster_objects_findings() -> None:
    """Each claim of the test data gets its cluster finding (admin access as an error)."""
    code, out, err = _run("-o", "json", "--cluster-objects", str(OBJECTS), str(CLAIMS))
    assert code == 1, err
    assert _by_claim(out) == EXPECTED


def test_policy_sets_the_levels(tmp_path: Path) -> None:
    """--policy's clusterChecks: deny is an error, off drops the finding, warn keeps it a
    warning (admin-access-namespace too, when the policy says so); the rest as without it."""
    policy = tmp_path / "policy.yaml"
    policy.write_text("clusterChecks:\n  class-missing: deny\n  attribute-unknown: off\n"
                      "  admin-access-namespace: warn\n")
    code, out, err = _run("-o", "json", "--policy", str(policy),
                          "--cluster-objects", str(OBJECTS), str(CLAIMS))
    assert code == 1, err
    assert _by_claim(out) == {
        **EXPECTED,
        "missing": [("Forbidden", "spec.devices.requests[0].firstAvailable[0].deviceClassName")],
        "typo": [],
        "admin": [("admin-access-namespace", "spec.devices.requests[0].adminAccess")],
    }


def test_bad_policy_exits_2_naming_the_field(tmp_path: Path) -> None:
    """An unusable policy is a usage error that names the file, line and field."""
    policy = tmp_path / "policy.yaml"
    policy.write_text("clusterChecks:\n  class-missing: refuse\n")
    code, out, err = _run("--policy", str(policy), "--cluster-objects", str(OBJECTS), str(CLAIMS))
    assert code == 2 and out == ""
    assert err.startswith(f"draguard lint: {policy}:2:")
    assert "class-missing" in err


def test_cluster_objects_text_lines() -> None:
    """Text output places a cluster warning at its line in the claim's file."""
    code, out, _ = _run("--cluster-objects", str(OBJECTS), str(CLAIMS))
    assert code == 1
    assert (f"{CLAIMS}:22:22: spec.devices.requests[0].firstAvailable[0].deviceClassName: "
            "warning class-missing: request gpu/a100: device class a100.example.com does not "
            "exist") in out
    assert "the cluster offers at most 4 per node" in out


def test_without_flags_output_unchanged() -> None:
    """Without the cluster flags and without Namespaces among the inputs, nothing is added."""
    code, out, _ = _run("-o", "json", str(CLAIMS))
    assert code == 0
    assert all(found == [] for found in _by_claim(out).values())


def test_bad_cluster_file_is_a_finding_with_line(tmp_path: Path) -> None:
    """A refused slice and a broken document in the cluster files are findings at their lines."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
                   "spec:\n  driver: d\n  nodeName: n\n  pool: {name: p, generation: 1, "
                   "resourceSliceCount: 1}\n  devices:\n"
                   + "".join(f"  - name: d{i}\n" for i in range(200))
                   + "---\nkind: [\n")
    code, out, _ = _run("--cluster-objects", str(tmp_path), str(CLAIMS))
    assert code == 1
    assert f"{bad}:8:3: spec.devices: Too many: 200: must have at most 128 items" in out
    assert f"{bad}:211:1: Malformed value: cannot parse YAML" in out


def test_unreadable_cluster_dir_exits_2(tmp_path: Path) -> None:
    """A cluster-objects path that does not exist is named on stderr, exit 2."""
    code, _, err = _run("--cluster-objects", str(tmp_path / "nope"), str(CLAIMS))
    assert code == 2 and "cannot read" in err


def test_input_namespace_counts_for_admin_access(tmp_path: Path) -> None:
    """A Namespace among lint's own inputs decides the admin-access check (issue 17)."""
    claim = CLAIMS.read_text().split("---\n")[-1]
    for labels, expected in (({}, 1), ({"resource.kubernetes.io/admin-access": "true"}, 0)):
        path = tmp_path / "input.yaml"
        ns = {"apiVersion": "v1", "kind": "Namespace",
              "metadata": {"name": "team", "labels": labels}}
        path.write_text(yaml.safe_dump(ns) + "---\n" + claim)
        code, out, _ = _run("-o", "json", str(path))
        assert code == expected, out
        errors = [e for r in json.loads(out)["results"] for e in r.get("errors", [])]
        assert len(errors) == expected
        if errors:
            assert errors[0]["type"] == "Forbidden"
            assert errors[0]["field"] == "spec.devices.requests[0].adminAccess"


def test_namespace_labels_option_wins(tmp_path: Path) -> None:
    """With --namespace-labels the rule set checks admin access once; the cluster check is off."""
    code, out, _ = _run("-o", "json", "--namespace-labels", "a=b",
                        "--cluster-objects", str(OBJECTS), str(CLAIMS))
    errors = [e for r in json.loads(out)["results"] if r.get("name") == "admin"
              for e in r.get("errors", [])]
    assert code == 1 and len(errors) == 1


def test_help_names_the_options() -> None:
    """`lint --help` documents the cluster options."""
    out = io.StringIO()
    parser = lint_cli.build_parser()
    parser.print_help(out)
    assert "--cluster-objects DIR" in out.getvalue() and "--from-cluster" in out.getvalue()


# --- --from-cluster against a local HTTPS server ---------------------------------------------

ROUTES = {
    "/apis/resource.k8s.io/v1/deviceclasses": "DeviceClass",
    "/apis/resource.k8s.io/v1/resourceslices": "ResourceSlice",
    "/api/v1/namespaces": "Namespace",
    "/api/v1/resourcequotas": "ResourceQuota",
}


@pytest.fixture
def apiserver(tmp_path: Path) -> Iterator[tuple[Path, FakeApi]]:
    api = FakeApi(ROUTES, page_size={"ResourceSlice": 2}).secure()
    for obj in yaml.safe_load_all((OBJECTS / "cluster.yaml").read_text()):
        api.objects.setdefault(obj["kind"], []).append(obj)
    yield api.kubeconfig(tmp_path), api.start()
    api.stop()


def test_from_cluster_same_findings(apiserver: tuple[Path, FakeApi]) -> None:
    """Listing the cluster gives the findings the same objects give from files."""
    kubeconfig, api = apiserver
    code, out, err = _run("-o", "json", "--from-cluster", "--kubeconfig", str(kubeconfig),
                          str(CLAIMS))
    assert code == 1, err
    assert _by_claim(out) == EXPECTED
    assert len(api.lists("ResourceSlice")) == 2


def test_from_cluster_refused_exits_2(apiserver: tuple[Path, FakeApi]) -> None:
    """A context the server refuses is a clear error, exit 2."""
    kubeconfig, _ = apiserver
    code, _, err = _run("--from-cluster", "--kubeconfig", str(kubeconfig), "--context",
                        "stranger", str(CLAIMS))
    assert code == 2 and "401" in err
