"""Field paths rendered exactly as the apiserver prints them (`upstream-rules.md` §0.3)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class MapKey(str):
    """A map key segment, rendered as `[key]` rather than `.key`."""

    __slots__ = ()


Segment = str | int


class FieldPath:
    """An immutable path such as `spec.devices.requests[0].name`.

    Children are built from the parent and never mutate it, so an error holding a
    path is complete the moment it is made (the apimachinery `field.Path` model).
    Immutable by convention (no method changes `parts`); a plain slotted class rather
    than a frozen dataclass because the rule set makes a path for every field it
    visits, and a frozen dataclass costs four times as much to build.
    """

    __slots__ = ("parts",)
    parts: tuple[Segment, ...]

    def __init__(self, parts: Iterable[Segment] = ()) -> None:
        self.parts = tuple(parts)

    @classmethod
    def root(cls, *names: str) -> FieldPath:
        return FieldPath(names)

    def child(self, *names: str) -> FieldPath:
        return FieldPath(self.parts + names)

    def index(self, i: int) -> FieldPath:
        return FieldPath((*self.parts, i))

    def key(self, k: str) -> FieldPath:
        return FieldPath((*self.parts, MapKey(k)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldPath) and self.parts == other.parts

    def __hash__(self) -> int:
        return hash(self.parts)

    def __iter__(self) -> Iterator[Segment]:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    def __str__(self) -> str:
        parts = self.parts
        key = (parts, tuple(map(type, parts)))
        text = _TEXTS.get(key)
        if text is None:
            if len(_TEXTS) >= _TEXTS_MAX:
                _TEXTS.clear()
            text = _TEXTS[key] = _render(parts)
        return text

    def __repr__(self) -> str:
        return f"FieldPath({str(self)!r})"

    def startswith(self, prefix: FieldPath) -> bool:
        return self.parts[: len(prefix.parts)] == prefix.parts


# The text of paths printed so far. Findings come back at the same few paths document
# after document (lint), and building the text costs three times this lookup. Keyed by
# the segments' types too: `MapKey("a")` equals "a" but prints as `[a]`.
_TEXTS: dict[tuple[tuple[Segment, ...], tuple[type, ...]], str] = {}
_TEXTS_MAX = 4096


def _render(parts: tuple[Segment, ...]) -> str:
    out: list[str] = []
    for part in parts:
        if isinstance(part, int | MapKey):
            out.append(f"[{part}]")
        elif out:
            out.append("." + part)
        else:
            out.append(part)
    return "".join(out)
