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

from budget import CI_EXAMPLES
from hypothesis import HealthCheck, settings

UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

settings.register_profile("ci", max_examples=CI_EXAMPLES, **UNTIMED)
settings.register_profile("deep", max_examples=100 * CI_EXAMPLES, **UNTIMED)
settings.load_profile("ci")
