"""`CODES` against what is emitted: every code fires on some document, nothing emits an unlisted one.

Two views: the source (every `Advice(...)` in `schema/` and `webhook/` names its code as
a literal or through `FIELD_CODES`, and together they are exactly `CODES`) and behaviour
(`draguard lint`, the mutation policy and the webhook's review over the documents below
emit every code, and lint over the corpus nothing outside `CODES`).
"""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path
from typing import Any

import corpus
import pytest
import yaml

from draguard.schema.advice.codes import CODES, IGNORE_ANNOTATION, Advice
from draguard.schema.advice.skew import FIELD_CODES
from draguard.schema.cli import lint as lint_cli
from draguard.schema.cluster.checks import CheckSettings, check_object, stale_advice
from draguard.schema.cluster.facts import facts_from_objects
from draguard.schema.model.options import Options
from draguard.schema.model.releases import release
from draguard.schema.policy.file import parse_policy
from draguard.schema.policy.mutation import mutate
from draguard.webhook import review as webhook_review

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (ROOT / "schema", ROOT / "webhook")
CLUSTER = Path(__file__).resolve().parents[1] / "cluster"


def alt(name: str, cls: str = "gpu.example.com", **fields: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassName": cls, **fields}


def claim(name: str, requests: list[dict[str, Any]], *, kind: str = "ResourceClaim",
          **devices: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"devices": {"requests": requests, **devices}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec}


def pod(request: str, *claims: dict[str, str]) -> dict[str, Any]:
    container = {"name": "c", "resources": {"claims": [{"name": "gpus", "request": request}]}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"resourceClaims": list(claims), "containers": [container]}}


GPU = {"name": "gpu", "firstAvailable": [alt("big"), alt("small")]}
OPAQUE = {"opaque": {"driver": "gpu.example.com", "parameters": {"x": 1}}}
TOLERATION = [{"key": "k", "operator": "Exists"}]

# One input per lint run: (extra lint arguments, documents).
RUNS: list[tuple[list[str], list[dict[str, Any]]]] = [
    ([], [
        claim("parent", [GPU, {"name": "nic", "exactly": {"deviceClassName": "nic"}}],
              config=[{"requests": ["gpu"], **OPAQUE}]),
        claim("quota", [{"name": "gpu", "firstAvailable": [alt("h", "h100"),
                                                          alt("a", "a100", count=2)]}]),
        claim("all", [{"name": "gpu", "firstAvailable": [alt("a"),
                                                        alt("b", allocationMode="All")]}]),
        claim("many", [{"name": f"r{k}", "firstAvailable": [
            alt(f"s{j}", count=20 if j == 0 else 1) for j in range(5)]} for k in range(3)]),
        claim("t", [GPU], kind="ResourceClaimTemplate"),
        pod("gpu/big", {"name": "gpus", "resourceClaimTemplateName": "t"}),
        claim("skew", [
            {"name": "gpu", "firstAvailable": [alt("a", tolerations=TOLERATION),
                                               alt("b", capacity={"requests": {"m": "1"}})]},
            {"name": "nic", "exactly": {"deviceClassName": "nic", "adminAccess": True}}],
            constraints=[{"requests": ["gpu/a", "nic"], "matchAttribute": "x.io/y"},
                         {"distinctAttribute": "x.io/y"}]),
    ]),
    (["--profile", "kueue", "--kubernetes-version", "1.35.5"], [
        claim("t", [GPU], kind="ResourceClaimTemplate"),
        claim("shared", [GPU]),
        pod("gpu", {"name": "gpus", "resourceClaimTemplateName": "t"},
            {"name": "other", "resourceClaimName": "shared"}),
    ]),
    (["--kubernetes-version", "1.35"],
     [claim("dropped", [{"name": "nic", "exactly": {"deviceClassName": "nic",
                                                     "tolerations": TOLERATION}}])]),
    (["--kubernetes-version", "1.34.1"],
     [claim("old", [GPU, {"name": "nic", "exactly": {"deviceClassName": "nic"}}])]),
]


# The mutation policy's codes: (policy text, release, documents).
POLICY = """
catalog:
  gpu.example.com:
    original: replace
    alternatives: [{name: h100, deviceClassName: h100.example.com}]
  nic.example.com:
    alternatives: [{name: fast, deviceClassName: fast.example.com}]
limits: {maxAlternatives: 1}
"""
NIC_POLICY = "catalog: {nic.example.com: {alternatives: [{name: fast, deviceClassName: f.io}]}}"
MUTATIONS: list[tuple[str, str, list[dict[str, Any]]]] = [
    (POLICY, "1.37", [
        claim("kept", [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                   "count": 2}}]),
        claim("trim", [GPU]),
    ]),
    ("{}", "1.37", [
        claim("refs", [{"name": f"g{i}", "firstAvailable": [alt(f"s{j}") for j in range(8)]}
                       for i in range(5)],
              config=[{"requests": [f"g{i}" for i in range(5)], **OPAQUE}]),
    ]),
    # Expanded where firstAvailable is dropped (1.33): denied, and the denial explains
    # the expansion.
    (NIC_POLICY, "1.33", [{**claim("nic", [{"name": "nic", "exactly": {
        "deviceClassName": "nic.example.com"}}]), "apiVersion": "resource.k8s.io/v1beta2"}]),
]


def mutation_codes(text: str, version: str, documents: list[dict[str, Any]]) -> set[str]:
    policy = parse_policy(text)
    options = Options(release=release(version))
    return {w.code for obj in documents for w in mutate(obj, policy=policy,
                                                        options=options).warnings}


def lint_codes(tmp_path: Path, argv: list[str], documents: list[Any]) -> set[str]:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    return lint_json_codes([*argv, str(path)])


def lint_json_codes(argv: list[str]) -> set[str]:
    out, err = io.StringIO(), io.StringIO()
    code = lint_cli.main(["--output", "json", "--jobs", "1", *argv], stdout=out, stderr=err)
    assert code in (0, 1), err.getvalue()
    results = json.loads(out.getvalue())["results"]
    return {w["code"] for r in results for w in r.get("warnings", [])}


def cluster_codes() -> set[str]:
    """The cluster checks (issue 20) over tests/cluster's claims and objects, every code at
    warn, and the webhook's stale-view warning."""
    facts = facts_from_objects(yaml.safe_load_all((CLUSTER / "objects" / "cluster.yaml").read_text()))
    claims = yaml.safe_load_all((CLUSTER / "claims" / "claims.yaml").read_text())
    verdicts = [check_object(c, facts, CheckSettings(), options=Options()) for c in claims]
    return {a.code for v in verdicts for a in v.warnings} | {
        stale_advice(None, CheckSettings()).code}


def test_every_code_is_emitted_by_some_document(tmp_path: Path) -> None:
    """Each code in `CODES` fires through lint, the mutation policy or the cluster checks."""
    emitted: set[str] = cluster_codes()
    emitted |= lint_json_codes(["--cluster-objects", str(CLUSTER / "objects"),
                                str(CLUSTER / "claims")])
    for k, (argv, documents) in enumerate(RUNS):
        (tmp_path / str(k)).mkdir()
        emitted |= lint_codes(tmp_path / str(k), argv, documents)
    for text, version, documents in MUTATIONS:
        emitted |= mutation_codes(text, version, documents)
    emitted |= {code for code, _ in webhook_warnings(ignore="")}
    assert sorted(set(CODES) - emitted) == []
    assert sorted(emitted - set(CODES)) == []


def test_corpus_emits_only_listed_codes() -> None:
    """Over the whole corpus, lint emits no code missing from `CODES`."""
    files = [str(p) for p in corpus.corpus_files()]
    assert sorted(lint_json_codes(files) - set(CODES)) == []


def advice_codes_in_source() -> set[str]:
    """The codes every `Advice(...)` call in schema/ and webhook/ names (literal, or a
    FIELD_CODES entry)."""
    found: set[str] = set()
    for path in sorted(p for folder in SOURCES for p in folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _named(node.func, "Advice"):
                found |= _code_of(node, path)
    return found


def _named(func: ast.expr, name: str) -> bool:
    return (isinstance(func, ast.Name) and func.id == name) or (
        isinstance(func, ast.Attribute) and func.attr == name)


def _code_of(call: ast.Call, path: Path) -> set[str]:
    code = next((k.value for k in call.keywords if k.arg == "code"), None)
    if code is None and len(call.args) >= 2:
        code = call.args[1]
    if isinstance(code, ast.Constant) and isinstance(code.value, str):
        return {code.value}
    if isinstance(code, ast.Subscript) and _named(code.value, "FIELD_CODES"):
        key = code.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return {FIELD_CODES[key.value]}
    if isinstance(code, ast.Attribute) and code.attr == "code":
        return set()  # a copy of an existing Advice at another path (validate.py)
    pytest.fail(f"{path.name}:{call.lineno}: Advice code is not a literal: {ast.dump(code)}"
                if code is not None else f"{path.name}:{call.lineno}: Advice without a code")


def test_source_codes_are_exactly_codes() -> None:
    """Statically, the codes `Advice(...)` calls name are exactly `CODES`."""
    assert sorted(advice_codes_in_source()) == sorted(CODES)


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}


def webhook_warnings(*, ignore: str) -> list[tuple[str, str]]:
    """(code, text) of each warning the webhook gives about a review as a whole: a skipped
    object, an internal error and a timeout in failure mode open, the object annotated
    `draguard.io/ignore: <ignore>`."""
    emitted: list[Advice] = []

    def recording(item: Advice) -> str:
        emitted.append(item)
        return render(item)

    render = webhook_review.render_advice
    meta = {**POD["metadata"], "annotations": {IGNORE_ANNOTATION: ignore}}
    obj = {**POD, "metadata": meta}
    review = webhook_review.Review(uid="u", operation="CREATE", object=obj, namespace="ns")

    def crash(*_: Any, **__: Any) -> Any:
        raise RuntimeError("boom")

    answers = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(webhook_review, "render_advice", recording)
        rules = webhook_review.RuleSet()
        answers.append(webhook_review.answer_validate(review, rules=rules, failure_mode="open"))
        crashing = webhook_review.RuleSet(create=crash)
        answers.append(webhook_review.answer_validate(review, rules=crashing, failure_mode="open"))
        answers.append(webhook_review.answer_timed_out(review, "open", 2.0))
    texts = [w for a in answers for w in a.document["response"].get("warnings", [])]
    assert texts == [render(item) for item in emitted]  # silenced advice is never rendered
    return [(item.code, render(item)) for item in emitted]


def test_webhook_review_warnings_keep_their_texts() -> None:
    """The webhook's review-wide warnings carry codes and keep their texts (no field prefix)."""
    assert webhook_warnings(ignore="") == [
        ("not-checked", "draguard did not check Pod v1: Pod is not a DRA claim or template"),
        ("failure-open-error", "draguard had an internal error and allowed the object "
                               "unchecked (failure mode open)"),
        ("failure-open-timeout", "draguard did not finish checking within 2 s and allowed "
                                 "the object unchecked (failure mode open)"),
    ]


def test_annotation_silences_not_checked_but_never_failure_open() -> None:
    """`draguard.io/ignore` silences `not-checked`; the failure-mode-open warnings stay."""
    codes = [code for code, _ in webhook_warnings(
        ignore="not-checked,failure-open-error,failure-open-timeout")]
    assert codes == ["failure-open-error", "failure-open-timeout"]
