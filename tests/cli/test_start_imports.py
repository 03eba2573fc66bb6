"""`draguard lint FILE` loads only what the input needs (issue 21: the start, < 150 ms).

Each case runs the dispatcher in a fresh interpreter and lists which of the heavy
modules it loaded: the CEL runtime (protobuf and the C++ checker) only for a file with
a selector; never the cluster client, the webhook's server, JSON Schema, ruamel,
PyYAML (plain block YAML), orjson (YAML input) or a process pool (one small file).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLAIM = (
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\n"
    "spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n"
    "        deviceClassName: gpu.example.com\n"
)
SELECTOR = (
    "        selectors:\n        - cel:\n"
    "            expression: device.driver == \"gpu.example.com\"\n"
)
CEL = ["cel_expr_python", "google.protobuf", "draguard.schema.cel"]
NEVER = ["kubernetes", "flask", "gunicorn", "gevent", "jsonschema", "ruamel", "yaml",
         "orjson", "multiprocessing", "concurrent.futures", "draguard.schema.cluster",
         "draguard.schema.policy", "importlib.metadata", "xml.etree"]


def loaded(path: Path) -> tuple[int, list[str]]:
    """The exit code and which of CEL + NEVER (or a submodule) `draguard lint PATH` loaded."""
    script = (
        "import sys\n"
        "from draguard.webhook.cli.main import main\n"
        f"code = main(['lint', {str(path)!r}])\n"
        f"heavy = {CEL + NEVER!r}\n"
        "names = sorted(h for h in heavy\n"
        "               if any(m == h or m.startswith(h + '.') for m in sys.modules))\n"
        "import json\n"  # after the run: it is not one of the modules asked about
        "print(json.dumps([code, names]))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    code, names = json.loads(run.stdout.splitlines()[-1])
    return code, names


@pytest.mark.parametrize(("selector", "expected"), [
    pytest.param(False, [], id="without-selectors"),
    pytest.param(True, sorted(CEL), id="with-a-selector"),
])
def test_lint_of_one_small_file_loads_only_what_it_needs(
    tmp_path: Path, selector: bool, expected: list[str]
) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM + (SELECTOR if selector else ""))
    assert loaded(path) == (0, expected)


def test_a_selector_error_is_still_caught(tmp_path: Path) -> None:
    """The CEL checker, loaded on demand, still judges the selector."""
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM + SELECTOR.replace("device.driver", "device.drivr"))
    run = subprocess.run([sys.executable, "-m", "draguard.webhook.cli.main", "lint", str(path)],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert "undefined field 'drivr'" in run.stdout
