"""The pre-commit hooks, run by the real `pre-commit` against a throwaway repository.

pre-commit clones this repository at its current commit (so the hooks file tested is the
committed one), builds the hook's virtualenv, pip-installs draguard from the clone, and runs
the hooks on the files of a new repository: a claim with a mistake and one with a fixable
warning. What a user's machine would download is already installed here, so pip is shown
the test environment's packages (PYTHONPATH, no index): it still resolves draguard's
declared dependencies against them and builds draguard from the clone, but installs
draguard alone instead of unpacking some thirty wheels, offline.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "claims"
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"


def _head() -> str | None:
    run = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                         text=True)
    return run.stdout.strip() if run.returncode == 0 else None


pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(not PRE_COMMIT.is_file(), reason="pre-commit is not installed"),
]


# What the hook's own virtualenv brings (its installer) or must build itself (draguard).
_OWN = ("draguard", "_distutils_hack", "pip", "setuptools", "pkg_resources", "__pycache__")


def _dependencies(folder: Path) -> Path:
    """A folder linking every package installed for the tests except draguard and pip's own."""
    folder.mkdir()
    for installed in Path(site.getsitepackages()[0]).iterdir():
        own = installed.name.startswith("__editable__") or installed.suffix == ".pth"
        if not own and re.split(r"[-.]", installed.name)[0] not in _OWN:
            (folder / installed.name).symlink_to(installed)
    return folder


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Run both hooks once on a repository with a broken and a fixable claim."""
    head = _head()
    if head is None:
        pytest.skip("this checkout is not a git repository")
    repo = tmp_path_factory.mktemp("hooked")
    shutil.copy(EXAMPLES / "mistake-duplicate-alternative.yaml", repo / "bad.yaml")
    shutil.copy(EXAMPLES / "warning-config-names-parent.yaml", repo / "fixme.yaml")
    shutil.copy(EXAMPLES / "valid-template.yaml", repo / "good.yaml")
    config = {"repos": [{"repo": str(ROOT), "rev": head,
                         "hooks": [{"id": "draguard-lint"}, {"id": "draguard-fix"}]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    deps = _dependencies(tmp_path_factory.mktemp("site") / "packages")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home")),
           # pip reads PIP_NO_BUILD_ISOLATION=0 as --no-build-isolation: draguard is built
           # with the setuptools virtualenv seeds rather than one installed for the build.
           "PYTHONPATH": str(deps), "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for argv in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(argv, cwd=repo, env=env, check=True)
    run = subprocess.run([str(PRE_COMMIT), "run", "--all-files", "--color", "never"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 1, run.stdout + run.stderr
    return repo, run.stdout


def test_lint_hook_fails_naming_the_mistake(outcome: tuple[Path, str]) -> None:
    """draguard-lint fails the commit and prints the finding with its file and line."""
    _, out = outcome
    lint = out.split("draguard fix...")[0]
    assert "draguard lint" in lint and "Failed" in lint
    # 1.37's declarative Duplicate names the whole item (issue 17).
    assert 'bad.yaml:14:9: spec.devices.requests[0].firstAvailable[1]: Duplicate value: {"name":"big"' in lint


def test_fix_hook_rewrites_the_file(outcome: tuple[Path, str]) -> None:
    """draguard-fix rewrites the config reference in place, which pre-commit reports."""
    repo, out = outcome
    fix = out.split("draguard fix...")[1]
    assert "files were modified by this hook" in fix
    assert "requests: [gpu/h100, gpu/a100]" in (repo / "fixme.yaml").read_text()
    assert (repo / "good.yaml").read_text() == (EXAMPLES / "valid-template.yaml").read_text()
