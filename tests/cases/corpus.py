"""The example corpus as values: every document of tests/cases/*.yaml with its expectation.

Shared by the corpus harness and the peer cross-checks (tests/schema/test_cases.py,
test_peers_client.py, test_peers_validate.py); pytest puts this folder on the import
path (pyproject `pythonpath`), so any test file says `import corpus`.

The format of expected.yaml is documented at the top of that file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from draguard.schema.model.options import Options
from draguard.schema.model.releases import release

CASES_DIR = Path(__file__).resolve().parent
EXPECTED_FILE = CASES_DIR / "expected.yaml"
DEFAULT_NAMESPACE = "default"

UPSTREAM_VERSIONS = ("v1", "v1beta2", "v1beta1")
KINDS = ("ResourceClaim", "ResourceClaimTemplate")


@dataclass(frozen=True)
class Finding:
    """One expected error: its type and field, and optionally the exact rendered body."""

    type: str
    field: str
    message: str | None = None


@dataclass(frozen=True)
class Case:
    """One corpus document and what upstream (as written in the spec) says about it."""

    file: str
    index: int
    document: Any
    valid: bool
    rule: str
    errors: tuple[Finding, ...]
    kubernetes_version: str | None = None
    namespace_labels: Mapping[str, str] | None = None
    default_namespace: str | None = DEFAULT_NAMESPACE
    disputed: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def id(self) -> str:
        return f"{self.file}:{self.index}"

    @property
    def api_version(self) -> str:
        return str(self.document.get("apiVersion", ""))

    @property
    def version(self) -> str:
        """The resource.k8s.io version: `v1`, `v1beta2` or `v1beta1`."""
        return self.api_version.rpartition("/")[2]

    @property
    def kind(self) -> str:
        return str(self.document.get("kind", ""))

    @property
    def parallel(self) -> bool:
        """The parallel shape (contract §2): prioritized requests beside `requests`."""
        return "prioritizedRequests" in _devices(self.document)

    @property
    def options(self) -> Options:
        """The validation options this case asks for (newest release unless pinned)."""
        if self.kubernetes_version is None:
            return Options(namespace_labels=self.namespace_labels,
                           default_namespace=self.default_namespace)
        return Options(release=release(self.kubernetes_version),
                       namespace_labels=self.namespace_labels,
                       default_namespace=self.default_namespace)


def _devices(document: Any) -> Mapping[str, Any]:
    spec = document.get("spec") if isinstance(document, dict) else None
    if isinstance(spec, dict) and document.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    return devices if isinstance(devices, dict) else {}


def _finding(item: list[str]) -> Finding:
    if len(item) not in (2, 3):
        raise ValueError(f"an expected error is [type, field] or [type, field, message]: {item!r}")
    return Finding(*item)


def _case(file: str, index: int, document: Any, entry: Mapping[str, Any]) -> Case:
    return Case(
        file=file,
        index=index,
        document=document,
        valid=bool(entry["valid"]),
        rule=str(entry.get("rule", "")),
        errors=tuple(_finding(item) for item in entry.get("errors") or ()),
        kubernetes_version=entry.get("kubernetes_version"),
        namespace_labels=entry.get("namespace_labels"),
        default_namespace=entry.get("default_namespace", DEFAULT_NAMESPACE),
        disputed=entry.get("disputed"),
        raw=entry,
    )


def corpus_files() -> list[Path]:
    """Every corpus file, expected.yaml excluded, in name order."""
    return sorted(p for p in CASES_DIR.glob("*.yaml") if p != EXPECTED_FILE)


@cache
def load_cases() -> tuple[Case, ...]:
    """Pair every document with its expectation; raise if the two files disagree in shape."""
    expected = yaml.safe_load(EXPECTED_FILE.read_text(encoding="utf-8"))
    cases: list[Case] = []
    for path in corpus_files():
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        entries = expected.get(path.name)
        if entries is None or len(entries) != len(documents):
            got = None if entries is None else len(entries)
            raise ValueError(f"expected.yaml has {got} entries for {path.name}, "
                             f"which holds {len(documents)} documents")
        cases.extend(_case(path.name, i, d, e)
                     for i, (d, e) in enumerate(zip(documents, entries, strict=True)))
    unknown = set(expected) - {p.name for p in corpus_files()}
    if unknown:
        raise ValueError(f"expected.yaml names files that do not exist: {sorted(unknown)}")
    return tuple(cases)
