"""`draguard skew`: each release's treatment of a claim, in text and JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draguard.schema.cli.skew import main
from draguard.schema.skew import releases_between, skew_advice, skew_document


def claim(version: str, requests: list[dict[str, Any]], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu-claim", "namespace": "ml"},
        "spec": {"devices": {"requests": requests, **devices}},
    }


PRIORITIZED = {
    "name": "gpu",
    "firstAvailable": [
        {"name": "h100", "deviceClassName": "h100.nvidia.com"},
        {"name": "a100", "deviceClassName": "a100.nvidia.com", "count": 2},
        {"name": "t4", "deviceClassName": "t4.nvidia.com", "count": 4},
    ],
}


def verdicts(obj: dict[str, Any]) -> dict[str, tuple[bool, str, str | None]]:
    views = skew_document(obj, releases_between("1.33", "1.39")) or []
    return {
        v.version: (v.served, v.verdict, v.if_enabled.verdict if v.if_enabled else None)
        for v in views
    }


def test_v1_first_available_accepted_from_1_34() -> None:
    """A v1 claim with firstAvailable: 1.33 rejected (no v1, gate off), accepted from 1.34 on."""
    result = verdicts(claim("v1", [PRIORITIZED]))
    assert result["1.33"] == (False, "rejected", None)
    assert all(result[f"1.{m}"] == (True, "accepted", None) for m in range(34, 40))


def test_v1beta2_gate_off_in_1_33_and_removal() -> None:
    """v1beta2: not served by default; if enabled in 1.33 the gate drops the list (rejected); gone in 1.39."""
    result = verdicts(claim("v1beta2", [PRIORITIZED]))
    assert result["1.33"] == (False, "rejected", "rejected")
    assert result["1.34"] == (False, "rejected", "accepted")
    assert result["1.38"] == (False, "rejected", "accepted")
    assert result["1.39"] == (False, "rejected", None)


def test_v1beta1_behind_a_gate_in_1_38() -> None:
    """v1beta1: beta through 1.37; 1.38 installs it only with DRAResourceV1beta1API, off by
    default (upstream pkg/apis/resource/install/install.go, its "disabled-by-default" test
    case); its prerelease lifecycle says removed in 1.38, so 1.39 has none (issue 17)."""
    result = verdicts(claim("v1beta1", [PRIORITIZED]))
    assert result["1.37"][2] == "accepted"
    assert result["1.38"] == (False, "rejected", "accepted")
    assert result["1.39"] == (False, "rejected", None)
    views = {v.version: v for v in skew_document(claim("v1beta1", [PRIORITIZED]),
                                                  releases_between("1.37", "1.39")) or []}
    assert "DRAResourceV1beta1API" not in views["1.37"].explanation
    assert views["1.38"].explanation.startswith(
        "resource.k8s.io/v1beta1 is a beta API, not served by default in 1.38 (enable it with "
        "the DRAResourceV1beta1API feature gate (off by default) and "
        "--runtime-config=resource.k8s.io/v1beta1=true)"
    )
    assert views["1.39"].explanation.startswith("resource.k8s.io/v1beta1 was removed in 1.38")


def test_dynamic_resource_allocation_gate_goes_in_1_38() -> None:
    """GA and locked on since 1.35; kube_features.go: "remove completely in 1.38"
    (kubernetes#134459). Nothing changes for claims: 1.38 treats a v1 claim as 1.37 does."""
    from draguard.schema.model.releases import release

    assert release("1.37").dynamic_resource_allocation_gate
    assert not release("1.38").dynamic_resource_allocation_gate
    result = verdicts(claim("v1", [PRIORITIZED]))
    assert result["1.38"] == result["1.37"] == (True, "accepted", None)


def test_explanation_in_words() -> None:
    """The changed meaning is said in words: the request loses its alternatives and becomes empty."""
    views = skew_document(claim("v1beta2", [PRIORITIZED]), releases_between("1.33", "1.33")) or []
    enabled = views[0].if_enabled
    assert enabled is not None
    assert "request `gpu` loses its 3 alternatives and becomes empty" in enabled.explanation
    assert [str(p) for p in enabled.dropped] == ["spec.devices.requests[0].firstAvailable"]
    assert [(e.type.value, e.field) for e in enabled.errors] == [
        ("Required", "spec.devices.requests[0]")
    ]


def test_tolerations_changed_before_1_36() -> None:
    """A gated field that is merely dropped gives `changed`, not `rejected`."""
    request = {
        "name": "nic",
        "exactly": {"deviceClassName": "nic", "tolerations": [{"operator": "Exists"}]},
    }
    result = verdicts(claim("v1", [request]))
    assert result["1.35"] == (True, "changed", None)
    assert result["1.36"] == (True, "accepted", None)


def test_1_34_drops_less_than_its_gates_say() -> None:
    """1.34 keeps tolerations (the claim strategy's drop is kubernetes#132927, 1.35.0) and
    distinctAttribute (its 1.34 drop ranged over copies; fixed by kubernetes#134962, 1.35.0)."""
    request = {
        "name": "nic",
        "exactly": {"deviceClassName": "nic", "tolerations": [{"operator": "Exists"}]},
    }
    obj = claim("v1", [request], constraints=[{"distinctAttribute": "nic.example.com/port"}])
    views = {v.version: v for v in skew_document(obj, releases_between("1.34", "1.36")) or []}
    assert (views["1.34"].verdict, views["1.34"].dropped) == ("accepted", ())
    assert views["1.35"].verdict == "rejected"  # the constraint loses its only attribute
    assert [str(p) for p in views["1.35"].dropped] == [
        "spec.devices.requests[0].exactly.tolerations",
        "spec.devices.constraints[0].distinctAttribute",
    ]
    assert views["1.36"].verdict == "accepted"


def test_skew_advice_scheduler_view() -> None:
    """The scheduler view is the `skew-first-available` advice lint and the webhook give,
    for a cluster at the given release: at 1.34 the version-skew policy allows a 1.33
    kube-scheduler, which lacks firstAvailable; at 1.37 (default) no allowed one does."""
    from draguard.schema.model.releases import release

    [item] = skew_advice(claim("v1", [PRIORITIZED]), [release("1.34")])
    assert item.code == "skew-first-available" and "before 1.34" in item.message
    assert skew_advice(claim("v1", [PRIORITIZED])) == []


def test_cli_warnings_are_those_of_the_releases_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(claim("v1", [PRIORITIZED])))
    main([str(path), "--output", "json"])  # from 1.33: 1.33 drops the list, 1.34 warns
    assert [w["code"] for w in json.loads(capsys.readouterr().out)["results"][0]["warnings"]] == [
        "skew-first-available"]
    main([str(path), "--output", "json", "--from", "1.35"])
    assert json.loads(capsys.readouterr().out)["results"][0]["warnings"] == []


def test_cli_json_shape_and_exit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON output has the contract's keys; exit 1 when a release rejects."""
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(claim("v1", [PRIORITIZED])))
    assert main([str(path), "--output", "json", "--from", "1.33", "--to", "1.35"]) == 1
    data = json.loads(capsys.readouterr().out)
    (result,) = data["results"]
    assert set(result) >= {"file", "document", "apiVersion", "kind", "name", "releases"}
    first = result["releases"][0]
    assert set(first) == {
        "version",
        "served",
        "dropped",
        "verdict",
        "errors",
        "explanation",
        "if_enabled",
        "notes",
    }
    assert all(isinstance(r["notes"], list) for r in result["releases"])
    assert [r["version"] for r in result["releases"]] == ["1.33", "1.34", "1.35"]


def test_cli_fine_everywhere_exits_0(tmp_path: Path) -> None:
    """A plain exact v1 claim is accepted from 1.34 to 1.39: exit 0."""
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(claim("v1", [{"name": "nic", "exactly": {"deviceClassName": "nic"}}]))
    )
    assert main([str(path), "--from", "1.34"]) == 0


@pytest.mark.parametrize(
    "argv", [["--from", "1.36", "--to", "1.34", "x"], ["--from", "9.9", "x"], []]
)
def test_cli_usage_errors(argv: list[str]) -> None:
    """Bad ranges and missing paths are usage errors (exit 2)."""
    assert main(argv) == 2


def test_release_notes_name_the_allocator_bug_by_release() -> None:
    """An All-mode alternative after the first is a note in 1.34 and 1.35 only (fixed in 1.36.0)."""
    request = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "one", "deviceClassName": "a.example.com"},
            {"name": "all", "deviceClassName": "a.example.com", "allocationMode": "All"},
        ],
    }
    views = skew_document(claim("v1", [request]), releases_between("1.34", "1.36")) or []
    noted = {v.version: [n for n in v.notes if "allocationMode" in n] for v in views}
    assert noted["1.34"] and noted["1.35"] and not noted["1.36"]
    assert "fixed in 1.36.0" in noted["1.35"][0]


def _skew_json(tmp_path: Path, obj: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> Any:
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(obj))
    main([str(path), "--output", "json"])
    return json.loads(capsys.readouterr().out)["results"][0]["releases"]


def test_json_dropped_lists_what_the_explanation_describes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A v1 claim in 1.33 says its request loses its alternatives, and `dropped` names them."""
    first = _skew_json(tmp_path, claim("v1", [PRIORITIZED]), capsys)[0]
    assert first["version"] == "1.33" and "loses its 3 alternatives" in first["explanation"]
    assert first["dropped"] == ["spec.devices.requests[0].firstAvailable"]


def test_one_alternative_is_said_in_the_singular() -> None:
    """A request with one alternative "loses its only alternative", not "its 1 alternatives"."""
    single = {**PRIORITIZED, "firstAvailable": PRIORITIZED["firstAvailable"][:1]}
    views = skew_document(claim("v1", [single]), releases_between("1.33", "1.33")) or []
    assert "loses its only alternative and" in views[0].explanation


def test_text_rows_keep_their_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every row puts the if-enabled verdict in its own column, said once, not in the words."""
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(claim("v1beta2", [PRIORITIZED])))
    main([str(path)])
    lines = capsys.readouterr().out.splitlines()
    header = lines[1]
    start = header.index("explanation")
    assert header.index("if enabled") < start
    rows = [line for line in lines[2:] if line[2:3].isdigit()]
    assert len(rows) == 7
    for row in rows:
        assert row[start - 2:start] == "  " and row[start] != " ", row
        assert "(if enabled" not in row and not row.endswith("if enabled: accepted"), row
    assert rows[1].split()[:4] == ["1.34", "no", "rejected", "accepted"]
    assert rows[-1].split()[:4] == ["1.39", "no", "rejected", "-"]


@pytest.mark.parametrize("flag", ["--from", "--to"])
def test_range_options_have_help(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`skew --help` explains --from and --to."""
    assert main(["--help"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith(flag))
    assert "release" in line
