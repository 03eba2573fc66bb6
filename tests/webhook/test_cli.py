"""`draguard serve`: exit codes, certificates, the banner, and the no-argument run command."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from draguard.webhook.cli.serve import EXAMPLE_REVIEW, main, prepare_certificates, print_banner
from draguard.webhook.config import Config

from .conftest import free_port


@pytest.mark.parametrize(("argv", "code"), [
    pytest.param(["--help"], 0, id="help"),
    pytest.param(["--bogus"], 2, id="unknown-flag"),
    pytest.param(["--cert", "only.pem"], 2, id="cert-without-key"),
    pytest.param(["--failure-mode", "sideways"], 2, id="bad-choice"),
])
def test_exit_codes(argv: list[str], code: int, capsys: pytest.CaptureFixture[str]) -> None:
    """Usage errors exit 2 and --help exits 0, without starting a server."""
    assert main(argv) == code


def test_missing_certificate_file_exits_1(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A --cert/--key pair that cannot be loaded stops before gunicorn, naming the file."""
    missing = tmp_path / "nope.crt"
    assert main(["--cert", str(missing), "--key", str(tmp_path / "nope.key")]) == 1
    assert str(missing) in capsys.readouterr().err


def test_prepare_creates_then_reuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --cert the state folder gets CA, serving pair and example review, reused later."""
    config = Config(state_dir=tmp_path / "state")
    bundle = prepare_certificates(config)
    assert bundle is not None
    assert base64.b64decode(bundle) == (tmp_path / "state" / "ca.crt").read_bytes()
    first = (tmp_path / "state" / "tls.crt").read_bytes()
    assert prepare_certificates(config) == bundle
    assert (tmp_path / "state" / "tls.crt").read_bytes() == first
    review = json.loads((tmp_path / "state" / "example-review.json").read_text())
    assert review == EXAMPLE_REVIEW
    assert "reused" in capsys.readouterr().err


def test_banner_names_the_certs_commands_and_curl(capsys: pytest.CaptureFixture[str]) -> None:
    """The banner says how to get the caBundle and check the certificates, then a curl line."""
    print_banner(Config(port=9443, state_dir=Path("st")), self_made=True)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "caBundle: draguard certs bundle --dir st"
    assert out[1] == ("check:    draguard certs check --dir st --service draguard "
                      "--namespace draguard-system")
    curl = shlex.split(out[2].removeprefix("try: "))
    assert curl[0] == "curl"
    assert "draguard.draguard-system.svc:9443:127.0.0.1" in curl
    assert curl[-1] == "https://draguard.draguard-system.svc:9443/validate"


def test_banner_prints_no_bundle_for_given_certificates(
        capsys: pytest.CaptureFixture[str]) -> None:
    """With --cert/--key there is no self-made CA to print or check: only the curl line."""
    print_banner(Config(cert=Path("c.pem"), key=Path("k.pem")), self_made=False)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("try: curl ")


def test_synopsis_names_every_flag() -> None:
    """The synopsis in the module's help text names every flag `draguard serve` accepts."""
    from draguard.webhook.cli import serve
    from draguard.webhook.config import build_parser

    flags = set(re.findall(r"--[a-z][a-z-]+", build_parser().format_help())) - {"--help"}
    assert serve.__doc__ is not None
    assert {flag for flag in flags if flag not in serve.__doc__} == set()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_no_argument_run_command_works(tmp_path: Path) -> None:
    """`draguard serve` in an empty folder makes ./draguard-state and its curl line gets an answer."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAGUARD_")}
    env["DRAGUARD_PORT"] = str(port)  # the only deviation: a free port instead of 8443
    env["DRAGUARD_HOST"] = "127.0.0.1"
    log = tmp_path / "out.txt"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "draguard.webhook.cli.main", "serve"],
                                   cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        answer = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and answer is None:
            lines = [line for line in log.read_text().splitlines() if line.startswith("try: ")]
            if lines:
                run = subprocess.run([*shlex.split(lines[0].removeprefix("try: ")), "-sS"],
                                     cwd=tmp_path, capture_output=True, text=True)
                if run.returncode == 0:
                    answer = json.loads(run.stdout)
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
    assert (tmp_path / "draguard-state" / "ca.crt").exists()
    assert answer is not None, log.read_text()
    check = [line for line in log.read_text().splitlines() if line.startswith("check: ")]
    checked = subprocess.run([sys.executable, "-m", "draguard.webhook.cli.main",
                              *shlex.split(check[0].removeprefix("check: "))[1:]],
                             cwd=tmp_path, env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    plain = subprocess.run([sys.executable, "-m", "draguard.webhook.cli.main", "certs", "check"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stdout + plain.stderr  # the same default folder
    assert answer["response"]["uid"] == EXAMPLE_REVIEW["request"]["uid"]
    assert answer["response"]["allowed"] is True
