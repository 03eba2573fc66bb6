"""Benchmark: the rule set's CPU per distinct claim, in process (issue 21).

    .venv/bin/python bench/rules.py [--claims 1500] [--rounds 7] [--json] [--check]

Each round answers `--claims` claims that each have a spec of their own (no spec memo
hit; bench/cluster_view.py's `distinct_claims`, as bench/serve_compare.py sends them)
through the webhook's `answer_validate`, and reports CPU time (process time: other load
on the machine counts little) per claim, the median of `--rounds` rounds. Then the same
claims through the steps of `validate_object` one at a time (the memo key, `prepare`,
the claim-spec rules, the advice, the metadata rules), for where the time goes.

No HTTP: bench/webhook.py measures the server. Target (issue 21, branch `rulecost`):
at most 50 µs of CPU per distinct claim for `answer_validate`; `--check` exits 1 when
it is missed.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `bench/rules.py` as a script: make `bench.*` importable
    sys.path.insert(0, str(ROOT))

from bench.cluster_view import distinct_claims  # noqa: E402
from draguard.schema import validate  # noqa: E402
from draguard.schema.model.shapes import identify  # noqa: E402
from draguard.schema.rules.metadata import validate_object_meta  # noqa: E402
from draguard.webhook.review import Review, RuleSet, answer_validate  # noqa: E402

TARGET_US = 50.0


def _cpu_per_item(items: list[Any], call: Callable[[Any], object]) -> float:
    """CPU µs per item of `call` over `items` (the collector run before, not during)."""
    gc.collect()
    started = time.process_time()
    for item in items:
        call(item)
    return (time.process_time() - started) / len(items) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args(argv)

    rules = RuleSet()
    options = rules.options(Review(uid="o", operation="CREATE", object={}, namespace="team-a"))
    plain = type(options)(release=options.release, default_namespace="team-a")

    def answer(pair: tuple[str, dict[str, Any]]) -> object:
        uid, claim = pair
        return answer_validate(Review(uid=uid, operation="CREATE", object=claim,
                                      namespace="team-a"), rules=rules, failure_mode="open")

    answer(("warm", distinct_claims(1, "warm")[0]))  # CEL compiled, caches filled
    whole: list[float] = []
    steps: dict[str, list[float]] = {name: [] for name in
                                     ("memo key", "prepare", "spec rules", "advice", "metadata")}
    for r in range(args.rounds):
        claims = distinct_claims(args.claims, f"r{r}")
        whole.append(_cpu_per_item([(f"u{r}-{k}", c) for k, c in enumerate(claims)], answer))
        # The steps, on fresh claims of their own (so the memo is never hit).
        claims = distinct_claims(args.claims, f"s{r}")
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
    result = {"answer_validate_us_per_distinct_claim": round(figure, 1),
              "rounds_us": [round(x, 1) for x in whole],
              "steps_us": {k: round(statistics.median(v), 1) for k, v in steps.items()},
              "target_us": TARGET_US, "met": figure <= TARGET_US}
    failed = 1 if args.check and not result["met"] else 0
    if args.json:
        print(json.dumps(result, indent=2))
        return failed
    print(f"answer_validate, distinct claims: {figure:.1f} µs CPU per claim "
          f"(median of {args.rounds} rounds of {args.claims}; rounds "
          + ", ".join(f"{x:.0f}" for x in whole) + ")")
    print(f"target <= {TARGET_US:.0f} µs: {'met' if result['met'] else 'NOT met'}")
    print("steps of validate_object, µs CPU per claim (median):")
    for name, values in steps.items():
        print(f"  {name:<11} {statistics.median(values):7.1f}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
