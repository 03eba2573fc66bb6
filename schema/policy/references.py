"""Rewriting `config[].requests` entries that name a prioritized parent (issue 7 §4).

A config naming the parent `gpu` applies to whichever alternative is allocated
(`upstream-rules.md` §1.3), but the allocation result says `gpu/<subrequest>` and
most drivers compare names exactly, so the config is silently not applied (issue 7,
check `config-names-parent`). Naming every `gpu/<subrequest>` is the same for the
allocator and works with every driver. The rewrite itself is the one `draguard fix`
applies (`draguard.schema.advice.claims.config_reference_rewrites`), so the linter, the fixer
and the webhook agree on the result.
"""

from __future__ import annotations

from typing import Any

from draguard.schema.advice.claims import config_reference_rewrites
from draguard.schema.advice.codes import Advice
from draguard.schema.model.releases import REQUESTS_MAX
from draguard.schema.policy.claimspec import ClaimSite, Warn


def rewrite_parent_references(devices: dict[str, Any], *, site: ClaimSite, warn: Warn) -> None:
    """Replace each parent name in `config[].requests` by its `parent/sub` list, in place."""
    for rewrite in config_reference_rewrites(devices):
        if not rewrite.fits:
            warn(Advice(site.devices_path.child("config").index(rewrite.index).child("requests"),
                        "policy-config-not-rewritten",
                        f"naming every alternative would need {len(rewrite.new)} entries, "
                        f"more than upstream's {REQUESTS_MAX}; left as written"))
            continue
        devices["config"][rewrite.index]["requests"] = list(rewrite.new)
