"""A key written twice is the same error with both lines, whichever reader reads it (issue 17).

Three YAML readers: the fast block reader (`blockyaml`) hands a document with a repeated
key to the libyaml event reader (`yamlevents._build`), and a document the event reader
does not build itself (merge keys, custom tags) goes to PyYAML (`_load_fallback`).
kubectl keeps the last value in silence (kubernetes#125885, #99286, #89303); the
apiserver's strict decoding refuses the body (`duplicate field "…"`, apimachinery
pkg/runtime/serializer/json strict mode).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from draguard.schema.cli import lint as lint_cli
from draguard.schema.read import blockyaml, yamlevents
from draguard.schema.read.duplicates import Duplicate

HEAD = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: one\n"
# Lines 11 and 12 (1-based) hold the two `count`s.
BLOCK = HEAD + ("spec:\n  devices:\n    requests:\n    - name: r\n      exactly:\n"
                "        deviceClassName: c\n        count: 1\n        count: 2\n")
# Flow style is not plain block YAML: the event reader reads it.
EVENTS = HEAD + ("spec:\n  devices:\n    requests:\n    - {name: r, exactly: {deviceClassName: c,\n"
                 "        count: 1,\n        count: 2}}\n")
# A merge key sends the document to PyYAML; the key written beside the merge overrides
# the merged one (YAML merge semantics), only `count` is written twice.
FALLBACK = HEAD + ("spec:\n  devices:\n    requests:\n    - name: r\n      exactly:\n"
                   "        <<: {deviceClassName: merged}\n        count: 1\n        count: 2\n"
                   "        deviceClassName: c\n")
WHERE = ("spec", "devices", "requests", 0, "exactly", "count")


def _reader(text: str) -> str:
    if blockyaml.load(text) is not None:
        return "blockyaml"
    try:
        yamlevents._build(text, [])
    except yamlevents._Fallback:
        return "pyyaml"
    return "events"


@pytest.mark.parametrize(
    ("text", "reader", "lines"),
    [
        pytest.param(BLOCK, "events", (11, 12), id="fast-reader-hands-over"),
        pytest.param(EVENTS, "events", (9, 10), id="event-reader"),
        pytest.param(FALLBACK, "pyyaml", (11, 12), id="pyyaml-fallback"),
    ],
)
def test_each_reader_records_the_duplicate(text: str, reader: str, lines: tuple[int, int]) -> None:
    assert _reader(text) == reader
    found: list[Duplicate] = []
    value, _ = yamlevents.load_with_positions(text, found)
    assert [(d.path, d.first_line + 1, d.line + 1) for d in found] == [(WHERE, *lines)]
    assert value["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2  # kubectl's value


@pytest.mark.parametrize(("text", "lines"), [(BLOCK, (11, 12)), (EVENTS, (9, 10)), (FALLBACK, (11, 12))])
def test_lint_gives_the_same_error_for_each_reader(tmp_path: Path, text: str,
                                                   lines: tuple[int, int]) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    out = io.StringIO()
    assert lint_cli.main([str(path)], stdout=out, stderr=io.StringIO()) == 1
    first, last = lines
    assert (f'spec.devices.requests[0].exactly.count: Malformed value: duplicate key "count" '
            f"(lines {first} and {last}): the apiserver's strict decoding refuses it (duplicate "
            f'field "count"); kubectl silently sends the last value (line {last})') in out.getvalue()


def test_fallback_keeps_merge_keys_and_aliases_quiet() -> None:
    """A merged key overridden beside the merge, and an alias used twice, are no repeats."""
    text = ("base: &b {x: 1, y: 2}\none:\n  <<: *b\n  x: 3\ntwo: *b\nthree: *b\n")
    found: list[Duplicate] = []
    value, positions = yamlevents.load_with_positions(text, found)
    assert positions is None  # the PyYAML fallback read it
    assert found == []
    assert value["one"] == {"x": 3, "y": 2}
