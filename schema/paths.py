"""Field paths rendered exactly as the apiserver prints them (`upstream-rules.md` §0.3)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


class MapKey(str):
    """A map key segment, rendered as `[key]` rather than `.key`."""

    __slots__ = ()


Segment = str | int


@dataclass(frozen=True, slots=True)
class FieldPath:
    """An immutable path such as `spec.devices.requests[0].name`.

    Children are built from the parent and never mutate it, so an error holding a
    path is complete the moment it is made (the apimachinery `field.Path` model).
    """

    parts: tuple[Segment, ...] = ()

    @classmethod
    def root(cls, *names: str) -> FieldPath:
        return cls(tuple(names))

    def child(self, *names: str) -> FieldPath:
        return FieldPath(self.parts + names)

    def index(self, i: int) -> FieldPath:
        return FieldPath((*self.parts, i))

    def key(self, k: str) -> FieldPath:
        return FieldPath((*self.parts, MapKey(k)))

    def __iter__(self) -> Iterator[Segment]:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    def __str__(self) -> str:
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, int | MapKey):
                out.append(f"[{part}]")
            elif out:
                out.append("." + part)
            else:
                out.append(part)
        return "".join(out)

    def __repr__(self) -> str:
        return f"FieldPath({str(self)!r})"

    def startswith(self, prefix: FieldPath) -> bool:
        return self.parts[: len(prefix.parts)] == prefix.parts

    def replace_prefix(self, old: FieldPath, new: FieldPath) -> FieldPath:
        """Move a path from under `old` to under `new` (path mapping across shapes)."""
        if not self.startswith(old):
            return self
        return FieldPath(new.parts + self.parts[len(old.parts) :])


def parse_path(text: str) -> FieldPath:
    """Parse the apiserver's rendering back into a path (`a.b[0][key].c`)."""
    parts: list[Segment] = []
    i = 0
    name = ""
    while i < len(text):
        ch = text[i]
        if ch == ".":
            if name:
                parts.append(name)
            name = ""
        elif ch == "[":
            if name:
                parts.append(name)
            name = ""
            end = text.index("]", i)
            inner = text[i + 1 : end]
            parts.append(int(inner) if inner.isdigit() else MapKey(inner))
            i = end
        else:
            name += ch
        i += 1
    if name:
        parts.append(name)
    return FieldPath(tuple(parts))
