"""Rewriting `config[].requests` entries that name a prioritized parent (issue 7 §4).

A config naming the parent `gpu` applies to whichever alternative is allocated
(`upstream-rules.md` §1.3), but the allocation result says `gpu/<subrequest>` and
most drivers compare names exactly, so the config is silently not applied (issue 7,
check `config-names-parent`). Naming every `gpu/<subrequest>` is the same for the
allocator and works with every driver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draguard.webhook.claimspec import ClaimSite, dict_items

Warn = Callable[[str], None]

# DeviceRequestsMaxSize bounds every reference list (upstream-rules.md §2.4).
MAX_REFERENCES = 32


def rewrite_parent_references(devices: dict[str, Any], *, site: ClaimSite, warn: Warn) -> None:
    """Replace each parent name in `config[].requests` by its `parent/sub` list, in place."""
    subrequests = _subrequests_by_parent(devices)
    if not subrequests:
        return
    for k, config in dict_items(devices.get("config")):
        refs = config.get("requests")
        if not isinstance(refs, list):
            continue
        rewritten = _rewrite(refs, subrequests)
        if rewritten == refs:
            continue
        if len(rewritten) > MAX_REFERENCES:
            warn(f"{site.devices_path.child('config').index(k)}.requests: naming every "
                 f"alternative would need {len(rewritten)} entries, more than upstream's "
                 f"{MAX_REFERENCES}; left as written")
            continue
        config["requests"] = rewritten


def _subrequests_by_parent(devices: dict[str, Any]) -> dict[str, list[str]]:
    """Parent name → subrequest names, for prioritized requests whose names are all strings.

    Later requests of the same name win, as in upstream's reference lookup (§3.3 rule 19).
    """
    out: dict[str, list[str]] = {}
    for _, request in dict_items(devices.get("requests")):
        name = request.get("name")
        if not isinstance(name, str):
            continue
        alternatives = request.get("firstAvailable")
        names = [a.get("name") for a in alternatives] if isinstance(alternatives, list) and all(
            isinstance(a, dict) for a in alternatives) else []
        if names and all(isinstance(n, str) and n for n in names):
            out[name] = [str(n) for n in names]
        else:
            out.pop(name, None)
    return out


def _rewrite(refs: list[Any], subrequests: dict[str, list[str]]) -> list[Any]:
    """Each parent reference becomes its `parent/sub` entries, at its own position.

    The list is a set upstream (§3.3 rule 17), so an added entry the user already
    wrote elsewhere in the list is not added twice; the user's entries stay as written.
    """
    out: list[Any] = []
    for ref in refs:
        if isinstance(ref, str) and ref in subrequests:
            out.extend(full for sub in subrequests[ref]
                       if (full := f"{ref}/{sub}") not in refs and full not in out)
        else:
            out.append(ref)
    return out
