"""How many examples a Hypothesis test tries: the count it needs in CI, scaled by the profile.

A test that needs a count other than the profile's writes
`@settings(max_examples=examples(60))`: 60 under the `ci` profile (the default), 6,000
under `deep` (`pytest --hypothesis-profile=deep`, before a release). A bare
`max_examples=60` would override the profile, and `deep` would then deepen nothing.
The profiles are registered in tests/conftest.py, which the Hypothesis plugin has
loaded before any test module is imported, so `settings.default` here is the profile
named on the command line.
"""

from __future__ import annotations

from hypothesis import settings

CI_EXAMPLES = 100  # max_examples of the `ci` profile (tests/conftest.py)


def examples(ci: int) -> int:
    """`ci` examples under the `ci` profile, scaled by the loaded profile's max_examples."""
    return max(1, ci * settings.default.max_examples // CI_EXAMPLES)
