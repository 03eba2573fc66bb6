"""Per-expression cost of CEL selector checking: compile + type-check + decode + cost estimate.

Run: `.venv/bin/python bench/cel.py [--rounds N]`. Prints the median and 90th percentile
of an uncached check (the LRU cache is cleared before every call), the median of the
C++ compile step alone, and the median of a cached check. Timing targets live here, not
in unit tests.
"""

from __future__ import annotations

import argparse
import statistics
import time

from draguard.schema.cel import check as cel
from draguard.schema.cel.environment import EnvFlags, environment
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import DEFAULT_RELEASE

EXPRESSIONS = [
    'device.driver == "gpu.nvidia.com"',
    'device.driver == "gpu.nvidia.com" && '
    'device.attributes["gpu.nvidia.com"].productName == "H100"',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    'device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))',
    'cel.bind(gpu, device.attributes["gpu.nvidia.com"], '
    'gpu.architecture == "Hopper" && gpu.cudaComputeCapability.isGreaterThan(semver("9.0.0")))',
    'device.attributes["gpu.nvidia.com"].exists(k, k.startsWith("mig"))',
    'device.attributes["dra.example.com"].uuid.matches("^GPU-[0-9a-f-]+$")',
    'device.drivr == "x"',
]
PATH = FieldPath.root("spec", "devices")


def _time(call: object, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    env = environment(EnvFlags(consumable_capacity=True))
    cel.check_selector(EXPRESSIONS[0], PATH, release=DEFAULT_RELEASE)  # build the environment

    def uncached() -> None:
        for expression in EXPRESSIONS:
            cel.clear_cache()
            cel.check_selector(expression, PATH, release=DEFAULT_RELEASE)

    def compile_only() -> None:
        for expression in EXPRESSIONS[:-1]:
            env.compile(expression)

    def cached() -> None:
        for expression in EXPRESSIONS:
            cel.check_selector(expression, PATH, release=DEFAULT_RELEASE)

    per = len(EXPRESSIONS)
    full = [s / per for s in _time(uncached, args.rounds)]
    raw = [s / (per - 1) for s in _time(compile_only, args.rounds)]
    hits = [s / per for s in _time(cached, args.rounds)]
    deciles = statistics.quantiles(full, n=10)
    print(f"expressions: {per}, rounds: {args.rounds}")
    print(f"uncached check_selector: median {statistics.median(full) * 1e6:.0f} µs, "
          f"p90 {deciles[-1] * 1e6:.0f} µs per expression")
    print(f"C++ compile only:        median {statistics.median(raw) * 1e6:.0f} µs")
    print(f"cached check_selector:   median {statistics.median(hits) * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
