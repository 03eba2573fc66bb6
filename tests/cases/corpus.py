"""The example corpus as values: every document of tests/cases/*.yaml with its expectation.

Shared by the corpus harness and the peer cross-checks (tests/schema/test_cases.py,
test_peers_client.py, test_peers_validate.py); pytest puts this folder on the import
path (pyproject `pythonpath`), so any test file says `import corpus`.

Each document carries its own expectation, a `# expect:` comment block inside the
document (between its `---` and its first key), so inserting, removing or moving a
document cannot shift any other's. The format is in tests/cases/README.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from draguard.schema.model.options import Options
from draguard.schema.model.releases import DEFAULT_RELEASE, parse_feature_gates, release

CASES_DIR = Path(__file__).resolve().parent
EXPECT = "# expect:"
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
    # `--feature-gates` as the CLI takes it (e.g. "DRADerivedAttributes=true").
    feature_gates: str | None = None
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
        if self.kubernetes_version is None and self.feature_gates is None:
            return Options(namespace_labels=self.namespace_labels,
                           default_namespace=self.default_namespace)
        chosen = release(self.kubernetes_version or DEFAULT_RELEASE.name)
        gates = parse_feature_gates(self.feature_gates or "")
        assert not isinstance(gates, str), gates
        gated = chosen.with_gates(gates)
        assert not isinstance(gated, str), gated
        return Options(release=gated, namespace_labels=self.namespace_labels,
                       default_namespace=self.default_namespace,
                       feature_gates=frozenset(g for g, on in gates.items() if on))


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
        feature_gates=entry.get("feature_gates"),
        namespace_labels=entry.get("namespace_labels"),
        default_namespace=entry.get("default_namespace", DEFAULT_NAMESPACE),
        disputed=entry.get("disputed"),
        raw=entry,
    )


def corpus_files() -> list[Path]:
    """Every corpus file, in name order."""
    return sorted(CASES_DIR.glob("*.yaml"))


def document_texts(text: str) -> list[list[str]]:
    """The lines of each YAML document of a corpus file, split at its `---` lines."""
    chunks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("---"):
            chunks.append([])
        chunks[-1].append(line)
    return chunks if chunks[0] else chunks[1:]


def expectation(lines: list[str], where: str) -> Mapping[str, Any]:
    """The one `# expect:` block among a document's lines, read as YAML.

    The block is the `# expect:` line and the comment lines right after it that are
    indented under it (`#   valid: false`); `# ` is cut from each and the rest parsed.
    """
    heads = [i for i, line in enumerate(lines) if line.startswith(EXPECT)]
    if len(heads) != 1:
        raise ValueError(f"{where}: {len(heads)} `{EXPECT}` blocks, want exactly one")
    block = [lines[heads[0]]]
    for line in lines[heads[0] + 1:]:
        if not line.startswith("#  "):
            break
        block.append(line)
    entry = yaml.safe_load("\n".join(line[2:] for line in block))["expect"]
    if not isinstance(entry, dict) or "valid" not in entry:
        raise ValueError(f"{where}: `{EXPECT}` must be a mapping with `valid`: {entry!r}")
    return entry


def load_file(path: Path) -> list[Case]:
    """Every document of one corpus file with the expectation written inside it."""
    text = path.read_text(encoding="utf-8")
    documents = list(yaml.safe_load_all(text))
    chunks = document_texts(text)
    if len(chunks) != len(documents):
        raise ValueError(f"{path.name}: {len(chunks)} `---`-separated chunks "
                         f"but {len(documents)} YAML documents")
    return [_case(path.name, i, document, expectation(lines, f"{path.name} document {i}"))
            for i, (document, lines) in enumerate(zip(documents, chunks, strict=True))]


@cache
def load_cases() -> tuple[Case, ...]:
    """Every corpus document paired with its expectation; raise if one lacks it."""
    return tuple(case for path in corpus_files() for case in load_file(path))
