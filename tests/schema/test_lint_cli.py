"""`draguard lint` end to end: options, exit codes, stdin, the real rule set and the corpus."""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import corpus
import lint_fakes as fakes
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema import lint
from draguard.schema.cli import lint as lint_cli
from draguard.schema.model.options import Options
from draguard.schema.model.releases import release
from draguard.schema.read import sources
from draguard.webhook.cli import main as draguard_main

CASES = Path(__file__).resolve().parents[1] / "cases"


GOOD = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: good
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: big
        deviceClassName: big-gpu.example.com
      - name: small
        deviceClassName: small-gpu.example.com
        count: 2
"""

BAD = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: bad
  namespace: team-a
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: big
        deviceClassName: big-gpu.example.com
      - name: big
        deviceClassName: small-gpu.example.com
    constraints:
    - requests: ["gpu/missing"]
      matchAttribute: example.com/numa
"""

ADMIN = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: admin}
spec:
  devices:
    requests:
    - name: mon
      deviceClassName: gpu.example.com
      adminAccess: true
"""


def _run(argv: list[str], stdin: bytes = b"", validate: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    kwargs: dict[str, Any] = {} if validate is None else {"validate": validate}
    code = lint_cli.main(argv, stdin=io.BytesIO(stdin), stdout=out, stderr=err, **kwargs)
    return code, out.getvalue(), err.getvalue()


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- the real rule set -------------------------------------------------------------


def test_json_output_with_the_real_rules(tmp_path: Path) -> None:
    """The contract's JSON: a valid claim, and an invalid one with fields, types and positions."""
    good, bad = _write(tmp_path, "good.yaml", GOOD), _write(tmp_path, "bad.yaml", BAD)
    code, out, _ = _run(["--output", "json", good, bad])
    assert code == 1
    data = json.loads(out)
    by_name = {r["name"]: r for r in data["results"]}
    assert by_name["good"]["valid"] is True and by_name["good"]["errors"] == []
    assert by_name["good"]["namespace"] == "default"  # filled as kubectl does, not reported
    bad_result = by_name["bad"]
    assert (bad_result["file"], bad_result["document"], bad_result["namespace"]) == (
        bad,
        0,
        "team-a",
    )
    # 1.37 (the default): the declarative Duplicate comes after the hand-written errors
    # and names the whole item (issue 17, rules/declarative.py).
    assert [(e["field"], e["type"], e["line"], e["column"]) for e in bad_result["errors"]] == [
        ("spec.devices.constraints[0].requests[0]", "Invalid", 16, 18),
        ("spec.devices.requests[0].firstAvailable[1]", "Duplicate", 13, 9),
    ]
    assert bad_result["errors"][1]["message"] == (
        'Duplicate value: {"name":"big","deviceClassName":"small-gpu.example.com",'
        '"allocationMode":"ExactCount","count":1}')
    assert data["summary"] == {"documents": 2, "valid": 1, "invalid": 1, "skipped": 0}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_json_stream_cut_wrong_is_checked_as_split_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """A JSON stream is cut without decoding; where a piece does not decode (a broken
    value, values on one line), the report is that of the exact split."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
                 {"name": "big", "deviceClassName": "big.example.com", "allocationMode": "All"},
                 {"name": "big", "deviceClassName": "small.example.com"}]}]}}}
    good = "".join(json.dumps({**claim, "metadata": {"name": f"c{k}"}}, indent=2) + "\n"
                   for k in range(200))
    texts = [
        good + '{"a": \n}\n' + good,  # a broken value: the rest is one broken document
        good + '{"a": [1}\n{"b": 2}\n' + good,
        good + '{"a": 1}{"b": 2}\n[1] 2\n',
        "[1]\n" + good + "\n\n[2]\n",
    ]
    for k, text in enumerate(texts):
        path = _write(tmp_path, f"s{k}.json", text)
        argv = ["-o", "json", "--jobs", jobs, path]
        got = _run(argv)
        with monkeypatch.context() as patched:  # the exact split only
            patched.setattr(lint_cli, "split_documents",
                            lambda source, provisional=False: sources.split_documents(source))
            assert _run(argv) == got


def test_text_output_is_the_default(tmp_path: Path) -> None:
    """Without `--output`, findings print as `file:line:col: field: message`."""
    bad = _write(tmp_path, "bad.yaml", BAD)
    code, out, _ = _run([bad])
    assert code == 1
    assert out.splitlines()[0] == (
        f"{bad}:16:18: spec.devices.constraints[0].requests[0]: Invalid value: \"gpu/missing\": "
        "must be the name of a request in the claim or the name of a request and a subrequest "
        "separated by '/'"
    )


def test_stdin_is_read_with_dash() -> None:
    """`-` reads standard input; its results are named `<stdin>`."""
    code, out, _ = _run(["-", "--output", "json"], stdin=(GOOD + "---\n" + BAD).encode())
    assert code == 1
    results = json.loads(out)["results"]
    assert [(r["file"], r["document"], r["valid"]) for r in results] == [
        ("<stdin>", 0, True),
        ("<stdin>", 1, False),
    ]
    assert results[1]["errors"][1]["line"] == 15 + 13  # GOOD is 14 lines, then `---`


def test_namespace_option_fills_missing_namespaces(tmp_path: Path) -> None:
    """`--namespace` replaces `default` for objects without one."""
    good = _write(tmp_path, "good.yaml", GOOD)
    _, out, _ = _run(["--output", "json", "--namespace", "team-b", good])
    assert json.loads(out)["results"][0]["namespace"] == "team-b"


def test_admin_access_check_needs_namespace_labels(tmp_path: Path) -> None:
    """Without labels the admin-access check is skipped (said with --verbose); with them it runs."""
    path = _write(tmp_path, "admin.yaml", ADMIN)
    code, _, err = _run(["--verbose", path])
    assert code == 0 and "admin-access namespace check skipped" in err
    code, out, _ = _run(["--output", "json", "--namespace-labels", "team=a", path])
    assert code == 1
    (error,) = json.loads(out)["results"][0]["errors"]
    assert (error["type"], error["field"], error["line"], error["column"]) == (
        "Forbidden",
        "spec.devices.requests[0].adminAccess",
        9,
        7,
    )
    code, _, _ = _run(["--namespace-labels", "resource.kubernetes.io/admin-access=true", path])
    assert code == 0


def test_folders_are_walked_and_other_kinds_counted(tmp_path: Path) -> None:
    """A folder is linted recursively; other kinds are skipped, counted, and named with --verbose."""
    _write(tmp_path, "a.yaml", GOOD + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (tmp_path / "sub").mkdir()
    _write(tmp_path, "sub/b.json", json.dumps({"apiVersion": "v1", "kind": "Service"}))
    _write(tmp_path, "readme.txt", "not: linted\n")
    code, out, err = _run(["--output", "json", "--verbose", str(tmp_path)])
    assert code == 0
    data = json.loads(out)
    assert data["summary"] == {"documents": 3, "valid": 1, "invalid": 0, "skipped": 2}
    assert "ConfigMap" in err and "Service" in err


# --- options and exit codes ----------------------------------------------------------


def test_options_reach_the_rule_set(tmp_path: Path) -> None:
    """Version, namespace and namespace labels become the Options the rule set is called with."""
    seen: list[Options] = []

    def spy(obj: Any, *, options: Options) -> Any:
        seen.append(options)
        return fakes.fake_validate(obj, options=options)

    path = _write(tmp_path, "a.yaml", GOOD)
    code, _, _ = _run(
        [
            "--kubernetes-version",
            "1.34.3",
            "--namespace",
            "ns",
            "--namespace-labels",
            "a=b, c=",
            "--profile",
            "kueue",
            path,
        ],
        validate=spy,
    )
    assert code == 0
    assert seen == [
        Options(
            release=release("1.34"),
            namespace_labels={"a": "b", "c": ""},
            default_namespace="ns",
            kubernetes_patch=3,
            profiles=frozenset({"kueue"}),
        )
    ]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        pytest.param([], "required", id="no-path"),
        pytest.param(["--output", "xml", "a"], "invalid choice", id="unknown-output"),
        pytest.param(["--kubernetes-version", "1.20", "a"], "unsupported", id="old-version"),
        pytest.param(["--namespace-labels", "novalue", "a"], "KEY=VALUE", id="bad-labels"),
        pytest.param(["--jobs", "two", "a"], "invalid int", id="bad-jobs"),
        pytest.param(["--profile", "volcano", "a"], "invalid choice", id="unknown-profile"),
        pytest.param(["--bogus", "a"], "unrecognized", id="unknown-option"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], words: str) -> None:
    """Bad options exit 2 with a message on stderr and nothing on stdout."""
    code, out, err = _run(argv)
    assert (code, out) == (2, "")
    assert words in err


def test_help_exits_0() -> None:
    """`--help` prints the options and exits 0."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stdout", out)
        code = lint_cli.main(["--help"])
    assert code == 0 and "--namespace-labels" in out.getvalue()


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({"a.yaml": GOOD}, 0, id="all-valid"),
        pytest.param({"a.yaml": BAD}, 1, id="findings"),
        pytest.param({"a.yaml": "a: [1\n"}, 1, id="broken-yaml-is-a-finding"),
        pytest.param({"a.yaml": "apiVersion: v1\nkind: Pod\n"}, 0, id="only-other-kinds"),
        pytest.param({"a.yaml": GOOD, "missing.yaml": None}, 2, id="missing-file"),
        pytest.param({"a.yaml": BAD, "b.yaml": b"\xff\xfe\x00"}, 2, id="undecodable-bytes"),
    ],
)
def test_exit_codes(tmp_path: Path, files: dict[str, Any], expected: int) -> None:
    """0 all valid, 1 findings, 2 unreadable input (the readable files are still reported)."""
    paths = []
    for name, content in files.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            path.write_text(content)
        paths.append(str(path))
    code, out, err = _run(["--output", "json", *paths])
    assert code == expected
    assert json.loads(out)["summary"]["documents"] >= 1
    assert ("cannot read" in err) == (expected == 2)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param([], 0, id="warnings-do-not-fail"),
        pytest.param(["--fail-on-warning"], 1, id="fail-on-warning"),
        pytest.param(
            ["--fail-on-warning", "--disable", "quota-charge,config-names-parent"], 0,
            id="disabled-code",
        ),
    ],
)
def test_warnings_and_exit_code(tmp_path: Path, extra: list[str], expected: int) -> None:
    """Warnings change the exit code only with --fail-on-warning, and --disable drops them."""
    text = GOOD + "x-warnings: [[config-names-parent, kind]]\n"
    path = _write(tmp_path, "a.yaml", text)
    code, out, _ = _run(["--output", "json", *extra, path], validate=fakes.fake_validate)
    assert code == expected
    has = "warnings" in json.loads(out)["results"][0]
    assert has == ("--disable" not in extra)


@pytest.mark.parametrize("codes", ["no-such-code", "quota-charge,no-such-code"])
def test_unknown_disabled_code_is_refused(tmp_path: Path, codes: str) -> None:
    """`--disable` with a code draguard does not know exits 2, naming it and the valid ones."""
    path = _write(tmp_path, "a.yaml", GOOD)
    code, out, err = _run(["--disable", codes, path])
    assert code == 2 and out == ""
    assert "unknown warning code: no-such-code" in err
    assert "valid: config-names-parent, quota-charge," in err


def test_dispatched_by_the_draguard_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`draguard lint …` reaches this command through the console entry point."""
    path = _write(tmp_path, "a.yaml", GOOD)
    assert draguard_main.main(["lint", "--output", "json", path]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["valid"] == 1


# --- the corpus ----------------------------------------------------------------------


def _lint_corpus(*extra: str) -> dict[tuple[str, int], dict[str, Any]]:
    code, out, err = _run(["--output", "json", *extra, str(CASES)])
    assert code in (0, 1), err
    return {(Path(r["file"]).name, r["document"]): r for r in json.loads(out)["results"]}


def test_corpus_findings_and_positions() -> None:
    """On tests/cases the CLI reports each document's expected (type, field), placed inside it."""
    results = _lint_corpus()
    checked = 0
    for case in corpus.load_cases():
        if case.disputed or case.raw.keys() & {
            "kubernetes_version",
            "namespace_labels",
            "default_namespace",
        }:
            continue
        result = results[(case.file, case.index)]
        assert result["valid"] == case.valid, case.id
        got = sorted((e["type"], e["field"]) for e in result["errors"])
        assert got == sorted((f.type, f.field) for f in case.errors), case.id
        first, last = _document_lines(case.file, case.index)
        assert all(first <= e["line"] <= last for e in result["errors"]), case.id
        checked += 1
    assert checked >= 40


def _document_lines(file: str, index: int) -> tuple[int, int]:
    """1-based first and last line of a corpus document, by its `---` separators."""
    lines = (CASES / file).read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("---")]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    starts.append(len(lines))
    return starts[index] + 1, starts[index + 1]


def test_jobs_match_one_process_on_the_corpus(tmp_path: Path) -> None:
    """With --jobs 2, and by default on an input large enough to be spread over every
    core, the real rule set gives the same bytes as one process."""
    copies = -(-lint.AUTO_DOCUMENTS // _corpus_documents())
    for copy in range(copies):
        target = tmp_path / f"copy{copy}"
        target.mkdir()
        for path in CASES.glob("*.yaml"):
            (target / path.name).write_bytes(path.read_bytes())
    one = _run(["--output", "json", "--jobs", "1", str(tmp_path)])
    assert len(json.loads(one[1])["results"]) >= lint.AUTO_DOCUMENTS
    assert _run(["--output", "json", "--jobs", "2", str(tmp_path)]) == one
    assert _run(["--output", "json", str(tmp_path)]) == one
    assert _run(["--output", "text", str(tmp_path)]) == _run(
        ["--output", "text", "--jobs", "1", str(tmp_path)])


def _corpus_documents() -> int:
    out = _run(["--output", "json", "--jobs", "1", str(CASES)])[1]
    return len(json.loads(out)["results"])


def test_automatic_jobs_only_for_large_inputs() -> None:
    """A small input stays in one process (no pool to start); a large one uses every
    core the process may run on."""
    assert lint.auto_jobs(1) == lint.auto_jobs(lint.AUTO_DOCUMENTS - 1) == 1
    assert lint.auto_jobs(lint.AUTO_DOCUMENTS) == lint.usable_cores() >= 1


# --- never a traceback -----------------------------------------------------------------


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_give_an_exit_code_not_a_traceback(data: bytes) -> None:
    """Whatever a file holds, lint exits 0, 1 or 2 and prints parseable JSON."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "x.yaml")
        with open(path, "wb") as handle:
            handle.write(data)
        code, out, _ = _run(["--output", "json", path])
    assert code in (0, 1, 2)
    assert "summary" in json.loads(out)


_PIECES = [
    *"apiVersion:kd-[]{},\n &*!?#\"'~01",
    "apiVersion: resource.k8s.io/v1\n",
    "kind: ResourceClaim\n",
    "kind: List\n",
    "spec:\n",
    "  devices:\n",
    "    requests:\n",
    "    - name: a\n",
    "items:\n",
    "---\n",
]
_manifestish = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


@settings(max_examples=examples(60), deadline=None)
@given(text=_manifestish, output=st.sampled_from(["text", "json", "junit", "sarif"]))
def test_manifest_like_stdin_never_crashes(text: str, output: str) -> None:
    """Near-manifest text on stdin, in every output format, ends with an exit code."""
    code, out, _ = _run(["--output", output, "-"], stdin=text.encode())
    assert code in (0, 1, 2)
    assert out


# --- workloads against the claims of the same input ----------------------------------

WORKLOADS = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu-tpl}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - {name: big, deviceClassName: big.example.com}
        - {name: small, deviceClassName: small.example.com}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer%s}
spec:
  template:
    spec:
      resourceClaims:
      - name: g
        resourceClaimTemplateName: gpu-tpl
      containers:
      - name: main
        image: x
        resources:
          claims:
          - name: g
            request: gpu/big
---
apiVersion: v1
kind: Pod
metadata: {name: fine}
spec:
  resourceClaims: [{name: g, resourceClaimTemplateName: gpu-tpl}]
  containers: [{name: c, image: x, resources: {claims: [{name: g, request: gpu}]}}]
"""


def test_workload_naming_a_subrequest_is_warned(tmp_path: Path) -> None:
    """A Deployment whose container names a subrequest of a template in the input is warned, located."""
    path = _write(tmp_path, "w.yaml", WORKLOADS % "")
    code, out, _ = _run(["--output", "json", path])
    assert code == 0  # warnings alone do not fail
    data = json.loads(out)
    deployment = next(r for r in data["results"] if r["kind"] == "Deployment")
    assert (deployment["document"], deployment["valid"]) == (1, True)
    assert [(w["code"], w["field"], w["line"], w["column"]) for w in deployment["warnings"]] == [
        (
            "pod-names-subrequest",
            "spec.template.spec.containers[0].resources.claims[0].request",
            28,
            13,
        )
    ]
    assert data["summary"] == {"documents": 3, "valid": 1, "invalid": 0, "skipped": 2}


def test_workload_warning_can_be_silenced_on_the_object(tmp_path: Path) -> None:
    """The `draguard.io/ignore` annotation on a workload silences its codes."""
    ignore = ", annotations: {draguard.io/ignore: pod-names-subrequest}"
    path = _write(tmp_path, "w.yaml", WORKLOADS % ignore)
    _, out, _ = _run(["--output", "json", path])
    assert all(r["kind"] != "Deployment" for r in json.loads(out)["results"])


def test_a_workload_counts_as_skipped_alone_and_beside_its_claims(tmp_path: Path) -> None:
    """A Deployment is skipped in the summary whether or not its claims are in the input."""
    both = _write(tmp_path, "both.yaml", WORKLOADS % "")
    alone = _write(tmp_path, "alone.yaml", (WORKLOADS % "").split("---\n", 1)[1])
    with_claims = json.loads(_run(["-o", "json", both])[1])["summary"]
    without = json.loads(_run(["-o", "json", alone])[1])["summary"]
    assert with_claims["skipped"] - without["skipped"] == 0
    assert with_claims["valid"] == 1


def test_summary_says_one_document(tmp_path: Path) -> None:
    """The text summary of one document is in the singular."""
    _, out, _ = _run([_write(tmp_path, "one.yaml", GOOD)])
    assert out.splitlines()[-1] == "1 document: 1 valid, 0 invalid, 0 skipped"


def test_workloads_without_their_claims_are_skipped(tmp_path: Path) -> None:
    """A workload whose claims are not in the input is counted as skipped, not guessed at."""
    path = _write(tmp_path, "w.yaml", (WORKLOADS % "").split("---\n", 1)[1])
    code, out, _ = _run(["--output", "json", path])
    assert code == 0
    assert json.loads(out)["summary"] == {"documents": 2, "valid": 0, "invalid": 0, "skipped": 2}


def test_dead_worker_is_exit_2(tmp_path: Path) -> None:
    """A worker process that dies ends the run with exit 2 and a message, not a traceback."""
    parent = os.getpid()

    def dying(obj: Any, *, options: Options) -> Any:
        if os.getpid() != parent:  # in a worker process, never in pytest's own
            os._exit(3)
        return fakes.fake_validate(obj, options=options)

    path = _write(tmp_path, "many.yaml", "---\n".join([GOOD] * 200))
    code, _, err = _run(["--jobs", "2", path], validate=dying)
    assert code == 2 and "worker process died" in err


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_closed_stdout_is_not_a_traceback(tmp_path: Path) -> None:
    """When the reader of stdout goes away (`| head`), lint still ends with its exit code."""
    bad = _write(tmp_path, "bad.yaml", BAD)
    code = lint_cli.main([bad], stdout=_ClosedPipe(), stderr=io.StringIO())
    assert code == 1


def test_a_lone_surrogate_in_json_is_read_as_the_apiserver_reads_it(tmp_path: Path) -> None:
    """`"\\ud800"` decodes to U+FFFD in Go; it must not crash the annotation size rule."""
    text = (
        '{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "a",'
        ' "annotations": {"note": "\\ud800"}}, "spec": {"devices": {"requests": [{"name": "r",'
        ' "exactly": {"deviceClassName": "gpu.example.com"}}]}}}'
    )
    code, out, _ = _run(["--output", "json", _write(tmp_path, "claim.json", text)])
    assert code == 0
    assert json.loads(out)["results"][0]["valid"] is True
