"""The policy file's `clusterChecks:` section: levels per code, staleAfter, errors with lines."""

from __future__ import annotations

import pytest

from draguard.schema.cluster.checks import CheckSettings
from draguard.schema.policy.file import parse_policy
from draguard.schema.policy.model import Policy, PolicyError


def test_levels_and_stale_after() -> None:
    """Named codes take their level, the others warn; staleAfter is in seconds."""
    policy = parse_policy("clusterChecks:\n  class-missing: deny\n  quota-exceeded: off\n"
                          "  staleAfter: 60\n")
    settings = policy.cluster_checks
    assert settings == CheckSettings({"class-missing": "deny", "quota-exceeded": "off"}, 60.0)
    assert [settings.level(c) for c in ("class-missing", "quota-exceeded", "attribute-unknown")] \
        == ["deny", "off", "warn"]
    assert hash(settings) == hash(CheckSettings(dict(settings.levels), 60.0))


def test_default_is_warn_everywhere() -> None:
    """Without the section every cluster code warns and the view may be 300 s old."""
    assert parse_policy("{}").cluster_checks == CheckSettings()
    assert Policy().cluster_checks.stale_after_seconds == 300


@pytest.mark.parametrize(("text", "line", "field", "fragment"), [
    pytest.param("clusterChecks:\n  class-mising: deny\n", 2, "clusterChecks.class-mising",
                 "unknown field", id="unknown-code"),
    pytest.param("clusterChecks:\n  class-missing: error\n", 2, "clusterChecks.class-missing",
                 "must be one of deny, warn, off", id="bad-level"),
    pytest.param("clusterChecks:\n  staleAfter: 0\n", 2, "clusterChecks.staleAfter",
                 "greater than zero", id="stale-zero"),
    pytest.param("clusterChecks:\n  staleAfter: soon\n", 2, "clusterChecks.staleAfter",
                 "number of seconds", id="stale-text"),
    pytest.param("clusterChecks: [deny]\n", 1, "clusterChecks", "must be a mapping",
                 id="not-a-mapping"),
])
def test_errors_name_line_and_field(text: str, line: int, field: str, fragment: str) -> None:
    """A bad clusterChecks entry is a PolicyError at its line, naming the field."""
    with pytest.raises(PolicyError) as caught:
        parse_policy(text)
    assert (caught.value.line, str(caught.value.field)) == (line, field)
    assert fragment in caught.value.message
