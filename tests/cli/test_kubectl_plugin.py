"""`kubectl draguard …`: the real kubectl finds the plugin on PATH and lints its own output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KUBECTL = shutil.which("kubectl")

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def kubectl(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run the real kubectl with this environment's scripts first on PATH, no cluster."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "KUBECONFIG": os.devnull}
    assert KUBECTL is not None
    return subprocess.run([KUBECTL, *args], input=stdin, env=env, capture_output=True,
                          text=True, timeout=120)


def test_kubectl_lists_the_plugin() -> None:
    """`kubectl plugin list` finds `kubectl-draguard` in this environment's scripts."""
    run = kubectl("plugin", "list")
    assert str(Path(sys.executable).parent / "kubectl-draguard") in run.stdout


def test_kubectl_draguard_lints_kubectl_get_output() -> None:
    """`kubectl get resourceclaims -A -o yaml | kubectl draguard lint -` checks every item."""
    listing = (EXAMPLES / "kubectl-get-resourceclaims.yaml").read_text()
    run = kubectl("draguard", "lint", "-o", "json", "-", stdin=listing)
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)["results"]
    assert [(r["item"], r["namespace"], r["name"], r["valid"]) for r in results] == [
        (0, "ml", "gpu", True),
        (1, "net", "nic", True),
    ]


def test_kubectl_draguard_places_a_finding_in_the_list() -> None:
    """A broken item of the List fails the run (exit 1) with the line in the listing."""
    listing = (EXAMPLES / "kubectl-get-resourceclaims.yaml").read_text()
    broken = listing.replace("name: a100\n", "name: h100\n", 1)
    run = kubectl("draguard", "lint", "-", stdin=broken)
    assert run.returncode == 1
    # The duplicate is placed at its list item: the second alternative of the first claim.
    items = [n for n, text in enumerate(broken.splitlines(), 1)
             if text == "        - allocationMode: ExactCount"]
    # 1.37's declarative Duplicate names the whole item (issue 17).
    assert any(line.startswith(f"<stdin>:{items[1]}:11: spec.devices.requests[0].firstAvailable[1]: "
                               'Duplicate value: {"name":"h100"')
               for line in run.stdout.splitlines())


def test_kubectl_draguard_version() -> None:
    """`kubectl draguard --version` reaches the same command."""
    run = kubectl("draguard", "--version")
    assert run.returncode == 0 and run.stdout.startswith("draguard ")


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_kubectl_printed_objects_lint_as_the_files(output: str) -> None:
    """Objects as kubectl itself prints them (offline: `annotate --local -o …`) lint alike."""
    files = ["valid-gpu-claim.yaml", "mistake-duplicate-alternative.yaml"]
    args = [arg for name in files for arg in ("-f", str(EXAMPLES / "claims" / name))]
    printed = kubectl("annotate", "--local", *args, "-o", output, "checked-by=draguard")
    assert printed.returncode == 0, printed.stderr
    run = kubectl("draguard", "lint", "-o", "json", "-", stdin=printed.stdout)
    assert run.returncode == 1
    results = json.loads(run.stdout)["results"]
    assert [(r["name"], r["valid"]) for r in results] == [("gpu", True), ("gpu", False)]
    assert results[1]["errors"][0]["type"] == "Duplicate"
