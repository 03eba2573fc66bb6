"""`draguard convert` as a command (issue 3 §1, contract §4): output, refusals, files, exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest
import strategies
import yaml
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pooled import by_jobs

from draguard.schema.cli.convert import convert_file, main
from draguard.schema.convert import TARGETS, convert_document
from draguard.schema.model.options import DEFAULT_OPTIONS

MIXED = """\
# A comment at the top of the file stays.
apiVersion: v1
kind: ConfigMap   # not DRA: untouched
metadata:
  name: settings
data: {mode: "on"}
---
# the claim
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata:
  name: mixed    # keep this comment
  namespace: ml
  labels: {team: vision}
spec:
  devices:
    requests:
    # the network card
    - name: nic
      deviceClassName: nic.example.com
    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: gpu.example.com}
"""

AMBIGUOUS = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: ambiguous, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      selectors: []
      adminAccess: false
      firstAvailable:
      - {name: big, deviceClassName: gpu.example.com}
    - name: fpga
      deviceClassName: fpga.example.com
      firstAvailable:
      - {name: big, deviceClassName: fpga.example.com}
"""

TOLERATIONS = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: tainted, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        tolerations: [{key: example.com/flaky, operator: Exists}]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def docs(text: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def test_one_file_prints_its_documents_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One file: its documents in order, the DRA one converted, the other untouched."""
    status, out, _ = run(["--to", "v1", str(write(tmp_path, "m.yaml", MIXED))], capsys)
    assert status == 0
    config_map, claim = docs(out)
    assert config_map == docs(MIXED)[0]
    assert claim["apiVersion"] == "resource.k8s.io/v1"
    assert [r["name"] for r in claim["spec"]["devices"]["requests"]] == ["nic", "gpu"]
    assert "# file:" not in out


def test_comments_and_key_order_survive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Comments, key order and flow styles of what did not move are kept (ruamel round trip)."""
    _, out, _ = run(["--to", "v1", str(write(tmp_path, "m.yaml", MIXED))], capsys)
    for kept in (
        "# A comment at the top of the file stays.",
        "kind: ConfigMap   # not DRA: untouched",
        'data: {mode: "on"}',
        "# the claim",
        "name: mixed    # keep this comment",
        "labels: {team: vision}",
        "# the network card",
    ):
        assert kept in out
    claim_text = out.split("# the claim", 1)[1]
    keys = [line.split(":")[0] for line in claim_text.splitlines() if line[:1].isalpha()]
    assert keys == ["apiVersion", "kind", "metadata", "spec"]


def test_documents_nothing_converts_are_copied_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Markers, comment-only pieces and unconverted documents come out exactly as written."""
    text = "---\n# only a comment\n---\n" + MIXED.split("---\n")[0] + "...\n---\n" + AMBIGUOUS
    text += "---\n"
    status, out, _ = run(["--to", "v1", str(write(tmp_path, "x.yaml", text))], capsys)
    assert status == 1  # the ambiguous claim is refused, so nothing else changes
    # Issue 17: the refused document is not echoed to stdout (a comment takes its place).
    assert out == text.replace(
        AMBIGUOUS, "# draguard convert: document 1 refused (see stderr), not written\n"
    )


def test_a_claim_already_in_the_target_shape_keeps_its_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21: nothing to convert, so no round trip re-indents or re-quotes it."""
    text = (
        "apiVersion: resource.k8s.io/v1\n"
        "kind:   ResourceClaim   # odd spacing, kept\n"
        "metadata: {name: 'done', namespace: ml}\n"
        "spec:\n"
        "    devices:\n"
        "        requests:\n"
        "            -   name: gpu\n"
        "                exactly: {deviceClassName: gpu.example.com, allocationMode: ExactCount,"
        " count: 1}\n"
    )
    status, out, err = run(["--to", "v1", str(write(tmp_path, "x.yaml", text))], capsys)
    assert (status, out, err) == (0, text, "")


def test_a_converted_document_keeps_its_markers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The `---` line (with its comment) before and a `...` after a converted document stay."""
    claim = MIXED.split("---\n")[1]
    text = "--- # first\n" + claim + "...\n---\n# trailing comment-only piece\n"
    status, out, _ = run(["--to", "v1beta2", str(write(tmp_path, "x.yaml", text))], capsys)
    assert status == 0
    assert out.startswith("--- # first\n# the claim\napiVersion: resource.k8s.io/v1beta2\n")
    assert out.endswith("...\n---\n# trailing comment-only piece\n")
    assert "null" not in out


def test_several_files_are_each_preceded_by_their_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Several files: each preceded by `# file: NAME`, in the order given."""
    first, second = write(tmp_path, "a.yaml", MIXED), write(tmp_path, "b.yaml", TOLERATIONS)
    status, out, _ = run(["--to", "parallel", str(first), str(second)], capsys)
    assert status == 0
    headers = [line for line in out.splitlines() if line.startswith("# file: ")]
    assert headers == [f"# file: {first}", f"# file: {second}"]
    assert docs(out.split(f"# file: {second}\n")[1])[0]["kind"] == "ResourceClaim"


def test_refused_documents_are_named_with_every_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1; stderr names the file, the document and each field the target cannot hold."""
    path = write(tmp_path, "amb.yaml", MIXED + "---\n" + AMBIGUOUS)
    status, out, err = run(["--to", "v1", str(path)], capsys)
    assert status == 1
    refused = [line for line in err.splitlines() if "refused" in line]
    assert len(refused) == 2
    assert all(line.startswith(f"{path}: document 2: refused: ") for line in refused)
    assert {line.split("refused: ")[1].split(":")[0] for line in refused} == {
        "spec.devices.requests[0]",
        "spec.devices.requests[1]",
    }
    # Issue 17: the refused document is left out of stdout, a comment in its place.
    _, converted = docs(out)
    assert converted["apiVersion"] == "resource.k8s.io/v1"
    assert out.endswith("---\n# draguard convert: document 2 refused (see stderr), not written\n")


def test_allow_loss_converts_and_lists_what_was_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--allow-loss`: exit 0, the dropped field named on stderr and gone from the output."""
    path = write(tmp_path, "t.yaml", TOLERATIONS)
    argv = ["--to", "v1", "--kubernetes-version", "1.35", str(path)]
    assert run(argv, capsys)[0] == 1
    status, out, err = run([*argv, "--allow-loss"], capsys)
    assert status == 0
    assert "dropped: spec.devices.requests[0].exactly.tolerations" in err
    assert "tolerations" not in out


@pytest.mark.parametrize(
    ("version", "status"),
    [
        pytest.param("1.35", 1, id="tolerations-gate-off"),
        pytest.param("1.36", 0, id="tolerations-gate-on"),
        pytest.param("v1.37.2", 0, id="patch-level-accepted"),
        pytest.param("1.32", 2, id="unknown-release"),
        pytest.param("latest", 2, id="not-a-version"),
    ],
)
def test_kubernetes_version_selects_the_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str, status: int
) -> None:
    """`--kubernetes-version` picks the release whose gates apply; a bad one is a usage error."""
    path = write(tmp_path, "t.yaml", TOLERATIONS)
    assert run(["--to", "v1", "--kubernetes-version", version, str(path)], capsys)[0] == status


def test_in_place_rewrites_only_files_that_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--in-place` writes converted files back, prints nothing, leaves other files alone."""
    claim, other = write(tmp_path, "c.yaml", MIXED), write(tmp_path, "o.yaml", "a: 1  # x\n")
    before = other.stat().st_mtime_ns
    status, out, _ = run(["--to", "v1", "--in-place", str(claim), str(other)], capsys)
    assert status == 0 and out == ""
    assert docs(claim.read_text())[1]["apiVersion"] == "resource.k8s.io/v1"
    assert "# keep this comment" in claim.read_text()
    assert other.read_text() == "a: 1  # x\n" and other.stat().st_mtime_ns == before


def test_folders_are_walked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder argument converts its *.yaml / *.yml / *.json files, each named."""
    write(tmp_path, "a.yaml", MIXED)
    write(tmp_path, "b.yml", TOLERATIONS)
    write(tmp_path, "notes.txt", "not a manifest")
    status, out, _ = run(["--to", "v1beta2", str(tmp_path)], capsys)
    assert status == 0
    assert out.count("# file: ") == 2 and "notes.txt" not in out


def test_json_input_gives_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A JSON file is converted to JSON."""
    path = write(tmp_path, "c.json", json.dumps(docs(MIXED)[1]))
    status, out, _ = run(["--to", "v1", str(path)], capsys)
    assert status == 0
    assert json.loads(out)["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["x.yaml"], 2, id="no-target"),
        pytest.param(["--to", "v2", "x.yaml"], 2, id="unknown-target"),
        pytest.param(["--to", "v1"], 2, id="no-path"),
        pytest.param(["--to", "v1", "--in-place", "-"], 2, id="in-place-stdin"),
        pytest.param(["--to", "v1", "/nonexistent/x.yaml"], 2, id="missing-file"),
        pytest.param(["--help"], 0, id="help"),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], expected: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad options and unreadable input exit 2 (contract §4); `--help` exits 0."""
    assert run(argv, capsys)[0] == expected


def test_unparsable_yaml_exits_2_and_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that is not YAML is named on stderr and left out of the output."""
    path = write(tmp_path, "bad.yaml", "a: [unclosed\n")
    status, out, err = run(["--to", "v1", str(path)], capsys)
    assert status == 2 and out == "" and "bad.yaml" in err


def test_new_strings_are_safe_for_yaml_1_1_readers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A moved string such as "yes" or "0777" is quoted: kubectl reads YAML 1.1, where they are not strings."""
    text = TOLERATIONS.replace(
        "tolerations: [{key: example.com/flaky, operator: Exists}]",
        'tolerations: [{key: "no", operator: Equal, value: "yes"}, {key: "0777", operator: Exists}]',
    )
    status, out, _ = run(["--to", "v1beta1", str(write(tmp_path, "t.yaml", text))], capsys)
    assert status == 0
    (claim,) = docs(out)  # PyYAML resolves plain scalars by the YAML 1.1 rules
    tolerations = claim["spec"]["devices"]["requests"][0]["tolerations"]
    assert [t["key"] for t in tolerations] == ["no", "0777"]
    assert tolerations[0]["value"] == "yes"


def test_stdin_is_read_with_dash(capsys: pytest.CaptureFixture[str]) -> None:
    """`-` reads the manifest from stdin (run as a real process)."""
    result = subprocess.run(
        [sys.executable, "-m", "draguard.webhook.cli.main", "convert", "--to", "v1", "-"],
        input=TOLERATIONS,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert docs(result.stdout)[0]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


KUBECTL_LIST = """\
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceClaim
  metadata: {name: first, namespace: ml, resourceVersion: "12"}
  spec:
    devices:
      requests:
      - {name: nic, deviceClassName: nic.example.com}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: other}
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceClaim
  metadata: {name: second, namespace: ml}
  spec:
    devices:
      requests:
      - name: gpu
        selectors: []
        firstAvailable: [{name: big, deviceClassName: gpu.example.com}]
"""


def test_list_items_are_converted_one_by_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kind: List` (kubectl get -o yaml): each DRA item converted, a refused item left and named."""
    path = write(tmp_path, "list.yaml", KUBECTL_LIST)
    status, out, err = run(["--to", "v1", str(path)], capsys)
    assert status == 1
    assert err.strip() == (
        f"{path}: document 0 item 2: refused: spec.devices.requests[0]: has both exact fields "
        "and firstAvailable (invalid): the conversion is ambiguous"
    )
    (listing,) = docs(out)
    first, other, second = listing["items"]
    assert first["apiVersion"] == "resource.k8s.io/v1"
    assert first["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    assert other == docs(KUBECTL_LIST)[0]["items"][1]
    assert second == docs(KUBECTL_LIST)[0]["items"][2]
    assert listing["apiVersion"] == "v1" and listing["kind"] == "List"


@settings(
    max_examples=examples(50),  # ruamel's round trip of a whole file per example
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    doc=strategies.documents(),
    target=st.sampled_from(TARGETS),
    flow=st.booleans(),
)
def test_the_yaml_path_gives_the_library_result(
    doc: dict[str, Any], target: str, flow: bool
) -> None:
    """Editing the user's YAML in place (ruamel) yields exactly the library's converted document."""
    text = yaml.safe_dump(doc, default_flow_style=None if flow else False, sort_keys=False)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "claim.yaml"
        path.write_text(text)
        with redirect_stderr(io.StringIO()):
            result = convert_file(str(path), target, options=DEFAULT_OPTIONS, allow_loss=False)
    assert result is not None and not result.refused
    assert yaml.safe_load(result.text) == convert_document(doc, target).document


MOVING = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: nic   # the NIC
      exactly:
        deviceClassName: nic.example.com
        selectors: [{cel: {expression: 'device.driver == "nic"'}}]  # only ours
    - name: gpu
      firstAvailable:
      # best first
      - name: h100   # fastest
        deviceClassName: h100.nvidia.com
      - {name: a100, deviceClassName: a100.nvidia.com, count: 2}
"""


@pytest.mark.parametrize("targets", [["parallel"], ["parallel", "nested"], ["v1beta1"]])
def test_comments_move_with_what_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], targets: list[str]
) -> None:
    """Subrequests moved to `options` (and back) or flat fields moved out of `exactly` keep their comments and flow style."""
    path = write(tmp_path, "c.yaml", MOVING)
    for target in targets:
        assert run(["--to", target, "--in-place", str(path)], capsys)[0] == 0
    out = path.read_text()
    for kept in ("# best first", "- name: h100   # fastest", "# only ours", "{name: a100, "):
        assert kept in out


@pytest.mark.parametrize("command", ["convert", "roundtrip"])
def test_a_reader_that_goes_away_ends_quietly(tmp_path: Path, command: str) -> None:
    """`draguard convert … | head -1`: no BrokenPipeError traceback, the exit code kept."""
    path = write(tmp_path, "many.yaml", "---\n".join([MIXED.split("---\n")[1]] * 300))
    args = ["--to", "v1", str(path)] if command == "convert" else [str(path)]
    draguard = [sys.executable, "-m", "draguard.webhook.cli.main", command, *args]
    pipeline = subprocess.run(
        ["bash", "-c", '"$@" | head -1; exit "${PIPESTATUS[0]}"', "bash", *draguard],
        capture_output=True,
        text=True,
        check=False,
    )
    assert pipeline.returncode == 0
    assert "Traceback" not in pipeline.stderr and "BrokenPipe" not in pipeline.stderr


def test_jobs_give_the_bytes_of_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `--jobs 2` (a pool for a large input) stdout, stderr, the exit code and the
    files written in place are those of one process, documents and messages in order."""
    many = "".join(f"---\n# document {i}\n" + MIXED.replace("name: mixed", f"name: m{i}")
                   for i in range(80))
    files = {
        "a.yaml": many,
        "b.yaml": AMBIGUOUS + "---\n" + MIXED.replace("name: mixed", "name: {{ .Values.n }}"),
        "c.yaml": MIXED + "---\nkey: [unclosed\n---\n" + MIXED,
        "d.yaml": many,
    }

    def both(jobs: str, paths: list[str], folder: Path) -> tuple[Any, Any, dict[str, str]]:
        printed = run(["--to", "v1", "--jobs", jobs, *paths], capsys)
        written = run(["--to", "v1", "--in-place", "--jobs", jobs, *paths], capsys)
        return printed, written, {name: (folder / name).read_text() for name in files}

    runs = by_jobs(tmp_path, files, both)
    one, two = (
        (p[0], p[1].replace(f"/{jobs}/", "/"), p[2].replace(f"/{jobs}/", "/"),
         w[0], w[1].replace(f"/{jobs}/", "/"), w[2].replace(f"/{jobs}/", "/"), texts)
        for jobs, (p, w, texts) in zip(("1", "2"), runs, strict=True)
    )
    assert one == two
    assert one[0] == 2 and "not valid YAML" in one[2] and "cannot read" in one[2]
    assert one[1].count("apiVersion: resource.k8s.io/v1\n") >= 160
