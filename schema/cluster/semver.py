"""Semantic versions as the Kubernetes CEL semver library sees them (selectors only).

Upstream: k8s.io/apiserver/pkg/cel/library/semverlib.go over github.com/blang/semver/v4
(`Parse`, `Compare`; `normalizeAndParse` for `semver(s, true)`), and DRA's
`cel/compile.go`, which turns every `version` attribute into such a value. Build
metadata is ignored by `Compare`, as there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# How a semver travels through the CEL binding (`selectors`): a string with this mark
# in front, so that a plain string attribute is never taken for one. Not a NUL: the
# binding passes strings through C strings, which would end at one.
SEMVER_MARK = "\ue000semver:"
_NUMBER = re.compile(r"^[0-9]+$")
_IDENT = re.compile(r"^[0-9A-Za-z-]+$")


class SemverError(ValueError):
    """blang/semver's parse error, with its text."""


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    def text(self) -> str:
        """Canonical text without build metadata (which never takes part in a comparison)."""
        core = f"{self.major}.{self.minor}.{self.patch}"
        return core + ("-" + ".".join(self.pre) if self.pre else "")


def parse(text: str) -> Version:
    """blang/semver `Parse`: strict MAJOR.MINOR.PATCH[-pre][+build]."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    cut = min((i for i in (rest.find("+"), rest.find("-")) if i >= 0), default=len(rest))
    patch = _number(rest[:cut], "patch")
    pre: tuple[str, ...] = ()
    tail = rest[cut:]
    if tail.startswith("-"):
        pre_text, plus, build = tail[1:].partition("+")
        pre = tuple(pre_text.split("."))
        for part in pre:
            if not part or not _IDENT.match(part):
                raise SemverError(f"Invalid character(s) found in prerelease {part!r}")
            if _NUMBER.match(part) and len(part) > 1 and part[0] == "0":
                raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {part!r}")
        tail = "+" + build if plus else ""
    if tail.startswith("+"):
        for part in tail[1:].split("."):
            if not part or not _IDENT.match(part):
                raise SemverError(f"Invalid character(s) found in build meta data {part!r}")
    return Version(major, minor, patch, pre)


def _number(text: str, what: str) -> int:
    if not _NUMBER.match(text):
        raise SemverError(f"Invalid character(s) found in {what} number {text!r}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f"{what.capitalize()} number must not contain leading zeroes {text!r}")
    return int(text)


def parse_normalized(text: str) -> Version:
    """Upstream `normalizeAndParse` (`semver(s, true)`): `v` prefix, short forms, zeros."""
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or not part[0].isdigit():
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def compare(a: Version, b: Version) -> int:
    """blang/semver `Version.Compare`: -1, 0 or 1, pre-releases by semver precedence."""
    for x, y in ((a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)):
        if x != y:
            return 1 if x > y else -1
    if not a.pre or not b.pre:
        return (not a.pre) - (not b.pre)  # a release outranks its pre-releases
    for left, right in zip(a.pre, b.pre, strict=False):
        if left == right:
            continue
        left_num, right_num = bool(_NUMBER.match(left)), bool(_NUMBER.match(right))
        if left_num and right_num:
            return 1 if int(left) > int(right) else -1
        if left_num != right_num:
            return -1 if left_num else 1  # numeric identifiers sort first
        return 1 if left > right else -1
    return (len(a.pre) > len(b.pre)) - (len(a.pre) < len(b.pre))


def version_value(text: str) -> str:
    """A `version` attribute as CEL sees it: a semver value (upstream `cel/compile.go`)."""
    try:
        return SEMVER_MARK + parse(text).text()
    except SemverError:
        return SEMVER_MARK + text  # the apiserver refuses such an attribute anyway
