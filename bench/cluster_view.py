"""Benchmark: review cost with the cluster view loaded (issue 20) against the same review without.

    .venv/bin/python bench/cluster_view.py [--nodes 5000] [--devices 8] [--reviews 2000]
                                           [--rounds 5] [--json] [--checks-only]

Builds a `ClusterFacts` as the webhook's view holds it after the first lists: one
ResourceSlice per node with `--devices` GPUs (attributes and capacity), the DeviceClasses
the claim names, a Namespace and a ResourceQuota. Then it answers the same
AdmissionReview (a prioritized claim with CEL selectors) `--reviews` times through
`answer_validate`, once with the rule set alone and once with the cluster checks over
that view (the webhook's `ClusterChecks`, which keeps a verdict per template, namespace
and view generation), and once running `check_object` on every review (claims that each
have their own spec), alternating in `--rounds` rounds; then `--reviews` claims that each
have a spec of their own (as bench/serve_compare.py sends) without and with the view; it reports the median CPU time
per review (process time: other load on the machine counts little), the ratio and the
difference per review; then the cluster checks alone (`check_internal` on the prepared
distinct claims, as the webhook calls them), per claim, and the first check after a
ResourceSlice event (a new snapshot). `--checks-only` measures these two alone (quick at
50,000 nodes). Also the view's
load time (`replace` of every slice) and its memory per 1,000 nodes (tracemalloc, the
objects the facts keep after the JSON they were read from is dropped).

In process, no HTTP: the HTTP layer, TLS and gunicorn are the same with and without the
view (bench/webhook.py measures those); this isolates what the view adds to a review.
Target (issue 20): with the view, within 10 % of the review without it.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import tracemalloc
from typing import Any

from draguard.schema.cluster.checks import DEFAULT_SETTINGS, check_internal, check_object
from draguard.schema.cluster.facts import ClusterFacts
from draguard.schema.model.options import Options
from draguard.schema.model.shapes import identify
from draguard.schema.validate import prepare
from draguard.webhook.app import ClusterChecks
from draguard.webhook.review import Review, RuleSet, answer_validate

DRIVER = "gpu.example.com"
CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "train", "namespace": "team-a"},
    "spec": {"devices": {"requests": [{
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "big.gpu.example.com",
             "selectors": [{"cel": {"expression":
                                    f'device.attributes["{DRIVER}"].model == "h100"'}}]},
            {"name": "small", "deviceClassName": "small.gpu.example.com", "count": 2,
             "selectors": [{"cel": {"expression":
                                    f'device.capacity["{DRIVER}"].memory.compareTo('
                                    'quantity("40Gi")) >= 0'}}]},
        ],
    }]}},
}


def device_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
             "metadata": {"name": name},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
            for name in ("big.gpu.example.com", "small.gpu.example.com")]


def slice_for(node: int, devices: int) -> dict[str, Any]:
    models = ("h100", "a100")
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"node-{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER, "nodeName": f"node-{node}",
            "pool": {"name": f"node-{node}", "generation": 1, "resourceSliceCount": 1},
            "devices": [{
                "name": f"gpu-{d}",
                "attributes": {"model": {"string": models[node % 2]},
                               "index": {"int": d}, "healthy": {"bool": True},
                               "driverVersion": {"version": "1.2.3"}},
                "capacity": {"memory": {"value": "80Gi" if node % 2 == 0 else "40Gi"}},
            } for d in range(devices)],
        },
    }


def load_facts(nodes: int, devices: int) -> tuple[ClusterFacts, float]:
    facts = ClusterFacts()
    slices = [slice_for(n, devices) for n in range(nodes)]
    started = time.process_time()
    facts.replace("DeviceClass", device_classes())
    facts.replace("ResourceSlice", slices)
    facts.replace("Namespace", [{"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": "team-a", "labels": {}}}])
    facts.replace("ResourceQuota", [{"apiVersion": "v1", "kind": "ResourceQuota",
                                     "metadata": {"name": "q", "namespace": "team-a"},
                                     "spec": {"hard": {
                                         "big.gpu.example.com.deviceclass.resource.k8s.io"
                                         "/devices": "16"}}}])
    return facts, time.process_time() - started


def memory_per_thousand(nodes: int, devices: int) -> float:
    """MiB the facts keep per 1,000 nodes (traced allocations alive after loading)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    facts, _ = load_facts(nodes, devices)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    del facts
    return kept / (1024 * 1024) / (nodes / 1000)


class LoadedView:
    """A view whose every kind is listed and whose watches are open (age 0), unchanging."""

    generation = 1

    def oldest_age(self) -> float | None:
        return 0.0


def per_review(rules: RuleSet, reviews: int) -> float:
    """CPU seconds per review of the claim (distinct uids, one spec, as from a template)."""
    started = time.process_time()
    for k in range(reviews):
        review = Review(uid=f"u-{k}", operation="CREATE", object=CLAIM, namespace="team-a")
        answer_validate(review, rules=rules, failure_mode="open")
    return (time.process_time() - started) / reviews


def distinct_claims(count: int, tag: str) -> list[dict[str, Any]]:
    """`count` claims each with a spec of its own (request names carry an id), as
    bench/serve_compare.py sends: no memo answers them; the selectors repeat."""
    out = []
    for n in range(count):
        claim = json.loads(json.dumps(CLAIM))
        claim["metadata"]["name"] = f"train-{tag}-{n}"
        for request in claim["spec"]["devices"]["requests"]:
            request["name"] = f"{request['name']}-{tag}-{n}"
        out.append(claim)
    return out


def per_distinct_review(rules: RuleSet, claims: list[dict[str, Any]]) -> float:
    """CPU seconds per review of claims that each have their own spec."""
    started = time.process_time()
    for k, claim in enumerate(claims):
        review = Review(uid=f"d-{k}", operation="CREATE", object=claim, namespace="team-a")
        answer_validate(review, rules=rules, failure_mode="open")
    return (time.process_time() - started) / len(claims)


def per_check(facts: ClusterFacts, claims: list[dict[str, Any]]) -> float:
    """CPU seconds per claim of the cluster checks alone, on claims prepared beforehand
    (the rule set's `Verdict.internal`, which the webhook hands to `check_internal`)."""
    options = Options(default_namespace="team-a")
    prepared = []
    for claim in claims:
        doc_type = identify(claim)
        assert doc_type is not None
        prepared.append(prepare(dict(claim), doc_type, options).document)
    started = time.process_time()
    for document in prepared:
        check_internal(document, "ResourceClaim", facts, DEFAULT_SETTINGS, options=options)
    return (time.process_time() - started) / len(prepared)


def checks_alone(facts: ClusterFacts, reviews: int, rounds: int) -> float:
    """Median CPU seconds per distinct claim of `check_internal` (fresh claims each round)."""
    per_check(facts, distinct_claims(min(reviews, 200), "warm"))
    return statistics.median(per_check(facts, distinct_claims(reviews, f"c{r}"))
                             for r in range(rounds))


def after_update(facts: ClusterFacts, nodes: int, devices: int, updates: int) -> float:
    """Median CPU seconds of the first check after a slice event (a new snapshot, whose
    per-snapshot results start empty): what a review pays once per view update."""
    options = Options(default_namespace="team-a")
    claim = distinct_claims(1, "u")[0]
    doc_type = identify(claim)
    assert doc_type is not None
    document = prepare(dict(claim), doc_type, options).document
    times = []
    for k in range(updates):
        facts.apply("ResourceSlice", "MODIFIED", slice_for(k % nodes, devices))
        started = time.process_time()
        check_internal(document, "ResourceClaim", facts, DEFAULT_SETTINGS, options=options)
        times.append(time.process_time() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--reviews", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--checks-only", action="store_true",
                        help="only the cluster checks' CPU per distinct claim")
    args = parser.parse_args()

    facts, load_seconds = load_facts(args.nodes, args.devices)
    if args.checks_only:
        figures = {"nodes": args.nodes,
                   "checks_us_per_distinct_claim": round(
                       checks_alone(facts, args.reviews, args.rounds) * 1e6, 1),
                   "checks_us_first_after_update": round(
                       after_update(facts, args.nodes, args.devices, 50) * 1e6, 1)}
        print(json.dumps(figures) if args.json
              else "\n".join(f"{key}: {value}" for key, value in figures.items()))
        return 0
    # The webhook's own checks over a loaded view that stays current (no updates).
    judge = ClusterChecks(LoadedView(), facts, lambda: DEFAULT_SETTINGS)
    plain, viewed = RuleSet(), RuleSet(cluster=judge)
    uncached = RuleSet(cluster=lambda obj, options, verdict: check_object(
        obj, facts, DEFAULT_SETTINGS, options=options))
    check = answer_validate(Review(uid="w", operation="CREATE", object=CLAIM,
                                   namespace="team-a"), rules=viewed, failure_mode="open")
    per_review(plain, 50)  # warm both (CEL compilation, memo)
    without, with_view, every_time = [], [], []
    distinct_without, distinct_with = [], []
    for r in range(args.rounds):
        without.append(per_review(plain, args.reviews))
        with_view.append(per_review(viewed, args.reviews))
        every_time.append(per_review(uncached, args.reviews))
        # Fresh claims per round and server: a memo from an earlier round must not answer.
        distinct_without.append(per_distinct_review(plain, distinct_claims(args.reviews, f"p{r}")))
        distinct_with.append(per_distinct_review(viewed, distinct_claims(args.reviews, f"v{r}")))
    result = {
        "nodes": args.nodes, "devices_per_node": args.devices, "reviews": args.reviews,
        "rounds": args.rounds,
        "review_us_without_view": round(statistics.median(without) * 1e6, 1),
        "review_us_with_view": round(statistics.median(with_view) * 1e6, 1),
        "ratio": round(statistics.median(with_view) / statistics.median(without), 3),
        # check_object on every review, as when each claim has its own spec.
        "review_us_checks_every_time": round(statistics.median(every_time) * 1e6, 1),
        # Claims each with a spec of their own (bench/serve_compare.py's load), in process.
        "distinct_review_us_without_view": round(statistics.median(distinct_without) * 1e6, 1),
        "distinct_review_us_with_view": round(statistics.median(distinct_with) * 1e6, 1),
        "distinct_ratio": round(statistics.median(distinct_with)
                                / statistics.median(distinct_without), 3),
        # What the view adds to a distinct claim's review, and the checks alone.
        "distinct_difference_us": round((statistics.median(distinct_with)
                                         - statistics.median(distinct_without)) * 1e6, 1),
        "checks_us_per_distinct_claim": round(checks_alone(facts, args.reviews,
                                                           args.rounds) * 1e6, 1),
        "checks_us_first_after_update": round(after_update(facts, args.nodes, args.devices,
                                                           50) * 1e6, 1),
        "view_load_seconds": round(load_seconds, 2),
        "view_mib_per_1000_nodes": round(memory_per_thousand(min(args.nodes, 2000),
                                                             args.devices), 2),
        "warnings_with_view": check.document["response"].get("warnings", []),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
