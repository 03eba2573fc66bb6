"""`draguard fix`: rewrites config-names-parent in place, keeps comments, is idempotent."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pooled import by_jobs

from draguard.schema.cli.fix import main
from draguard.schema.validate import validate_object

TEMPLATE = """\
# GPU claim template, kept in git
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu   # shared by every cluster
  namespace: ml
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - name: big
          deviceClassName: big.example.com
        - name: small
          deviceClassName: small.example.com
          count: 2
      config:
      - requests: [gpu]  # applies to gpu
        opaque:
          driver: gpu.example.com
          parameters: {sharing: none}
---
apiVersion: v1
kind: ConfigMap   # untouched
metadata: {name: x}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    return path


def test_fix_rewrites_and_keeps_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The parent reference becomes the explicit list; comments and other documents stay."""
    path = write(tmp_path, TEMPLATE)
    assert main([str(path)]) == 0
    text = path.read_text()
    assert "requests: [gpu/big, gpu/small]" in text
    assert (
        "# applies to gpu" in text and "# shared by every cluster" in text and "# untouched" in text
    )
    # Issue 21: edited as text, every other byte stays (ruamel closed up `[gpu]  #`).
    assert text.replace("[gpu/big, gpu/small]", "[gpu]") == TEMPLATE
    assert "config[0].requests" in capsys.readouterr().out


def test_fix_is_idempotent_and_output_has_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second run changes nothing, and the result lints clean of config-names-parent."""
    path = write(tmp_path, TEMPLATE)
    main([str(path)])
    once = path.read_text()
    capsys.readouterr()
    assert main([str(path)]) == 0
    assert path.read_text() == once
    assert capsys.readouterr().out == ""
    doc = next(yaml.safe_load_all(once))
    verdict = validate_object(doc)
    assert verdict.valid
    assert "config-names-parent" not in {w.code for w in verdict.warnings}


def test_fix_refuses_over_32_references(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Spelling out more than 32 references is not done; exit 1 names the field."""
    requests = "\n".join(
        f"      - name: r{k}\n        firstAvailable:\n"
        + "".join(f"        - {{name: s{j}, deviceClassName: c.example.com}}\n" for j in range(8))
        for k in range(5)
    )
    refs = ", ".join(f"r{k}" for k in range(5))
    text = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ns}\n"
        f"spec:\n  devices:\n    requests:\n{requests}    config:\n    - requests: [{refs}]\n"
        "      opaque: {driver: a.example.com, parameters: {}}\n"
    )
    path = write(tmp_path, text)
    assert main([str(path)]) == 1
    assert path.read_text() == text
    assert "spec.devices.config[0].requests: not fixable" in capsys.readouterr().err


def test_dry_run_with_changes_pending_is_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--dry-run` names the change, writes nothing and exits 1, so that it can gate CI."""
    path = write(tmp_path, TEMPLATE)
    assert main(["--dry-run", str(path)]) == 1
    assert path.read_text() == TEMPLATE
    assert "config[0].requests" in capsys.readouterr().out
    main([str(path)])
    assert main(["--dry-run", str(path)]) == 0


def test_warnings_no_rewrite_fixes_leave_exit_0(tmp_path: Path) -> None:
    """A claim whose only warning is `quota-charge` has nothing for fix to do: exit 0."""
    text = TEMPLATE.replace("      config:\n      - requests: [gpu]  # applies to gpu\n"
                            "        opaque:\n          driver: gpu.example.com\n"
                            "          parameters: {sharing: none}\n", "")
    doc = next(yaml.safe_load_all(text))
    assert "quota-charge" in {w.code for w in validate_object(doc).warnings}
    path = write(tmp_path, text)
    assert main([str(path)]) == 0
    assert main(["--dry-run", str(path)]) == 0


@pytest.mark.parametrize("content", [b"\xff\xfe not utf8", b"a: [unclosed\n"])
def test_fix_unreadable_is_exit_2(tmp_path: Path, content: bytes) -> None:
    """Unreadable or unparsable files are named and left unchanged (exit 2)."""
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    assert main([str(path)]) == 2
    assert path.read_bytes() == content


def test_fix_missing_file_is_exit_2(tmp_path: Path) -> None:
    """A missing file is exit 2, not a traceback."""
    assert main([str(tmp_path / "nope.yaml")]) == 2


def test_jobs_give_the_bytes_of_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `--jobs 2` (a pool for a large input) what is said, the exit code and the files
    written are those of one process; a file the text path declines takes ruamel's way."""
    many = "".join(f"---\n# document {i}\n" + TEMPLATE.replace("name: gpu ", f"name: g{i} ")
                   for i in range(70))
    files = {"a.yaml": many, "b.yaml": "key: [unclosed\n",
             "c.yaml": TEMPLATE + "---\n# comments only\n---\n" + TEMPLATE, "d.yaml": many}

    def run(jobs: str, paths: list[str], folder: Path) -> str:
        dry = main(["--dry-run", "--jobs", jobs, *paths]), capsys.readouterr()
        wet = main(["--jobs", jobs, *paths]), capsys.readouterr()
        return repr((dry, wet, [(folder / name).read_text() for name in files])).replace(
            f"/{jobs}/", "/")

    runs = by_jobs(tmp_path, files, run)
    assert runs[0] == runs[1]
    assert "gpu/big" in (tmp_path / "2" / "d.yaml").read_text()


def test_a_dead_worker_leaves_every_file_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed half-way: nothing written, exit 2, named on stderr."""
    import os

    from draguard.schema.cli import fix

    parent, real = os.getpid(), fix._fix_chunk

    def dying(chunk: object) -> object:
        if os.getpid() != parent and getattr(chunk, "file", "").endswith("b.yaml"):
            os._exit(9)
        return real(chunk)  # type: ignore[arg-type]

    monkeypatch.setattr(fix, "_fix_chunk", dying)
    many = "---\n".join(TEMPLATE for _ in range(70))
    paths = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    for path in paths:
        path.write_text(many)
    assert main(["--jobs", "2", *map(str, paths)]) == 2
    assert "worker process died" in capsys.readouterr().err
    assert all(path.read_text() == many for path in paths)
