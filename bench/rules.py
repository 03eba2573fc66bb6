"""Benchmark: the rule set's CPU per distinct claim, in process (issue 21).

    .venv/bin/python bench/rules.py [--claim webhook|small] [--reviews 5000]
                                    [--warmup 1000] [--rounds 5] [--json] [--check]
    .venv/bin/python bench/rules.py --against /tmp/old-tree [--rounds 5]

Each round answers `--reviews` AdmissionReviews that each carry a claim with a spec of
its own (no spec memo hit) through the webhook's `answer_validate`, with the app's
rule set (`create_app(...).extensions["draguard"].rules`), and reports CPU time
(process time: other load on the machine counts little) per review, the median of
`--rounds` rounds after `--warmup` reviews. The reviews are parsed before the clock
starts (`parse_review` is the HTTP layer's). `--claim webhook` (the default) is
bench/webhook.py's typical claim (`DISTINCT` made unique by `fill`: three alternatives
with CEL selectors, an exact NIC request and a constraint; two warnings);
`--claim small` is bench/cluster_view.py's `distinct_claims` (one prioritized request,
no warning), which the target below was set on. Then the same claims through the steps
of `validate_object` one at a time (the memo key, `prepare`, the claim-spec rules, the
advice, the metadata rules), for where the time goes.

`--against TREE` compares this tree with another checkout of the project (a
`git worktree add` of the base commit): each round runs this script once for each
tree in a child process of its own, old and new alternated, so that load from other
processes hits both alike; it prints both medians and the ratio.

No HTTP: bench/webhook.py measures the server. Target (issue 21, branch `rulecost`):
at most 50 µs of CPU per distinct claim of `--claim small` for `answer_validate`;
`--check` exits 1 when it is missed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `bench/rules.py` as a script: make `bench.*` importable
    sys.path.insert(0, str(ROOT))

TARGET_US = 50.0
# The folders that `pyproject.toml` maps into the `draguard` namespace.
PACKAGES = ("schema", "certs", "webhook", "deploy")


def _cpu_per_item(items: list[Any], call: Callable[[Any], object]) -> float:
    """CPU µs per item of `call` over `items` (the collector run before, not during)."""
    gc.collect()
    started = time.process_time()
    for item in items:
        call(item)
    return (time.process_time() - started) / len(items) * 1e6


def _claims(kind: str, count: int, tag: str) -> list[dict[str, Any]]:
    """`count` claims, each with a spec of its own, as the webhook receives them."""
    if kind == "small":
        from bench.cluster_view import distinct_claims

        return distinct_claims(count, tag)
    from bench.webhook import DISTINCT, fill
    from draguard.webhook.review import parse_review

    claims = []
    for k in range(count):
        obj = parse_review(fill(DISTINCT, f"{tag}-{k}")).object
        assert obj is not None
        claims.append(obj)
    return claims


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The figures of this process's `draguard` (whichever tree it imports)."""
    from draguard.schema import validate
    from draguard.schema.model.shapes import identify
    from draguard.schema.rules.metadata import validate_object_meta
    from draguard.webhook.app import create_app
    from draguard.webhook.config import Config
    from draguard.webhook.review import Review, answer_validate

    rules = create_app(Config(log_level="warning"), tls=False).extensions["draguard"].rules
    namespace = "ml-team" if args.claim == "webhook" else "team-a"
    options = rules.options(Review(uid="o", operation="CREATE", object={}, namespace=namespace))
    plain = type(options)(release=options.release, default_namespace=namespace)

    def reviews(tag: str, count: int) -> list[Review]:
        return [Review(uid=f"{tag}-{k}", operation="CREATE", object=claim, namespace=namespace)
                for k, claim in enumerate(_claims(args.claim, count, tag))]

    def answer(review: Review) -> object:
        return answer_validate(review, rules=rules, failure_mode="closed")

    _cpu_per_item(reviews("warm", args.warmup), answer)  # CEL compiled, caches filled
    whole: list[float] = []
    steps: dict[str, list[float]] = {name: [] for name in
                                     ("memo key", "prepare", "spec rules", "advice", "metadata")}
    for r in range(args.rounds):
        whole.append(_cpu_per_item(reviews(f"r{r}", args.reviews), answer))
        if args.no_steps:
            continue
        # The steps, on fresh claims of their own (so the memo is never hit).
        claims = _claims(args.claim, args.reviews, f"s{r}")
        typed = [(c, identify(c)) for c in claims]
        steps["memo key"].append(_cpu_per_item(claims, lambda c: validate._MEMO.key(c, options)))
        prepared: list[Any] = []
        steps["prepare"].append(_cpu_per_item(
            typed, lambda ct, kept=prepared: kept.append(validate.prepare(ct[0], ct[1], plain))))
        steps["spec rules"].append(_cpu_per_item(
            prepared, lambda p: validate._spec_errors(p, plain)))
        steps["advice"].append(_cpu_per_item(prepared, lambda p: validate.advise(p, plain)))
        steps["metadata"].append(_cpu_per_item(
            prepared, lambda p: list(validate_object_meta(p.document["metadata"],
                                                          validate._METADATA))))
    figure = statistics.median(whole)
    return {"claim": args.claim,
            "answer_validate_us_per_distinct_claim": round(figure, 1),
            "rounds_us": [round(x, 1) for x in whole],
            "steps_us": {k: round(statistics.median(v), 1) for k, v in steps.items() if v},
            # The target was set on the small claim (see the module docstring).
            "target_us": TARGET_US, "met": figure <= TARGET_US if args.claim == "small" else None}


def _shim(tree: Path, into: Path) -> Path:
    """A folder that makes `import draguard.*` load `tree`'s packages (on PYTHONPATH it
    comes before the editable install's finder, which sits at the end of sys.meta_path)."""
    namespace = into / "draguard"
    namespace.mkdir()
    for name in PACKAGES:
        if (tree / name).is_dir():
            (namespace / name).symlink_to(tree / name)
    return into


def _child(args: argparse.Namespace, pythonpath: str | None) -> dict[str, Any]:
    """One round in a child process; `pythonpath` selects the tree (None: this one)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    command = [sys.executable, str(Path(__file__).resolve()), "--json", "--no-steps",
               "--rounds", "1", "--claim", args.claim, "--reviews", str(args.reviews),
               "--warmup", str(args.warmup)]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def compare(args: argparse.Namespace) -> int:
    """Old tree and this one, a child process each per round, alternated."""
    figures: dict[str, list[float]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="draguard-old-") as folder:
        old_path = str(_shim(Path(args.against).resolve(), Path(folder)))
        for _ in range(args.rounds):
            for side, path in (("old", old_path), ("new", None)):
                result = _child(args, path)
                figures[side].append(result["answer_validate_us_per_distinct_claim"])
    old, new = statistics.median(figures["old"]), statistics.median(figures["new"])
    print(f"answer_validate, --claim {args.claim}, µs CPU per review (median of "
          f"{args.rounds} alternated rounds of {args.reviews}):")
    for side in ("old", "new"):
        print(f"  {side}: {statistics.median(figures[side]):6.1f}  (rounds "
              + ", ".join(f"{x:.1f}" for x in figures[side]) + ")")
    print(f"  new / old: {new / old:.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claim", choices=("webhook", "small"), default="webhook")
    parser.add_argument("--reviews", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-steps", action="store_true", help="the whole figure only")
    parser.add_argument("--against", metavar="TREE",
                        help="alternate with another checkout of the project")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the target is missed (--claim small)")
    args = parser.parse_args(argv)
    if args.against:
        return compare(args)
    result = measure(args)
    failed = 1 if args.check and result["met"] is False else 0
    if args.json:
        print(json.dumps(result, indent=2))
        return failed
    figure = result["answer_validate_us_per_distinct_claim"]
    print(f"answer_validate, --claim {args.claim}: {figure:.1f} µs CPU per review "
          f"(median of {args.rounds} rounds of {args.reviews}; rounds "
          + ", ".join(f"{x:.0f}" for x in result["rounds_us"]) + ")")
    if args.claim == "small":
        print(f"target <= {TARGET_US:.0f} µs: {'met' if result['met'] else 'NOT met'}")
    if result["steps_us"]:
        print("steps of validate_object, µs CPU per claim (median):")
        for name, value in result["steps_us"].items():
            print(f"  {name:<11} {value:7.1f}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
