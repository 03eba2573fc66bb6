"""Manifests that are templates, not YAML yet: Helm `{{ }}`, `${VAR}`, `@@VAR@@`.

Such a text is meant for a renderer (helm template, envsubst, a build's token
replacement); read as YAML it fails (`name: {{ .Values.name }}` is a flow mapping
with a mapping as key) or, worse, passes with the placeholder as a value. Every command
asks `find` first and gives one answer for such a document (issue 17): it looks like a
template, render it first, with the line of the first placeholder.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# A placeholder on a line that is not a comment. `{{` opens a Go/Helm action (also
# `{{-`); `${NAME}` is envsubst's and the shells' (with `:-default` and the like);
# `@@NAME@@` a common build-time token. None of them is valid JSON outside a string,
# and no DRA field holds one: CEL has no `{{` (a map key cannot be a map) and no `${`.
_PLACEHOLDER = re.compile(
    r"^(?![ \t]*#)[^\n]*?"
    r"(?P<mark>\{\{|\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[-=?+][^}\n]*)?\}|@@[A-Za-z_][A-Za-z0-9_.-]*@@)",
    re.M,
)
_KINDS = {"{": "Helm/Go template {{ }}", "$": "variable ${...}", "@": "token @@...@@"}


class Placeholder(NamedTuple):
    """The first placeholder of a text: 0-based line and column, and what it is."""

    line: int
    column: int
    text: str

    @property
    def message(self) -> str:
        kind = _KINDS[self.text[0]]
        return (f"this looks like a template ({kind}: {self.text}): render it first "
                "(helm template, envsubst or the like) and check the output")


def find(text: str) -> Placeholder | None:
    """The first placeholder outside comments, or None (the usual case, one scan)."""
    # Each mark's first character is looked for first: a one-character `in` is a memchr,
    # a two-character one a plain loop over the text, and most texts have no `$` or `@`
    # at all (issue 21: the three loops were a visible share of reading a document).
    if not (("{" in text and "{{" in text) or ("$" in text and "${" in text)
            or ("@" in text and "@@" in text)):
        return None
    match = _PLACEHOLDER.search(text)
    if match is None:
        return None
    start = match.start("mark")
    line = text.count("\n", 0, start)
    column = start - (text.rfind("\n", 0, start) + 1)
    mark = match["mark"]
    return Placeholder(line, column, mark if mark != "{{" else _action(text, start))


def _action(text: str, start: int) -> str:
    """A Helm action as written, up to its `}}` on the same line (else its opening)."""
    stop = text.find("\n", start)
    end = text.find("}}", start, stop if stop >= 0 else len(text))
    action = text[start : end + 2] if end >= 0 else "{{"
    return action if len(action) <= 60 else action[:57] + "..."
