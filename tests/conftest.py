"""Hypothesis profiles for the whole suite (issue 3: property tests in CI; issue 16: in minutes).

`ci` is the default: 100 examples per test (a test that needs another count asks
`budget.examples(n)`, tests/support/budget.py). `deep` is 100× for a release:
`pytest --hypothesis-profile=deep`. Registered here because the Hypothesis pytest plugin
loads the profile named on the command line before test modules are imported.

Both profiles are deterministic under load: no wall-clock deadline, and the `too_slow`
health check (generation time measured by the clock) is off. A test that lists its own
`suppress_health_check` replaces this list, so it names `too_slow` too.
"""

from __future__ import annotations

import pytest
from budget import CI_EXAMPLES
from hypothesis import HealthCheck, settings

UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

settings.register_profile("ci", max_examples=CI_EXAMPLES, **UNTIMED)
settings.register_profile("deep", max_examples=100 * CI_EXAMPLES, **UNTIMED)
settings.load_profile("ci")


# The modules that take longest, longest first (measured with `pytest --durations=0`;
# issue 16). xdist hands whole files to its workers (`--dist loadfile`) in collection
# order (`--no-loadscope-reorder` in pyproject.toml); left in their folders' order, or
# in xdist's own order by number of tests, a slow module with few tests starts last and
# one worker runs it alone while the other has finished. Started first, the many small
# modules after them fill both workers up to the end.
SLOW_MODULES = (
    "tests/hostile/test_cli_hostile.py",
    "tests/schema/test_convert_properties.py",
    "tests/schema/test_policy_mutation_properties.py",
    "tests/schema/test_convert_cli.py",
    "tests/cli/test_pipes.py",
    "tests/hostile/test_webhook_fuzz.py",
    "tests/hostile/test_last_good.py",
    "tests/hostile/test_differential.py",
    "tests/hostile/test_memory.py",
    "tests/hostile/test_cluster_view_hostile.py",
    "tests/schema/test_peers_validate.py",
    "tests/schema/test_defaults.py",
    "tests/deploy/test_schemas.py",
    "tests/cli/test_precommit_hooks.py",
    "tests/schema/test_export_peers.py",
    "tests/webhook/test_clusterview.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the slow modules first, in SLOW_MODULES' order; the rest keep theirs."""
    rank = {module: i for i, module in enumerate(SLOW_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
