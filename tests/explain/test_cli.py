"""`draguard explain` end to end: contract §6 keys, exit codes, `--node`, bad input."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from draguard.schema.cli import explain as explain_cli
from draguard.webhook.cli import main as draguard_main

CLUSTER = Path(__file__).resolve().parent / "cluster"


def run(*argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = explain_cli.main(list(argv), stdin=io.BytesIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_json(*argv: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(*argv, "-o", "json")
    document: dict[str, Any] = json.loads(out)
    return code, document


def test_json_keys_are_the_contracts() -> None:
    """Every object in the JSON output has exactly the keys contract.md §6 lists."""
    code, document = run_json(str(CLUSTER), "--kubernetes-version", "1.36")
    assert code == 0
    assert set(document) == {"kubernetesVersion", "pods"}
    assert document["kubernetesVersion"] == "1.36"
    [pod] = document["pods"]
    assert set(pod) == {"namespace", "name", "error", "nodes"}
    for node in pod["nodes"]:
        assert set(node) == {"node", "feasible", "score", "rawScore", "reason", "claims"}
        for claim in node["claims"]:
            assert set(claim) == {"name", "results", "alternatives"}
            for result in claim["results"] or ():
                assert set(result) == {"request", "driver", "pool", "device"}
            for alternative in claim["alternatives"]:
                assert set(alternative) == {"request", "chosen", "rejected"}
                for rejected in alternative["rejected"]:
                    assert set(rejected) == {"subrequest", "reason"}


def test_each_node_gets_its_alternative() -> None:
    """node-2 gives the H100, node-1 the two A100s, node-3 nothing (its A100s are taken)."""
    _, document = run_json(str(CLUSTER))
    nodes = {n["node"]: n for n in document["pods"][0]["nodes"]}
    assert nodes["node-2"]["claims"][0]["alternatives"][0]["chosen"] == "h100"
    assert nodes["node-1"]["claims"][0]["alternatives"][0]["chosen"] == "two-a100"
    assert [r["device"] for r in nodes["node-1"]["claims"][0]["results"]] == ["gpu-0", "gpu-1"]
    assert nodes["node-1"]["claims"][0]["results"][0]["request"] == "gpu/two-a100"
    assert nodes["node-3"]["feasible"] is False
    assert nodes["node-3"]["claims"][0]["results"] is None


def test_template_claim_is_named_after_pod_and_entry() -> None:
    """A template gives the Pod one claim named `<pod>-<entry name>`."""
    _, document = run_json(str(CLUSTER))
    assert document["pods"][0]["nodes"][0]["claims"][0]["name"] == "trainer-gpu"


def test_rejected_alternative_says_why() -> None:
    """The reason names the class, the selector, the node and the allocated candidates."""
    _, document = run_json(str(CLUSTER), "--node", "node-3")
    [node] = document["pods"][0]["nodes"]
    rejected = node["claims"][0]["alternatives"][0]["rejected"]
    assert [r["subrequest"] for r in rejected] == ["h100", "two-a100"]
    assert rejected[1]["reason"] == (
        "no device of class gpu.example.com on node-3: 2 candidates, both allocated")
    assert "`device.capacity" in rejected[0]["reason"]


def test_scores_from_1_35() -> None:
    """First alternative 8, second 7; normalised to 100 × raw / max (87 = 700 // 8)."""
    _, document = run_json(str(CLUSTER), "--kubernetes-version", "1.35")
    scores = {n["node"]: (n["score"], n["rawScore"]) for n in document["pods"][0]["nodes"]}
    assert scores == {"node-1": (87, 7), "node-2": (100, 8), "node-3": (None, None)}


def test_no_scores_before_1_35() -> None:
    """1.34's plugin does not score: score and rawScore are null."""
    _, document = run_json(str(CLUSTER), "--kubernetes-version", "1.34")
    assert all(n["score"] is None and n["rawScore"] is None for n in document["pods"][0]["nodes"])


def test_node_option_keeps_the_score_among_all_nodes() -> None:
    """`--node` shows one node, scored against every feasible node."""
    _, document = run_json(str(CLUSTER), "--node", "node-1")
    [node] = document["pods"][0]["nodes"]
    assert (node["score"], node["rawScore"]) == (87, 7)


def test_no_scores_with_one_feasible_node(tmp_path: Path) -> None:
    """With fewer than two feasible nodes nothing is scored."""
    text = (CLUSTER / "cluster.yaml").read_text().replace("nodeName: node-1", "nodeName: node-9")
    (tmp_path / "cluster.yaml").write_text(text)
    (tmp_path / "pod.yaml").write_text((CLUSTER / "pod.yaml").read_text())
    _, document = run_json(str(tmp_path))
    feasible = [n for n in document["pods"][0]["nodes"] if n["feasible"]]
    assert [n["node"] for n in feasible] == ["node-2"] and feasible[0]["score"] is None


def test_text_groups_nodes_by_outcome() -> None:
    """The text view lists the best group first, with counts, and infeasible last."""
    code, out, _ = run(str(CLUSTER))
    assert code == 0
    lines = [line for line in out.splitlines() if re.match(r"\s+\d+ nodes? ", line)]
    assert "gpu→h100" in lines[0] and "gpu→two-a100" in lines[1] and "infeasible" in lines[2]


def test_node_option_tells_the_full_story() -> None:
    """`--node` prints the node's claims, devices and every rejected alternative."""
    code, out, _ = run(str(CLUSTER), "--node", "node-1")
    assert code == 0
    assert "request gpu: chose two-a100" in out
    assert "gpu/two-a100: gpu.example.com/node-1/gpu-0" in out


def test_unschedulable_exits_1() -> None:
    """A Pod that fits no node exits 1."""
    code, _, _ = run(str(CLUSTER), "--node", "node-3")
    assert code == 1


def test_unreadable_input_exits_2() -> None:
    code, _, err = run(str(CLUSTER / "missing.yaml"))
    assert code == 2 and "cannot read" in err


def test_unknown_release_exits_2() -> None:
    code, _, err = run(str(CLUSTER), "--kubernetes-version", "1.33")
    assert code == 2 and "1.34 to 1.37" in err


def test_unknown_node_exits_2() -> None:
    code, _, err = run(str(CLUSTER), "--node", "node-9")
    assert code == 2 and "node-9" in err


def test_stdin() -> None:
    """`-` reads the objects from stdin."""
    text = b"".join((CLUSTER / n).read_bytes() + b"\n---\n" for n in ("cluster.yaml", "pod.yaml"))
    code, out, _ = run("-", "-o", "json", stdin=text)
    assert code == 0 and json.loads(out)["pods"][0]["name"] == "trainer"


def test_dispatcher_knows_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert draguard_main.main(["explain", str(CLUSTER), "--node", "node-2"]) == 0
    assert "node-2" in capsys.readouterr().out


# --- bad input: a finding with a line, never a traceback ----------------------------------

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}}}
spec:
  driver: gpu.example.com
  nodeName: {node}
  pool: {{name: {pool}, generation: {generation}, resourceSliceCount: {count}}}
  devices: {devices}
"""


def _slice(name: str = "s", node: str = "node-1", pool: str = "p", generation: int = 1,
           count: int = 1, devices: str = "[{name: d}]") -> str:
    return SLICE.format(name=name, node=node, pool=pool, generation=generation, count=count,
                        devices=devices)


def _explain_with(tmp_path: Path, extra: str) -> tuple[int, str]:
    path = tmp_path / "extra.yaml"
    path.write_text(extra)
    code, _, err = run(str(CLUSTER), str(path))
    return code, err


@pytest.mark.parametrize(("extra", "expected"), [
    pytest.param(_slice(node="node-9"), "extra.yaml:1:1: ResourceSlice s: node node-9 is not among",
                 id="unknown-node"),
    pytest.param(_slice(devices="[{name: d}, {name: d}]"), "extra.yaml:8:25: Duplicate value: 'd'",
                 id="duplicate-device-name"),
    pytest.param(_slice(count=2) + "---\n" + _slice(name="t", generation=2, count=2),
                 "pool gpu.example.com/p: slices disagree on generation (1, 2)",
                 id="generations-disagree"),
    pytest.param(_slice(devices="[" + ", ".join(f"{{name: d{i}}}" for i in range(100_000)) + "]"),
                 "extra.yaml:8:3: Too many: 100000: must have at most 128 items",
                 id="100000-devices"),
    pytest.param("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: x}\n"
                 "spec: {driver: d, nodeName: node-1, pool: {name: p}}\n",
                 "spec.pool.generation must be an integer", id="missing-generation"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: [unclosed\n",
                 "extra.yaml:3:", id="broken-yaml"),
])
def test_bad_input_is_a_finding(tmp_path: Path, extra: str, expected: str) -> None:
    """A broken object is reported on stderr with its line; the rest is still explained."""
    code, err = _explain_with(tmp_path, extra)
    assert code == 0
    assert expected in err


SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def test_shared_device_results_carry_consumed_capacity() -> None:
    """A share's result has consumedCapacity and a placeholder for the scheduler's random shareID."""
    path = SCENARIOS / "consumable-capacity-multi-allocatable-device-with-range-policy-step.yaml"
    code, document = run_json(str(path), "--kubernetes-version", "1.37")
    assert code == 0
    [pod] = document["pods"]
    [node] = pod["nodes"]
    [claim] = node["claims"]
    assert claim["results"] == [{"request": "req-0", "driver": "driver-a", "pool": "pool-1",
                                 "device": "device-1", "shareID": "<generated>",
                                 "consumedCapacity": {"capacity-0": "4"}}]


def test_shared_device_in_text() -> None:
    """The text view says a device is shared and what the share consumes."""
    path = SCENARIOS / "consumable-capacity-multi-allocatable-device-with-range-policy-step.yaml"
    code, out, _ = run(str(path), "--kubernetes-version", "1.37", "--node", "node-1")
    assert code == 0
    assert "req-0: driver-a/pool-1/device-1 (shared, consumes capacity-0 4)" in out


def test_lone_claim_with_a_scheduling_error_is_named() -> None:
    """A claim explained alone is titled by its name even when no node was explained."""
    code, out, _ = run(str(SCENARIOS / "unknown-class.yaml"), "--kubernetes-version", "1.36")
    assert code == 1
    assert "claim default/claim-0\n  scheduling error:" in out


# --- the process: `os._exit` once the output is flushed (webhook/cli/main.py) ---------------

DRAGUARD = str(Path(sys.executable).parent / "draguard")
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as users run it


def _many_nodes(tmp_path: Path, nodes: int) -> Path:
    """A `kubectl get -o json` List of `nodes` nodes, each with one slice of 4 GPUs."""
    items: list[dict[str, Any]] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}]
    for n in range(nodes):
        name = f"node-{n:04d}"
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                      "metadata": {"name": name},
                      "spec": {"driver": "gpu.example.com", "nodeName": name,
                               "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                               "devices": [{"name": f"gpu-{d}"} for d in range(4)]}})
    items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": "c", "namespace": "default"},
                  "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
                      {"name": "eight", "deviceClassName": "gpu", "count": 8},
                      {"name": "two", "deviceClassName": "gpu", "count": 2}]}]}}})
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=4))
    return path


@pytest.mark.parametrize("output", ["json", "text"])
def test_process_flushes_everything_before_exiting(tmp_path: Path, output: str) -> None:
    """The process's output through a pipe is the in-process output, byte for byte, and its
    exit code is kept: the command ends with `os._exit`, which flushes nothing itself."""
    path = _many_nodes(tmp_path, 400)
    done = subprocess.run([DRAGUARD, "explain", "-o", output, str(path)], capture_output=True,
                          text=True, check=False, env=BUFFERED)
    code, out, err = run("-o", output, str(path))
    assert len(out) > (65536 if output == "json" else 0)  # JSON: more than a pipe holds
    assert (done.returncode, done.stdout, done.stderr) == (code, out, err) == (0, out, "")


@pytest.mark.parametrize(("args", "code"), [
    pytest.param([str(CLUSTER), "--node", "node-3"], 1, id="unschedulable"),
    pytest.param([str(CLUSTER), "--node", "node-9"], 2, id="usage"),
])
def test_process_keeps_the_exit_code(args: list[str], code: int) -> None:
    """Exit codes 1 and 2, with stdout and stderr complete, from a real process."""
    done = subprocess.run([DRAGUARD, "explain", *args], capture_output=True, text=True,
                          check=False, env=BUFFERED)
    expected = run(*args)
    assert (done.returncode, done.stdout, done.stderr) == expected
    assert expected[0] == code
