"""`draguard certs` in-process through `main(argv)`: outputs, exit codes, named files."""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from draguard.certs.cli import main
from draguard.certs.cluster import ClusterApi
from draguard.certs.files import StatePaths, ca_bundle_b64, load_pair
from draguard.webhook.cli.main import main as draguard_main

DAY = dt.timedelta(days=1)


def run(argv: list[str], now: dt.datetime | None = None) -> tuple[int, str, str]:
    """Run `draguard certs ARGV`; the exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, now=now, stdout=out, stderr=err, connect=_no_cluster)
    return code, out.getvalue(), err.getvalue()


def _no_cluster(_: argparse.Namespace) -> ClusterApi:
    raise AssertionError("this command must not talk to a cluster")


def test_init_creates_then_reuses(tmp_path: Path) -> None:
    """The first init makes the four files; the second finds them good and keeps them."""
    folder = tmp_path / "certs"
    code, out, _ = run(["init", "--dir", str(folder)])
    assert code == 0 and "created a new CA" in out
    files = {name: (folder / name).read_bytes() for name in ("ca.crt", "ca.key", "tls.crt")}
    code, out, _ = run(["init", "--dir", str(folder)])
    assert code == 0 and "reused" in out
    assert {name: (folder / name).read_bytes() for name in files} == files


def test_init_force_makes_a_new_ca(state: StatePaths, now: dt.datetime) -> None:
    """`init --force` replaces even good files, CA included."""
    before = state.ca_cert.read_bytes()
    code, out, _ = run(["init", "--dir", str(state.dir), "--force"], now)
    assert code == 0 and "created a new CA" in out
    assert state.ca_cert.read_bytes() != before


def test_init_honours_key_type_and_names(tmp_path: Path) -> None:
    """--key-type rsa, --service, --namespace and --extra-san reach the certificate."""
    folder = tmp_path / "c"
    argv = [
        "init",
        "--dir",
        str(folder),
        "--key-type",
        "rsa",
        "--service",
        "hook",
        "--namespace",
        "team-a",
        "--extra-san",
        "127.0.0.1",
    ]
    assert run(argv)[0] == 0
    leaf = load_pair(folder / "tls.crt", folder / "tls.key")
    assert isinstance(leaf.cert.public_key(), rsa.RSAPublicKey)
    assert leaf.sans == (
        "hook",
        "hook.team-a",
        "hook.team-a.svc",
        "hook.team-a.svc.cluster.local",
        "127.0.0.1",
    )


def test_leaf_days_sets_the_validity(tmp_path: Path, now: dt.datetime) -> None:
    """--leaf-days decides when the serving certificate ends."""
    folder = tmp_path / "c"
    assert run(["init", "--dir", str(folder), "--leaf-days", "30"], now)[0] == 0
    assert load_pair(folder / "tls.crt", folder / "tls.key").not_after == now + 30 * DAY


@pytest.mark.parametrize(
    ("later", "code", "said"),
    [
        pytest.param(dt.timedelta(0), 0, "  ok", id="fresh"),
        pytest.param(250 * DAY, 1, "problem: tls.crt expires", id="renewal-due"),
        pytest.param(400 * DAY, 1, "does not verify", id="expired"),
    ],
)
def test_check_exit_codes(
    state: StatePaths, now: dt.datetime, later: dt.timedelta, code: int, said: str
) -> None:
    """check exits 0 for a good folder and 1 when renewal is due or the chain fails."""
    result, out, _ = run(["check", "--dir", str(state.dir)], now + later)
    assert result == code
    assert said in out


def test_check_json(state: StatePaths, now: dt.datetime) -> None:
    """check --output json prints the report as one JSON object."""
    code, out, _ = run(
        ["check", "--dir", str(state.dir), "--output", "json", "--service", "other"], now
    )
    report = json.loads(out)
    assert code == 1
    assert report["ok"] is False
    assert report["leaf"]["missingSans"][0] == "other"
    assert report["leaf"]["notAfter"] == (now + 365 * DAY).isoformat()


@pytest.mark.parametrize(
    ("source", "target", "field"),
    [
        pytest.param("ca.key", "tls.key", "leaf", id="serving-key"),
        pytest.param("tls.key", "ca.key", "ca", id="ca-key"),
    ],
)
def test_check_reports_a_mismatched_key(
    state: StatePaths, now: dt.datetime, source: str, target: str, field: str
) -> None:
    """A key that is not its certificate's own is a problem in the JSON report, exit 1."""
    shutil.copy(state.dir / source, state.dir / target)
    code, out, err = run(["check", "--dir", str(state.dir), "-o", "json"], now)
    report = json.loads(out)
    assert (code, err) == (1, "")
    assert report[field]["keyMatches"] is False
    assert f"{target} does not match" in report["problems"][0]


def test_check_wrong_service_is_a_name_problem_only(state: StatePaths, now: dt.datetime) -> None:
    """A wrong --service reports the missing names, not a broken chain, and no Python repr."""
    code, out, _ = run(["check", "--dir", str(state.dir), "--service", "other"], now)
    assert code == 1
    assert "chain    verifies" in out
    assert "lacks the names other" in out
    assert "<" not in out and "1 problem(s)" in out


def test_check_chain_message_has_no_repr(state: StatePaths, now: dt.datetime) -> None:
    """An expired chain is named in words, without the verifier's Python object repr."""
    code, out, _ = run(["check", "--dir", str(state.dir)], now + 400 * DAY)
    assert code == 1
    assert "does not verify" in out and "Certificate(" not in out


def test_serve_and_certs_share_the_default_folder() -> None:
    """`draguard serve` and `draguard certs` default to the same state folder."""
    from draguard.certs.cli import DEFAULT_DIR
    from draguard.webhook.config import DEFAULT_STATE_DIR

    assert Path(DEFAULT_DIR) == Path(DEFAULT_STATE_DIR)


@pytest.mark.parametrize(
    ("argv", "later", "renewed", "said"),
    [
        pytest.param([], dt.timedelta(0), False, "not renewed", id="not-due"),
        pytest.param([], 250 * DAY, True, "less than a third", id="due"),
        pytest.param(["--force"], dt.timedelta(0), True, "(forced)", id="forced"),
        pytest.param(
            ["--service", "other"], dt.timedelta(0), True, "lacks the names", id="new-service"
        ),
    ],
)
def test_renew_only_when_due(
    state: StatePaths,
    now: dt.datetime,
    argv: list[str],
    later: dt.timedelta,
    renewed: bool,
    said: str,
) -> None:
    """renew reissues the leaf when due, for new names, or when forced, and keeps the CA."""
    ca_before, leaf_before = state.ca_cert.read_bytes(), state.tls_cert.read_bytes()
    code, out, _ = run(["renew", "--dir", str(state.dir), *argv], now + later)
    assert code == 0
    assert said in out
    assert state.ca_cert.read_bytes() == ca_before
    assert (state.tls_cert.read_bytes() != leaf_before) is renewed


def test_renew_force_repairs_a_broken_leaf(state: StatePaths, now: dt.datetime) -> None:
    """renew --force replaces an unreadable serving pair using the good CA."""
    state.tls_key.write_bytes(b"junk")
    assert run(["renew", "--dir", str(state.dir), "--force"], now)[0] == 0
    assert run(["check", "--dir", str(state.dir)], now)[0] == 0


def test_bundle_prints_one_base64_line(state: StatePaths) -> None:
    """bundle prints the CA certificate's PEM as base64 on exactly one line."""
    code, out, _ = run(["bundle", "--dir", str(state.dir)])
    assert code == 0
    assert out == ca_bundle_b64(state.dir) + "\n"
    assert base64.b64decode(out) == state.ca_cert.read_bytes()


def _write(name: str, data: bytes) -> Callable[[StatePaths], None]:
    def mutate(paths: StatePaths) -> None:
        (paths.dir / name).write_bytes(data)

    return mutate


def _copy(source: str, target: str) -> Callable[[StatePaths], None]:
    def mutate(paths: StatePaths) -> None:
        shutil.copy(paths.dir / source, paths.dir / target)

    return mutate


def _delete(name: str) -> Callable[[StatePaths], None]:
    def mutate(paths: StatePaths) -> None:
        (paths.dir / name).unlink()

    return mutate


@pytest.mark.parametrize(
    ("command", "mutate", "named", "reason"),
    [
        pytest.param(
            "check",
            _write("tls.crt", b"junk"),
            "tls.crt",
            "no PEM certificate",
            id="check-garbage-cert",
        ),
        pytest.param(
            "bundle", _write("ca.crt", b""), "ca.crt", "no PEM certificate", id="bundle-empty-ca"
        ),
        pytest.param("bundle", _delete("ca.crt"), "ca.crt", "no such file", id="bundle-no-ca"),
        pytest.param(
            "renew",
            _write("ca.key", b"junk"),
            "ca.key",
            "no PEM private key",
            id="renew-garbage-ca-key",
        ),
        pytest.param(
            "renew",
            _write("tls.key", b"junk"),
            "tls.key",
            "no PEM private key",
            id="renew-garbage-leaf-key",
        ),
        pytest.param(
            "renew",
            _copy("ca.key", "tls.key"),
            "tls.key",
            "does not match",
            id="renew-mismatched-key",
        ),
        pytest.param(
            "init",
            _write("tls.crt", b"junk"),
            "tls.crt",
            "no PEM certificate",
            id="init-garbage-cert",
        ),
        pytest.param("init", _delete("ca.key"), "ca.key", "no such file", id="init-half-ca"),
    ],
)
def test_bad_files_exit_2_naming_the_file(
    state: StatePaths,
    now: dt.datetime,
    command: str,
    mutate: Callable[[StatePaths], None],
    named: str,
    reason: str,
) -> None:
    """A missing, garbage or mismatched file ends with exit 2 and one message naming it."""
    mutate(state)
    code, _, err = run([command, "--dir", str(state.dir)], now)
    assert code == 2
    first = err.splitlines()[0]
    assert first.startswith(f"draguard certs: error: {state.dir / named}: ")
    assert reason in first
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="no-command"),
        pytest.param(["sign"], id="unknown-command"),
        pytest.param(["init", "--key-type", "dsa"], id="bad-key-type"),
        pytest.param(["init", "--leaf-days", "0"], id="zero-days"),
        pytest.param(["init", "--ca-days", "ten"], id="not-a-number"),
        pytest.param(["init", "--service", "Bad_Name"], id="bad-service"),
        pytest.param(["check", "--namespace", "-x"], id="bad-namespace"),
        pytest.param(["publish", "--secret", "s"], id="publish-without-webhook-config"),
        pytest.param(
            [
                "publish",
                "--secret",
                "s",
                "--webhook-config",
                "w",
                "--in-cluster",
                "--kubeconfig",
                "k",
            ],
            id="two-cluster-sources",
        ),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Options that make no sense exit 2 before any file is written."""
    assert run([*argv[:1], *(["--dir", str(tmp_path / "d")] if argv else []), *argv[1:]])[0] == 2
    assert "usage:" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """--help prints the subcommands and exits 0."""
    assert run(["--help"])[0] == 0
    assert "publish" in capsys.readouterr().out


def test_state_dir_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --dir the folder is $DRAGUARD_STATE_DIR, else ./draguard-state."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DRAGUARD_STATE_DIR", raising=False)
    assert run(["init"])[0] == 0
    assert (tmp_path / "draguard-state" / "tls.crt").is_file()
    monkeypatch.setenv("DRAGUARD_STATE_DIR", str(tmp_path / "from-env"))
    assert run(["init"])[0] == 0
    assert (tmp_path / "from-env" / "tls.crt").is_file()


def test_reachable_through_the_draguard_command(
    state: StatePaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """`draguard certs bundle` dispatches to this CLI."""
    assert draguard_main(["certs", "bundle", "--dir", str(state.dir)]) == 0
    assert capsys.readouterr().out.strip() == ca_bundle_b64(state.dir)
