"""A `kind: List` read item by item gives exactly the results of the List read whole."""

from __future__ import annotations

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draguard.schema import lint
from draguard.schema.model.options import Options
from draguard.schema.read.lists import cut_list
from draguard.schema.read.sources import Source, split_documents
from draguard.schema.report import DocumentResult

OPTIONS = Options(default_namespace="default")

CLAIM = """\
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata:
    name: c{n}
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - name: big
          deviceClassName: gpu.example.com
          allocationMode: All
        - name: small
          deviceClassName: gpu.example.com
          count: {count}
"""


def _claims(count: int, indent: str = "") -> str:
    return "".join(
        "".join(indent + line + "\n" for line in CLAIM.format(n=n, count=n % 3).splitlines())
        for n in range(count)
    )


KUBECTL = f"apiVersion: v1\nitems:\n{_claims(3)}kind: List\nmetadata:\n  resourceVersion: \"\"\n"

CASES = [
    pytest.param(KUBECTL, True, id="kubectl"),
    pytest.param(f"apiVersion: v1\nkind: List\nitems:\n{_claims(3, '  ')}", True,
                 id="dashes-indented"),
    pytest.param("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimList\nitems:\n"
                 "- metadata: {name: a}\n  spec: {devices: {requests: [{name: r}]}}\n"
                 "- metadata:\n    name: b\n", True, id="typed-list-inherits"),
    pytest.param(f"apiVersion: v1\nkind: List\nitems:\n{_claims(1)}# a comment\n\n"
                 f"{_claims(2)}", True, id="comments-between-items"),
    pytest.param(f"apiVersion: v1\nkind: List\nitems:\n{_claims(1)}- kind: Service\n"
                 "  metadata: {name: s}\n- plain\n", False, id="scalar-item-whole"),
    pytest.param(f"apiVersion: v1\nkind: List\nitems:\n{_claims(1)}- a: [1\n", False,
                 id="broken-item-whole"),
    pytest.param(f"apiVersion: v1\nkind: List\nitems:\n{_claims(1)}- &a {{kind: X}}\n- *a\n",
                 None, id="anchors-not-cut"),
    pytest.param(f"apiVersion: v1\nkind: List\nitems:\n{_claims(1)}items:\n{_claims(1)}",
                 None, id="duplicate-items-not-cut"),
    pytest.param(f"apiVersion: v1\nkind: ConfigMap\nitems:\n{_claims(2)}", False,
                 id="not-a-list"),
    pytest.param("apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1\n"
                 "  kind: ResourceClaim\n  metadata: {name: x}\n  spec:\n    devices:\n"
                 "      requests:\n      - name: r\n        exactly: {deviceClassName: \"\"}\n"
                 "  note: |\n    text\n    more\n...\n", True, id="flow-block-scalar-end"),
    pytest.param(f"apiVersion: v1\nkind: List\nitems:\n{_claims(2)}metadata: {{}}\n"
                 "kind: List\n", True, id="duplicate-kind-in-head"),
]


def _run(text: str, *, cut: bool, jobs: int = 1) -> list[DocumentResult]:
    chunks = split_documents(Source("f.yaml", "kind: Service\n---\n" + text, "yaml"))
    if cut:
        return lint.run(chunks, options=OPTIONS, jobs=jobs)
    original = lint._cut
    lint._cut = lambda chunk: None  # type: ignore[assignment]
    try:
        return lint.run(chunks, options=OPTIONS, jobs=jobs)
    finally:
        lint._cut = original


@pytest.mark.parametrize(("text", "read_by_items"), CASES)
def test_cut_list_gives_the_results_of_the_whole_list(
    text: str, read_by_items: bool | None
) -> None:
    whole = _run(text, cut=False)
    assert _run(text, cut=True) == whole
    if read_by_items is not None:
        assert any(r.item is not None for r in whole) or not read_by_items
    chunk = split_documents(Source("f.yaml", text, "yaml"))[0]
    if read_by_items is None:
        assert cut_list(text) is None or lint._cut(chunk) is None
    elif read_by_items:
        assert lint._cut(chunk) is not None


def test_cut_list_items_shared_over_processes() -> None:
    """A List's items are spread over processes like documents, with the same results."""
    text = f"apiVersion: v1\nitems:\n{_claims(300)}kind: List\n"
    assert _run(text, cut=True, jobs=2) == _run(text, cut=False)


def test_cut_keeps_lines_and_columns() -> None:
    """An item's text keeps its lines (from the document's start) and columns."""
    cut = cut_list(KUBECTL)
    assert cut is not None
    assert [item.line for item in cut.items] == [2, 17, 32]
    assert cut.items[0].text(KUBECTL).startswith("  apiVersion: resource.k8s.io/v1\n  kind:")
    assert cut.head == "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n"


# Pieces of item text, written at dash column 0; `_list_text` indents them for column 2.
PIECES = [
    CLAIM.format(n=7, count=2),
    CLAIM.format(n=8, count=0),
    "- kind: Service\n  metadata: {name: s}\n",
    "- apiVersion: resource.k8s.io/v1\n  kind: ResourceClaim\n  spec: {devices: {requests: "
    "[{name: r, exactly: {deviceClassName: c}}, {name: r}]}}\n",
    "- apiVersion: resource.k8s.io/v1\n  kind: ResourceClaim\n  note: |\n    kept\n\n    "
    "text\n  metadata:\n    name: n\n",
    "- plain scalar\n",
    "-\n",
    "- - nested\n",
    "# a comment at column 0\n",
    "\n",
    "- a: 'quoted\n    over lines'\n",
    "- {kind: ResourceClaim, apiVersion: resource.k8s.io/v1, spec: 3}\n",
    "- a: [1,\n  2\n",
]


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=6),
       indent=st.sampled_from(["", "  "]),
       kind=st.sampled_from(["List", "ResourceClaimList", "ConfigMap"]),
       tail=st.sampled_from(["", "metadata: {}\n", "kind: List\n", "x: 1\n"]))
def test_any_list_cut_gives_the_results_of_the_whole_list(
    pieces: list[str], indent: str, kind: str, tail: str
) -> None:
    """Whatever the items (scalars, comments, broken ones), the cut changes no result."""
    items = "".join("".join(indent + line + "\n" if line else "\n"
                            for line in piece.split("\n")[:-1]) for piece in pieces)
    text = f"apiVersion: v1\nkind: {kind}\nitems:\n{items}{tail}"
    assert _run(text, cut=True) == _run(text, cut=False)


@pytest.mark.parametrize(("extra", "cut"), [
    pytest.param("  note: !!str x\n", False, id="tag"),
    pytest.param("  note: &a x\n", False, id="anchor"),
    pytest.param("  note: *a\n", False, id="alias"),
    pytest.param("  note:\tx\n", False, id="tab"),
    pytest.param("  note: a*b&c!d%e\n", True, id="marks-inside-a-scalar"),
    pytest.param("  note: 100%\n", True, id="mark-at-a-scalar-end"),
])
def test_cut_refuses_what_an_item_cannot_read_alone(extra: str, cut: bool) -> None:
    """Anchors, aliases, tags and tabs send the List to a whole parse; the same characters
    inside a plain scalar do not."""
    text = KUBECTL.replace("  kind: ResourceClaim\n", "  kind: ResourceClaim\n" + extra, 1)
    assert (cut_list(text) is not None) is cut


def test_detached_item_reads_as_the_item_in_its_list() -> None:
    """An item sent to a worker that did not fork holds its own text only, and is the
    same chunk (text, line, column) as when sliced from its List."""
    text = "kind: Service\n---\n" + KUBECTL
    chunk = split_documents(Source("f.yaml", text, "yaml"))[1]
    items = lint._cut(chunk)
    assert items is not None
    for unit in items:
        alone = unit.detached()
        assert len(alone.document.text) < len(chunk.text)
        assert alone.chunk() == unit.chunk()
        assert alone.chunk().line == chunk.line + unit.place.line
