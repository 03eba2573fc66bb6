"""Hostile files through `draguard lint` and `draguard convert` (issue 6 §2).

The same classes as the webhook fuzz: arbitrary bytes, truncated documents, nesting
10,000 levels deep, 3 MiB strings, invalid UTF-8, numbers out of int64 range, wrong
types at every field, 10,000 requests, and YAML's own weapon, the alias bomb. Each
gets an exit code from the contract (0/1/2), a message naming the file or document,
and never a traceback; lint still checks the other documents of the file.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema.cli import convert as convert_cli
from draguard.schema.cli import lint as lint_cli

from .mutations import paths
from .test_webhook_fuzz import CLAIM, WRONG_VALUES, put_at

SLOW = pytest.mark.skipif(not os.environ.get("DRAGUARD_SLOW"),
                          reason="ruamel's pure-Python scanner takes 10-20 s here; "
                                 "set DRAGUARD_SLOW=1")
GOOD = yaml.safe_dump(CLAIM, sort_keys=False)
BOMB = ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"a{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 10)}]\n"
                  for i in range(9)))


def deep_flow(depth: int) -> str:
    return GOOD + "  extra: " + "[" * depth + "]" * depth + "\n"


def deep_block(depth: int) -> str:
    lines = [GOOD.rstrip("\n"), "  extra:"]
    lines += [" " * (4 + i) + "a:" for i in range(depth)]
    return "\n".join(lines) + " 1\n"


def deep_json(depth: int) -> str:
    return json.dumps(CLAIM)[:-1] + ', "extra": ' + '{"a":' * depth + "1" + "}" * depth + "}"


def many_requests(count: int) -> str:
    claim = json.loads(json.dumps(CLAIM))
    claim["spec"]["devices"]["requests"] = [
        {"name": f"r{i}", "exactly": {"deviceClassName": "gpu.example.com"}} for i in range(count)]
    claim["spec"]["devices"].pop("constraints")
    claim["spec"]["devices"].pop("config")
    return json.dumps(claim)


# name, file content, lint exit codes allowed, convert exit codes allowed
CLASSES: list[tuple[str, Callable[[], str | bytes], set[int], set[int]]] = [
    ("truncated-yaml", lambda: GOOD[: len(GOOD) // 2], {1}, {1, 2}),
    ("truncated-json", lambda: json.dumps(CLAIM)[:200], {1}, {2}),
    ("invalid-utf8", lambda: GOOD.encode().replace(b"full", b"fu\xff\xfell"), {2}, {2}),
    ("binary", lambda: bytes(range(256)) * 8, {2}, {2}),
    ("nesting-1000-flow", lambda: deep_flow(1000), {1}, {0, 1, 2}),
    ("nesting-1000-block", lambda: deep_block(1000), {1}, {0, 1, 2}),
    ("nesting-10000-json", lambda: deep_json(10_000), {1}, {2}),
    ("nesting-10000-block", lambda: deep_block(10_000), {1}, {1}),  # read as lint reads it
    ("int-5000-digits", lambda: GOOD.replace("count: 2", "count: " + "9" * 5000), {1}, {2}),
    ("int64-overflow", lambda: GOOD.replace("count: 2", "count: 9223372036854775808"), {1}, {1}),
    ("int64-underflow", lambda: GOOD.replace("count: 2", "count: -9223372036854775809"), {1}, {1}),
    ("float-inf", lambda: GOOD.replace("count: 2", "count: .inf"), {1}, {1}),
    ("alias-bomb", lambda: BOMB + "---\n" + GOOD, {1}, {2}),
    ("1000-requests", lambda: many_requests(1000), {1}, {0, 1}),
    ("not-a-mapping", lambda: "- 1\n- 2\n---\n'just a string'\n---\n" + GOOD, {0, 1}, {0}),
]
SLOW_CLASSES: list[tuple[str, Callable[[], str | bytes], set[int], set[int]]] = [
    ("nesting-10000-flow", lambda: deep_flow(10_000), {1}, {2}),
    ("3MiB-string", lambda: GOOD.replace("name: full", "name: " + "x" * (3 << 20)), {1}, {0, 1}),
    ("10000-requests", lambda: many_requests(10_000), {1}, {0, 1}),
]


def write(folder: Path, name: str, content: str | bytes) -> Path:
    suffix = ".json" if name.endswith("json") or name.endswith("requests") else ".yaml"
    path = folder / f"{name}{suffix}"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def run_lint(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = lint_cli.main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_convert(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = convert_cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def params(classes: list[tuple[str, Callable[[], str | bytes], set[int], set[int]]],
           marks: tuple[pytest.MarkDecorator, ...] = ()) -> list[object]:
    return [pytest.param(name, make, lint, convert, id=name, marks=marks)
            for name, make, lint, convert in classes]


FOR_LINT = params(CLASSES + SLOW_CLASSES)  # lint's C parser takes about 1 s on the slow ones
FOR_CONVERT = params(CLASSES) + params(SLOW_CLASSES, (SLOW,))


@pytest.mark.parametrize(("name", "make", "lint_codes", "convert_codes"), FOR_LINT)
def test_lint_answers_hostile_files(tmp_path: Path, name: str, make: Callable[[], str | bytes],
                                    lint_codes: set[int], convert_codes: set[int]) -> None:
    """lint: the expected exit code, a JSON report, an error naming each bad document."""
    path = write(tmp_path, name, make())
    code, out, err = run_lint(["--output", "json", str(path)])
    assert code in lint_codes, (code, err[:300])
    report = json.loads(out)
    if code == 2:
        assert str(path) in err and "Traceback" not in err
    else:
        for result in report["results"]:
            assert result["valid"] or result["errors"], result
    assert "Traceback" not in out + err


@pytest.mark.parametrize(("name", "make", "lint_codes", "convert_codes"), FOR_CONVERT)
def test_convert_answers_hostile_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       name: str, make: Callable[[], str | bytes],
                                       lint_codes: set[int], convert_codes: set[int]) -> None:
    """convert: the expected exit code, the file or document named on stderr, no traceback."""
    path = write(tmp_path, name, make())
    code, out, err = run_convert(["--to", "v1beta1", str(path)], capsys)
    assert code in convert_codes, (code, err[:300])
    if code:
        assert str(path) in err
    assert "Traceback" not in out + err


def test_lint_checks_the_other_documents_of_a_hostile_file(tmp_path: Path) -> None:
    """An alias bomb in document 0 is one finding; the valid claim after it is still linted."""
    path = write(tmp_path, "bomb", BOMB + "---\n" + GOOD)
    code, out, _ = run_lint(["--output", "json", str(path)])
    results = json.loads(out)["results"]
    assert code == 1
    assert [(r["document"], r["valid"]) for r in results] == [(0, False), (1, True)]
    assert "aliasing" in results[0]["errors"][0]["message"]


WRONG_TYPES = [(field, value) for field in paths(CLAIM) for value in WRONG_VALUES]


def test_wrong_types_at_every_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every field given every wrong type, one document each: lint reports each, convert survives."""
    docs = [put_at(CLAIM, field, value) for field, value in WRONG_TYPES]
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    code, out, err = run_lint(["--output", "json", str(path)])
    assert code == 1 and "Traceback" not in err
    results = json.loads(out)["results"]
    linted = {r["document"] for r in results}
    assert all(r["valid"] or r["errors"] for r in results)
    assert len(linted) + json.loads(out)["summary"]["skipped"] == len(docs)
    code, out, err = run_convert(["--to", "v1beta1", str(path)], capsys)
    assert code in (0, 1) and "Traceback" not in err


@settings(max_examples=examples(30), deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_convert_any_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           data: bytes) -> None:
    """Whatever a file holds, convert exits 0, 1 or 2 without a traceback."""
    path = tmp_path / "any.yaml"
    path.write_bytes(data)
    code, _out, err = run_convert(["--to", "parallel", str(path)], capsys)
    assert code in (0, 1, 2) and "Traceback" not in err


# Every class goes through lint and convert in-process above (`main(argv)`, the same
# code); the real process adds only the `draguard` entry and its exit status, so it
# gets the classes that decide that status (unreadable files: 2) and one parse error.
IN_A_PROCESS = ("invalid-utf8", "binary", "truncated-yaml", "not-a-mapping")


def test_one_subprocess_run_over_unreadable_files(tmp_path: Path) -> None:
    """The installed command, as a user runs it: exit 2 (unreadable files), no traceback."""
    for name, make, _, _ in CLASSES:
        if name in IN_A_PROCESS:
            write(tmp_path, name, make())
    for command in (["lint", "--output", "text"], ["convert", "--to", "v1"]):
        done = subprocess.run([sys.executable, "-m", "draguard.webhook.cli.main", *command,
                               str(tmp_path)], capture_output=True, timeout=120, check=False)
        assert done.returncode == 2, done.stderr[-500:]
        assert b"Traceback" not in done.stdout + done.stderr
        assert b"invalid-utf8" in done.stderr
