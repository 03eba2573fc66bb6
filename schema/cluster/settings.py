"""The levels of the cluster-aware checks (issue 20), as the policy file sets them.

Apart from `checks.py` (which re-exports these names, the contract's place for them)
so that reading a policy does not load CEL and the cluster model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Level = Literal["deny", "warn", "off"]
LEVELS: tuple[Level, ...] = ("deny", "warn", "off")

CLUSTER_CODES = ("class-missing", "attribute-unknown", "alternative-unsatisfiable",
                 "quota-exceeded", "admin-access-namespace")


@dataclass(frozen=True, slots=True)
class CheckSettings:
    """From the policy file's `clusterChecks:` section; a code not named warns."""

    levels: Mapping[str, Level] = field(default_factory=dict)
    stale_after_seconds: float = 300
    # Every check `off`: the webhook then skips the view for the review. Worked out once
    # (the settings are read for every review), derived from `levels`.
    every_off: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "every_off",
                           all(self.level(code) == "off" for code in CLUSTER_CODES))

    def level(self, code: str) -> Level:
        return self.levels.get(code, "warn")

    def __hash__(self) -> int:  # `levels` is a mapping: hash its items (settings key caches)
        return hash((tuple(sorted(self.levels.items())), self.stale_after_seconds))


DEFAULT_SETTINGS = CheckSettings()
