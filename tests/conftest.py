"""Hypothesis profiles for the whole suite (issue 3: property tests in CI and before releases).

`ci` is the default (Hypothesis' own 100 examples per test; tests that need more scale
from it, e.g. the conversion properties run 20× that). `deep` is 100× for a release:
`pytest --hypothesis-profile=deep`. Registered here because the Hypothesis pytest plugin
loads the profile named on the command line before test modules are imported.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("ci", max_examples=100)
settings.register_profile("deep", max_examples=100 * 100)
settings.load_profile("ci")
