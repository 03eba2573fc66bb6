"""Benchmark: CPU per distinct claim of the advice side alone (issue 21, the webhook's share).

    .venv/bin/python -m bench.advice [--claims 3000] [--rounds 5] [--json]

The claims are bench/cluster_view.py's `distinct_claims` (what bench/serve_compare.py sends:
each with a spec of its own, so no memo answers them) plus generated ones with more
requests, `All` alternatives, tolerations, a config naming a parent and a constraint, so
that most checks have work (`rich`, and `rich_1.34` with skew advice on). Each
is taken through `validate.prepare` once, outside the timing; then the timing is CPU time
(`time.process_time`) of `validate.advise` per claim under the default release and under
1.34 (skew advice on), and of the webhook's rendering of those warnings (`render_advice`
+ `limit_warnings`, reported only). Median of `--rounds`. The figure of issue 21's advice
target is `distinct_advise_us`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from bench.cluster_view import distinct_claims
from draguard.schema.model.options import DEFAULT_OPTIONS, Options
from draguard.schema.model.releases import release
from draguard.schema.model.shapes import identify
from draguard.schema.validate import Prepared, advise, prepare
from draguard.webhook.review import limit_warnings, render_advice


def rich_claims(count: int, tag: str) -> list[dict[str, Any]]:
    """Claims with three requests (two prioritized, one with `All`), a config naming a
    parent and a constraint: most checks of advice/claims.py and advice/skew.py find
    something (not `combinations` or `devices-over-32`)."""
    out = []
    for n in range(count):
        requests: list[dict[str, Any]] = [
            {"name": f"gpu-{tag}-{n}", "firstAvailable": [
                {"name": "big", "deviceClassName": "big.example.com", "count": 4},
                {"name": "small", "deviceClassName": "small.example.com", "count": 8},
                {"name": "any", "deviceClassName": "small.example.com",
                 "allocationMode": "All"},
            ]},
            {"name": f"nic-{tag}-{n}", "firstAvailable": [
                {"name": "fast", "deviceClassName": "nic.example.com",
                 "tolerations": [{"key": "k", "operator": "Exists"}]},
                {"name": "slow", "deviceClassName": "nic.example.com", "count": 2},
            ]},
            {"name": f"fpga-{tag}-{n}", "exactly": {"deviceClassName": "fpga.example.com",
                                                    "count": 2}},
        ]
        out.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"rich-{tag}-{n}", "namespace": "team-a"},
            "spec": {"devices": {
                "requests": requests,
                "constraints": [{"requests": [f"gpu-{tag}-{n}/big", f"nic-{tag}-{n}"],
                                 "matchAttribute": "example.com/numa"}],
                "config": [{"requests": [f"gpu-{tag}-{n}"], "opaque": {
                    "driver": "gpu.example.com", "parameters": {"a": 1}}}],
            }},
        })
    return out


def prepared(claims: list[dict[str, Any]], options: Options) -> list[Prepared]:
    out = []
    for claim in claims:
        doc_type = identify(claim)
        assert doc_type is not None
        out.append(prepare(json.loads(json.dumps(claim)), doc_type, options))
    return out


def per_claim(items: list[Prepared], options: Options) -> tuple[float, float, int]:
    """CPU seconds per claim of `advise`, of rendering its warnings, and the warnings."""
    started = time.process_time()
    results = [advise(item, options) for item in items]
    advised = time.process_time()
    for advice in results:
        limit_warnings(render_advice(a) for a in advice)
    rendered = time.process_time()
    count = sum(len(advice) for advice in results)
    return (advised - started) / len(items), (rendered - advised) / len(items), count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    old = Options(release=release("1.34"))
    sets = {
        "distinct": (distinct_claims(args.claims, "a"), DEFAULT_OPTIONS),
        "rich": (rich_claims(args.claims, "r"), DEFAULT_OPTIONS),
        "rich_1.34": (rich_claims(args.claims, "s"), old),
    }
    result: dict[str, Any] = {"claims": args.claims, "rounds": args.rounds}
    for name, (claims, options) in sets.items():
        items = prepared(claims, options)
        per_claim(items[:200], options)  # warm
        advise_s, render_s, warnings = [], [], 0
        for _ in range(args.rounds):
            a, r, warnings = per_claim(items, options)
            advise_s.append(a)
            render_s.append(r)
        result[f"{name}_advise_us"] = round(statistics.median(advise_s) * 1e6, 2)
        result[f"{name}_render_us"] = round(statistics.median(render_s) * 1e6, 2)
        result[f"{name}_warnings_per_claim"] = round(warnings / len(items), 2)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:32} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
