"""`draguard skew` against issue 3's "Done when": a claim using firstAvailable, per release and version."""

from __future__ import annotations

from typing import Any

import pytest

from draguard.schema.skew import ReleaseView, releases_between, skew_document


def prioritized_claim(version: str) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "ml"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {"name": "h100", "deviceClassName": "h100.nvidia.com"},
                            {"name": "a100", "deviceClassName": "a100.nvidia.com", "count": 2},
                        ],
                    }
                ]
            }
        },
    }


def views(version: str) -> dict[str, ReleaseView]:
    found = skew_document(prioritized_claim(version), releases_between("1.33", "1.39")) or []
    return {view.version: view for view in found}


def effective(view: ReleaseView) -> str | None:
    """The verdict once the version is served (by default or switched on); None if it does not exist."""
    if view.served:
        return view.verdict
    return view.if_enabled.verdict if view.if_enabled else None


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        pytest.param(
            "v1beta1",
            # 1.38 installs v1beta1 only with DRAResourceV1beta1API (off by default, issue 17).
            {"1.33": "rejected", **dict.fromkeys(("1.34", "1.35", "1.36", "1.37", "1.38"), "accepted"),
             "1.39": None},
            id="v1beta1-gated-in-1.38",
        ),
        pytest.param(
            "v1beta2",
            {"1.33": "rejected", **dict.fromkeys(("1.34", "1.35", "1.36", "1.37", "1.38"), "accepted"),
             "1.39": None},
            id="v1beta2-removed-in-1.39",
        ),
        pytest.param(
            "v1",
            {"1.33": None, **dict.fromkeys(("1.34", "1.35", "1.36", "1.37", "1.38", "1.39"), "accepted")},
            id="v1-from-1.34",
        ),
    ],
)  # fmt: skip
def test_first_available_claim_per_release(version: str, expected: dict[str, str | None]) -> None:
    """1.33: the gate is off by default, so rejected; 1.34–1.37 accepted; removal releases have no such version."""
    assert {name: effective(view) for name, view in views(version).items()} == expected


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_unserved_release_explains_the_drop_in_words(version: str) -> None:
    """In 1.33 no version with firstAvailable is served by default: the words still say what the gate does."""
    explanation = views(version)["1.33"].explanation
    assert "not served by default" in explanation
    assert "request `gpu` loses its 2 alternatives and becomes empty" in explanation
    assert "DRAPrioritizedList" in explanation


def test_removed_versions_say_when() -> None:
    """A release without the version says in which release it was removed."""
    assert "DRAResourceV1beta1API" in views("v1beta1")["1.38"].explanation
    assert "removed in 1.38" in views("v1beta1")["1.39"].explanation
    assert "removed in 1.39" in views("v1beta2")["1.39"].explanation
