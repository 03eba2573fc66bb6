"""The round-trip proof (`draguard.schema.roundtrip`) and `draguard roundtrip` (issue 3 §2)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from draguard.schema.cli.roundtrip import main, render_table
from draguard.schema.model.diff import Change
from draguard.schema.model.paths import FieldPath
from draguard.schema.roundtrip import SHAPES, Trip, meaning, round_trip, round_trips


def claim(version: str, requests: list[dict[str, Any]], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": requests, **devices}},
    }


PRIORITIZED = {
    "name": "gpu",
    "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.example.com"},
        {"name": "small", "deviceClassName": "gpu.example.com", "count": 2},
    ],
}
EXACT = {"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}
VALID = claim(
    "v1",
    [EXACT, PRIORITIZED],
    constraints=[{"requests": ["nic", "gpu/big"], "matchAttribute": "dra.example.com/pcieRoot"}],
)


def test_every_ordered_pair_is_tried() -> None:
    """round_trips tries each of the 12 ordered pairs of distinct shapes once."""
    trips = round_trips(VALID) or []
    pairs = {(t.start, t.via) for t in trips}
    assert len(trips) == len(pairs) == len(SHAPES) * (len(SHAPES) - 1)
    assert all(start != via for start, via in pairs)


def test_a_valid_claim_round_trips_without_loss() -> None:
    """A valid claim with exact and prioritized requests comes back with the same meaning everywhere."""
    assert all(t.lossless for t in round_trips(VALID) or []), round_trips(VALID)


def test_other_documents_are_not_tried() -> None:
    """A ConfigMap is not a DRA document: nothing to prove."""
    assert round_trips({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}) is None


@pytest.mark.parametrize(
    ("doc", "start", "via"),
    [
        pytest.param(
            claim("v1", [{"name": "gpu", "exactly": {"count": 2}}]),
            "v1",
            "v1beta1",
            id="v1-exactly-without-class-via-v1beta1",
        ),
        pytest.param(
            claim("v1beta1", [{"name": "gpu", "count": 2}]),
            "v1beta1",
            "v1",
            id="v1beta1-count-without-class-via-v1",
        ),
        pytest.param(
            claim("v1", [{"name": "gpu", "exactly": {}}]),
            "parallel",
            "v1beta1",
            id="empty-exactly-parallel-via-v1beta1",
        ),
    ],
)
def test_go_zero_values_and_hub_defaults_are_no_difference(
    doc: dict[str, Any], start: str, via: str
) -> None:
    """`deviceClassName: ""` from v1beta1 (§5.3) and a default the hub adds on read (§4) change no meaning."""
    trip = round_trip(doc, start, via)
    assert trip.lossless, [str(c) for c in trip.differences]


@pytest.mark.parametrize(
    ("changed", "field"),
    [
        pytest.param(
            lambda d: d["spec"]["devices"]["requests"][1]["firstAvailable"][1].update(count=3),
            "spec.devices.requests[1].firstAvailable[1].count",
            id="count",
        ),
        pytest.param(
            lambda d: d["spec"]["devices"]["requests"][0]["exactly"].update(deviceClassName="x"),
            "spec.devices.requests[0].exactly.deviceClassName",
            id="class",
        ),
        pytest.param(
            lambda d: d["metadata"].update(labels={"team": ""}),
            "metadata.labels",
            id="empty-label-value-is-data",
        ),
        pytest.param(
            lambda d: d["spec"]["devices"]["requests"].reverse(),
            "spec.devices.requests[0].name",
            id="request-order",
        ),
    ],
)
def test_meaning_still_tells_real_changes_apart(changed: Any, field: str) -> None:
    """The comparison ignores defaults and Go zero values, not values a user chose."""
    other = copy.deepcopy(VALID)
    changed(other)
    assert meaning(VALID) != meaning(other)
    mine, theirs = meaning(VALID), meaning(other)
    assert field.split(".")[0] in {k for k in mine if mine[k] != theirs.get(k)}


def test_meaning_ignores_the_order_annotation_and_api_version() -> None:
    """The parallel order annotation and the apiVersion are layout, not meaning."""
    other = copy.deepcopy(VALID)
    other["apiVersion"] = "resource.k8s.io/v1beta2"
    other["metadata"]["annotations"] = {"draguard.io/request-order": '["nic","gpu"]'}
    assert meaning(VALID) == meaning(other)


def test_an_ambiguous_request_is_refused_not_compared() -> None:
    """A v1beta1 request with flat fields and firstAvailable cannot reach v1: the trip says so."""
    doc = claim("v1beta1", [{**PRIORITIZED, "selectors": []}])
    trip = round_trip(doc, "v1", "parallel")
    assert not trip.lossless
    assert "spec.devices.requests[0]" in trip.refused


# --- the command --------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


VALID_YAML = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: not-dra}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: nic
      deviceClassName: nic.example.com
    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: gpu.example.com}
"""

DUPLICATE_NAMES_YAML = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: dup, namespace: ns}
spec:
  devices:
    requests:
    - name: a
      firstAvailable:
      - {name: x, deviceClassName: gpu.example.com}
    - name: a
      exactly: {deviceClassName: gpu.example.com}
"""


def test_cli_prints_a_table_per_dra_document_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One grid per DRA document (other kinds skipped), all `ok`, exit 0."""
    path = write(tmp_path, "ok.yaml", VALID_YAML)
    assert main([path]) == 0
    out = capsys.readouterr().out
    assert out.count(f"{path} document") == 1
    assert f"{path} document 1" in out
    rows = [line for line in out.splitlines() if line.startswith("  v1") or "parallel  " in line]
    assert len(rows) == len(SHAPES)
    assert "DIFF" not in out and "refused" not in out


def test_cli_refuses_duplicate_names_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Duplicate request names cannot be put back in order from the annotation: refused, field named, exit 1."""
    path = write(tmp_path, "dup.yaml", DUPLICATE_NAMES_YAML)
    assert main([path]) == 1
    out = capsys.readouterr().out
    assert "trips): spec.devices.requests[1]: duplicate request name 'a'" in out


def test_table_names_each_difference_by_field() -> None:
    """A trip with differences shows DIFF in its cell and one line per changed field."""
    change = Change("changed", FieldPath.root("spec", "devices", "requests").index(0), 1, 2)
    table = render_table("t.yaml document 0", [Trip("v1", "parallel", (change,))])
    row = next(line for line in table.splitlines() if line.startswith("  v1 "))
    assert row.split()[1:] == ["-", "-", "-", "DIFF"]
    assert "  v1 → parallel → v1: spec.devices.requests[0]: 1 → 2" in table


def test_cli_exits_2_on_unreadable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing file is a usage problem, named on stderr."""
    assert main([str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_cli_refusal_counts_as_a_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A document that cannot reach a shape is reported `refused` with its field, exit 1."""
    text = VALID_YAML.replace(
        "deviceClassName: nic.example.com",
        "deviceClassName: nic.example.com\n      firstAvailable: [{name: x, deviceClassName: y}]",
    )
    path = write(tmp_path, "ambiguous.yaml", text)
    assert main([path]) == 1
    out = capsys.readouterr().out
    assert "refused" in out and "spec.devices.requests[0]" in out


def test_cli_names_a_repeated_refusal_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One reason that stops every trip is printed once, with the number of trips."""
    text = VALID_YAML.replace(
        "deviceClassName: nic.example.com",
        "deviceClassName: nic.example.com\n      firstAvailable: [{name: x, deviceClassName: y}]",
    )
    main([write(tmp_path, "ambiguous.yaml", text)])
    reasons = [line for line in capsys.readouterr().out.splitlines() if "is ambiguous" in line]
    trips = len(SHAPES) * (len(SHAPES) - 1)
    assert len(reasons) == 1 and f"refused ({trips} trips)" in reasons[0]


def test_cli_help_explains_the_path(capsys: pytest.CaptureFixture[str]) -> None:
    """`roundtrip --help` says what PATH may be and what --kubernetes-version does."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "for stdin" in out and "convert as this release does" in out


def test_cli_tries_each_item_of_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kind: List` (kubectl get -o yaml): one table per DRA item, named by its index."""
    body = VALID_YAML.split("---\n")[1]
    items = "".join("- " + body.replace("\n", "\n  ").rstrip() + "\n" for _ in range(2))
    path = write(tmp_path, "list.yaml", f"apiVersion: v1\nkind: List\nitems:\n{items}")
    assert main([path]) == 0
    out = capsys.readouterr().out
    assert f"{path} document 0 item 0" in out and f"{path} document 0 item 1" in out


def test_cli_kubernetes_version_applies_that_releases_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In 1.35 tolerations are dropped on create (§3.8): every trip is refused, naming the field."""
    text = VALID_YAML.replace(
        "deviceClassName: nic.example.com",
        "deviceClassName: nic.example.com\n      tolerations: [{key: k, operator: Exists}]",
    )
    path = write(tmp_path, "t.yaml", text)
    assert main([path]) == 0
    capsys.readouterr()
    assert main(["--kubernetes-version", "1.35", path]) == 1
    out = capsys.readouterr().out
    assert "DIFF" not in out and out.count("refused") >= len(SHAPES) * (len(SHAPES) - 1)
    assert "spec.devices.requests[0].exactly.tolerations: feature gate DRADeviceTaints is off" in out
    assert out.count("tolerations: feature gate DRADeviceTaints") == 1


def test_jobs_give_the_bytes_of_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `--jobs 2` (a pool for a large input) stdout, stderr and the exit code are those
    of one process, tables in the documents' order."""
    many = "---\n".join(VALID_YAML.replace("name: ", f"name: n{i}", 1) if i % 7 else
                        DUPLICATE_NAMES_YAML for i in range(140))
    paths = [write(tmp_path, "a.yaml", many), str(tmp_path / "missing.yaml"),
             write(tmp_path, "b.yaml", "key: [unclosed\n")]
    one = main(["--jobs", "1", *paths]), capsys.readouterr()
    two = main(["--jobs", "2", *paths]), capsys.readouterr()
    assert one == two
    assert one[0] == 2 and one[1].out.count(" document ") >= 140
