"""A claim spec's requests, gathered once for every advice check."""

from __future__ import annotations

from typing import Any

# A request gathered once per claim spec for every check: its index among the user's
# requests, the request, its (mapping) subrequests, its alternatives (the subrequests,
# else the exact request, else none) and their device counts with `All` as 0.
Request = tuple[int, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[int]]


def gather_requests(devices: dict[str, Any]) -> list[Request]:
    """Every mapping request with its subrequests, alternatives and device counts."""
    items = devices.get("requests")
    if not isinstance(items, list):
        return []
    out: list[Request] = []
    for i, request in enumerate(items):
        if isinstance(request, dict):
            # `_subrequests` and `_device_count` inline: this runs for every request.
            subs: list[dict[str, Any]] = []
            listed = request.get("firstAvailable")
            if listed and isinstance(listed, list):
                for sub in listed:
                    if isinstance(sub, dict):
                        subs.append(sub)
            if subs:
                alternatives = subs
            else:
                exact = request.get("exactly")
                alternatives = [exact] if isinstance(exact, dict) else []
            counts = []
            for alternative in alternatives:
                if alternative.get("allocationMode") == "All":
                    counts.append(0)
                    continue
                count = alternative.get("count", 1)
                counts.append(count if isinstance(count, int) and count > 0 else 1)
            out.append((i, request, subs, alternatives, counts))
    return out
