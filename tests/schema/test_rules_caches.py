"""The rule set's own caches stay within their byte budgets (issue 15 §3)."""

from __future__ import annotations

import pytest

from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import release
from draguard.schema.rules import spec
from draguard.schema.rules.spec import Rules

BUDGET = 20_000


def _claim_spec(expression: str) -> dict[str, object]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1,
        "selectors": [{"cel": {"expression": expression}}]}}]}}


def test_passing_selectors_stay_within_their_character_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Long passing selectors, one after another, never hold more than the budget."""
    monkeypatch.setattr(spec, "PASSING_CACHE_CHARS", BUDGET)
    rules = Rules(release("1.34"))
    for index in range(30):
        expression = f'device.driver == "d{index}.example.com" || ' + " || ".join(
            ["true"] * 290)
        assert rules.validate_claim_spec(_claim_spec(expression), FieldPath.root("spec")) == []
        assert sum(map(len, rules._passing)) <= BUDGET
    assert rules._passing
