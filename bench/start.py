"""Benchmark: the start of `draguard lint FILE` on one small file (issue 21: < 150 ms).

    .venv/bin/python bench/start.py [--runs 15] [--source] [--instructions] [--tree DIR] [--check]

What a user feels at a pre-commit hook: the whole process of the console script
(`draguard lint FILE`, interpreter and site included) on one small claim with a CEL
selector (bench/lint.py's `warned_claim(1)`: two warnings, the CEL checker loaded),
and on the same claim without its selector (the CEL runtime not loaded). Figures: the
minimum over `--runs` processes of wall time and of CPU time (user + system, from
`os.wait4`); on a shared machine read the CPU figure.

Installed as users install it: `pip install .` (README, pre-commit) is not editable, and
setuptools' editable finder, which imports pathlib at every start, is a developer's
cost. So the bench installs this tree (`pip install --no-deps --target`, about 15 s)
into a temporary folder and runs it from a bare virtual environment whose `.pth` puts
that folder and this environment's site-packages (the dependencies) on the path. The
editable install (`.venv/bin/draguard`) is measured too, for the record. `--tree DIR`
installs another checkout instead (e.g. `git worktree add /tmp/before main`), for a
before/after on the same machine in the same hour.

`--instructions` also counts the instructions of one installed start of each file under
valgrind (`callgrind`; about a minute each): a figure the machine's load does not move.

Bytecode: a user's `pip install` byte-compiles the package, but this machine sets
PYTHONDONTWRITEBYTECODE=1, so an editable install here never keeps `.pyc` files and
every start compiles draguard's sources. The children therefore run with
PYTHONDONTWRITEBYTECODE removed and PYTHONPYCACHEPREFIX set to a temporary folder, warmed
by one run first: every module starts from compiled bytecode, as installed, and the
source tree gets no `__pycache__`. `--source` measures the editable install the other
way too: the same folder without draguard's own bytecode and with writing off, so that
only draguard's modules compile from source on each start, as on this machine by
default.

Exit status with `--check`: 1 when the CEL file's start (CPU, with bytecode) is not under
150 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]  # also the source tree the editable install maps
if str(ROOT) not in sys.path:  # `bench/start.py` as a script: make `bench.*` importable
    sys.path.insert(0, str(ROOT))

from bench.lint import START_TARGET, warned_claim  # noqa: E402


@dataclass(frozen=True)
class Start:
    wall: float
    cpu: float


EDITABLE = (sys.executable, os.path.join(os.path.dirname(sys.executable), "draguard"))


def install(folder: str, tree: Path) -> tuple[str, str]:
    """A tree installed as a user installs it: the interpreter and console script."""
    target = os.path.join(folder, "installed")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    target, str(tree)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    venv = os.path.join(folder, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    site = sysconfig.get_path("purelib", vars={"base": venv, "platbase": venv})
    with open(os.path.join(site, "draguard-bench.pth"), "w", encoding="utf-8") as handle:
        handle.write(f"{target}\n{sysconfig.get_path('purelib')}\n")
    return os.path.join(venv, "bin", "python"), os.path.join(target, "bin", "draguard")


def child_env(prefix: str, *, write: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = prefix
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_once(program: tuple[str, str], path: str, env: dict[str, str]) -> Start:
    start = time.perf_counter()
    process = subprocess.Popen([*program, "lint", path], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    assert process.stderr is not None
    err = process.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"draguard lint {path} failed: {err}")
    return Start(wall, usage.ru_utime + usage.ru_stime)


def best(program: tuple[str, str], path: str, env: dict[str, str], runs: int) -> Start:
    starts = [run_once(program, path, env) for _ in range(runs)]
    return Start(min(s.wall for s in starts), min(s.cpu for s in starts))


def write_files(folder: str) -> tuple[str, str]:
    """The CEL file (bench/lint.py's small file) and the same claim without selectors."""
    claim = warned_claim(1)
    cel = os.path.join(folder, "small.yaml")
    with open(cel, "w", encoding="utf-8") as handle:
        yaml.safe_dump(claim, handle, sort_keys=False)
    for request in claim["spec"]["devices"]["requests"]:
        for alternative in request.get("firstAvailable", ()):
            alternative.pop("selectors", None)
    plain = os.path.join(folder, "plain.yaml")
    with open(plain, "w", encoding="utf-8") as handle:
        yaml.safe_dump(claim, handle, sort_keys=False)
    return cel, plain


def instructions(program: tuple[str, str], path: str, env: dict[str, str]) -> int:
    """Instructions executed by one `draguard lint PATH` (valgrind's callgrind)."""
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          *program, "lint", path], env=env, capture_output=True, text=True)
    line = next(line for line in run.stderr.splitlines() if "Collected :" in line)
    return int(line.rpartition(":")[2])


def measure(
    runs: int, *, source: bool, tree: Path = ROOT, count: bool = False
) -> dict[str, Start | int]:
    """Figures keyed `cel`, `plain` (installed), `cel editable`, `plain editable` and,
    with `source`, `cel source`; every one with bytecode cached but the last. With
    `count`, also `cel instructions` and `plain instructions` (installed)."""
    figures: dict[str, Start | int] = {}
    with tempfile.TemporaryDirectory(prefix="draguard-bench-start-") as folder:
        cel, plain = write_files(folder)
        installed = install(folder, tree)
        compiled = os.path.join(folder, "pycache")
        warm = child_env(compiled, write=True)
        for program in (installed, EDITABLE):  # writes every module's bytecode in the prefix
            run_once(program, cel, warm)
            run_once(program, plain, warm)
        cached = child_env(compiled, write=False)
        for suffix, program in (("", installed), (" editable", EDITABLE)):
            figures["cel" + suffix] = best(program, cel, cached, runs)
            figures["plain" + suffix] = best(program, plain, cached, runs)
        if source:
            # The prefix mirrors absolute paths: drop the part under draguard's tree.
            stripped = os.path.join(folder, "stripped")
            shutil.copytree(compiled, stripped)
            shutil.rmtree(stripped + str(ROOT), ignore_errors=True)
            figures["cel source"] = best(EDITABLE, cel, child_env(stripped, write=False), runs)
        if count:
            figures["cel instructions"] = instructions(installed, cel, cached)
            figures["plain instructions"] = instructions(installed, plain, cached)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per figure (min)")
    parser.add_argument("--source", action="store_true",
                        help="also measure with draguard's modules compiled from source")
    parser.add_argument("--instructions", action="store_true",
                        help="also count one installed start's instructions (valgrind)")
    parser.add_argument("--tree", type=Path, default=ROOT,
                        help="install this checkout instead of this one")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args(argv)
    figures = measure(args.runs, source=args.source, tree=args.tree.resolve(),
                      count=args.instructions)
    what = {"cel": "one small file with a CEL selector",
            "plain": "the same claim without selectors",
            "cel editable": "with a CEL selector, editable install",
            "plain editable": "without selectors, editable install",
            "cel source": "with a CEL selector, editable, compiled from source",
            "cel instructions": "with a CEL selector, installed: instructions",
            "plain instructions": "without selectors, installed: instructions"}
    print(f"draguard lint start of {args.tree.resolve()} (min of {args.runs}; "
          f"load average {os.getloadavg()[0]:.1f})")
    for key, figure in figures.items():
        if isinstance(figure, int):
            print(f"  {what[key]:<52} {figure / 1e6:8.1f} million")
        else:
            print(f"  {what[key]:<52} {figure.cpu * 1000:6.1f} ms CPU  "
                  f"{figure.wall * 1000:6.1f} ms wall")
    cel = figures["cel"]
    assert isinstance(cel, Start)
    met = cel.cpu < START_TARGET
    print(f"target < {START_TARGET * 1000:.0f} ms (CPU, installed, bytecode cached): "
          f"{'met' if met else 'NOT met'}")
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
