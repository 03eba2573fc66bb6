"""AdmissionReview in → response out, with stand-in rule sets (draguard.webhook.review)."""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from draguard.schema.advice.claims import Advice
from draguard.schema.model.errors import FieldError, duplicate, required, too_many
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import release
from draguard.schema.validate import Verdict
from draguard.webhook.review import (
    BadReview,
    Review,
    RuleSet,
    answer_mutate,
    answer_validate,
    parse_review,
    render_invalid,
)

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c"},
    "spec": {"devices": {"requests": [
        {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "a.example.com"}]},
    ]}},
}
REQUESTS = FieldPath.root("spec", "devices", "requests")
TWO_ERRORS = (
    duplicate(REQUESTS.index(1), "gpu"),
    required(REQUESTS.index(0).child("firstAvailable").index(0).child("deviceClassName")),
)


def review_doc(**request: Any) -> dict[str, Any]:
    body = {"uid": "u-1", "operation": "CREATE", "namespace": "ns", "object": CLAIM}
    body.update(request)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def encode(doc: Any) -> bytes:
    return json.dumps(doc).encode()


@dataclass
class StubRules:
    """Records calls and answers with a fixed verdict (or raises)."""

    errors: tuple[FieldError, ...] = ()
    advice: tuple[Advice, ...] = ()
    skipped: bool = False
    raises: Exception | None = None
    calls: list[tuple[str, Any, Any, Options]] = field(default_factory=list)

    def verdict(self, obj: dict[str, Any]) -> Verdict:
        if self.raises is not None:
            raise self.raises
        return Verdict(kind=obj.get("kind"), api_version=obj.get("apiVersion"),
                       name=obj.get("metadata", {}).get("name"), namespace=None, shape="v1",
                       errors=self.errors, skipped=self.skipped, warnings=self.advice,
                       skip_reason="not a claim" if self.skipped else "")

    def create(self, obj: Any, *, options: Options) -> Verdict:
        self.calls.append(("create", None, obj, options))
        return self.verdict(obj)

    def update(self, old: Any, new: Any, *, options: Options) -> Verdict:
        self.calls.append(("update", old, new, options))
        return self.verdict(new)

    def rules(self, **kwargs: Any) -> RuleSet:
        return RuleSet(release=release("1.35"), create=self.create, update=self.update, **kwargs)


@pytest.mark.parametrize(("body", "fragment"), [
    pytest.param(b"{", "not JSON", id="truncated-json"),
    pytest.param(b"\xff\xfe\x00", "not UTF-8", id="not-utf8"),
    pytest.param(encode(review_doc(uid="u")).replace(b'"u"', b'"\xed\xa0\x80u"'), "not UTF-8",
                 id="encoded-surrogate"),
    pytest.param(b"[]", "not a JSON object", id="json-array"),
    pytest.param(b'"review"', "not a JSON object", id="json-string"),
    pytest.param(encode({**review_doc(), "apiVersion": "admission.k8s.io/v1beta1"}),
                 "admission.k8s.io/v1", id="old-review-version"),
    pytest.param(encode({**review_doc(), "kind": "Pod"}), "AdmissionReview", id="wrong-kind"),
    pytest.param(encode({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
                 "request is missing", id="no-request"),
    pytest.param(encode(review_doc(uid=None)), "request.uid", id="no-uid"),
    pytest.param(encode(review_doc(uid="")), "request.uid", id="empty-uid"),
    pytest.param(encode(review_doc(uid=7)), "request.uid", id="numeric-uid"),
    pytest.param(encode(review_doc(operation="PATCH")), "operation", id="unknown-operation"),
    pytest.param(encode(review_doc(object=None)), "request.object", id="create-without-object"),
    pytest.param(encode(review_doc(object=[1])), "request.object", id="object-not-a-map"),
    pytest.param(encode(review_doc(operation="UPDATE")), "oldObject", id="update-without-old"),
    pytest.param(b"[" * 100_000, "not JSON", id="deep-nesting"),
])
def test_parse_review_rejects(body: bytes, fragment: str) -> None:
    """Each class of unreadable review is a BadReview whose message names the problem."""
    with pytest.raises(BadReview, match=fragment):
        parse_review(body)


def test_parse_review_reads_fields() -> None:
    """A v1 review yields its uid, operation, namespace, objects and dryRun flag."""
    doc = review_doc(operation="UPDATE", oldObject=CLAIM, dryRun=True, name="c")
    review = parse_review(encode(doc))
    assert review == Review(uid="u-1", operation="UPDATE", object=CLAIM, old_object=CLAIM,
                            namespace="ns", name="c", dry_run=True)


def test_delete_without_object_parses() -> None:
    """DELETE carries no object (only oldObject) and is still a readable review."""
    review = parse_review(encode(review_doc(operation="DELETE", object=None, oldObject=CLAIM)))
    assert review.object is None and review.old_object == CLAIM


def test_create_valid_is_allowed_and_echoes() -> None:
    """A valid claim is allowed; the response echoes uid, apiVersion and kind."""
    stub = StubRules()
    answer = answer_validate(parse_review(encode(review_doc())), rules=stub.rules(),
                             failure_mode="open")
    doc = answer.document
    assert (doc["apiVersion"], doc["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert doc["response"]["uid"] == "u-1"
    assert doc["response"]["allowed"] is True
    assert "status" not in doc["response"]
    assert answer.decision == "allowed"


def test_create_passes_release_and_request_namespace() -> None:
    """CREATE runs the create rules with the configured release and request.namespace as default."""
    stub = StubRules()
    answer_validate(parse_review(encode(review_doc(namespace="team-a"))), rules=stub.rules(),
                    failure_mode="open")
    [(which, _, obj, options)] = stub.calls
    assert which == "create" and obj == CLAIM
    assert options.default_namespace == "team-a"
    assert options.release == release("1.35")


def test_update_uses_old_object() -> None:
    """UPDATE runs the update rules on (oldObject, object)."""
    stub = StubRules()
    old = copy.deepcopy(CLAIM)
    old["metadata"]["labels"] = {"a": "b"}
    answer_validate(parse_review(encode(review_doc(operation="UPDATE", oldObject=old))),
                    rules=stub.rules(), failure_mode="open")
    [(which, got_old, got_new, _)] = stub.calls
    assert (which, got_old, got_new) == ("update", old, CLAIM)


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_delete_and_connect_are_allowed_unjudged(operation: str) -> None:
    """DELETE and CONNECT are allowed without running any rule."""
    stub = StubRules(errors=TWO_ERRORS)
    review = parse_review(encode(review_doc(operation=operation, oldObject=CLAIM)))
    answer = answer_validate(review, rules=stub.rules(), failure_mode="closed")
    assert answer.allowed and answer.decision == "ignored" and not stub.calls


def test_denial_renders_like_new_invalid() -> None:
    """A denial carries the Status of apimachinery NewInvalid: 422, Invalid, message, causes."""
    stub = StubRules(errors=TWO_ERRORS)
    answer = answer_validate(parse_review(encode(review_doc())), rules=stub.rules(),
                             failure_mode="open")
    status = answer.document["response"]["status"]
    assert answer.document["response"]["allowed"] is False
    assert answer.decision == "denied" and answer.findings == 2
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["status"] == "Failure"
    assert status["message"] == (
        'ResourceClaim.resource.k8s.io "c" is invalid: ['
        'spec.devices.requests[1]: Duplicate value: "gpu", '
        "spec.devices.requests[0].firstAvailable[0].deviceClassName: Required value]")
    assert status["details"] == {
        "name": "c", "group": "resource.k8s.io", "kind": "ResourceClaim",
        "causes": [
            {"reason": "FieldValueDuplicate", "message": 'Duplicate value: "gpu"',
             "field": "spec.devices.requests[1]"},
            {"reason": "FieldValueRequired", "message": "Required value",
             "field": "spec.devices.requests[0].firstAvailable[0].deviceClassName"},
        ]}


def test_single_error_message_is_bare() -> None:
    """One error is rendered without brackets, as ToAggregate does."""
    verdict = Verdict(kind="ResourceClaimTemplate", api_version="resource.k8s.io/v1",
                      name="t", namespace="ns", shape="v1",
                      errors=(too_many(REQUESTS, 33, 32),))
    assert render_invalid(verdict)["message"] == (
        'ResourceClaimTemplate.resource.k8s.io "t" is invalid: '
        "spec.devices.requests: Too many: 33: must have at most 32 items")


def test_create_adds_skew_warning() -> None:
    """An allowed prioritized claim carries the firstAvailable skew advice as a warning."""
    answer = answer_validate(parse_review(encode(review_doc())), rules=RuleSet(),
                             failure_mode="open")
    assert answer.document["response"]["warnings"] == [
        "spec.devices.requests[0].firstAvailable: request gpu uses firstAvailable: "
        "schedulers before 1.34 cannot allocate it"]


def test_rule_set_advice_is_sent_as_path_and_message() -> None:
    """The rule set's advice, skew advice included, is sent as `path: message` warnings."""
    advice = (Advice(REQUESTS.index(0), "quota-charge", "counts 3 devices against quota"),)
    answer = answer_validate(parse_review(encode(review_doc())),
                             rules=StubRules(advice=advice).rules(), failure_mode="open")
    assert answer.document["response"]["warnings"] == [
        "spec.devices.requests[0]: counts 3 devices against quota"]


def test_update_has_no_warnings() -> None:
    """UPDATE answers carry no warnings (the spec cannot change after create)."""
    advice = (Advice(REQUESTS.index(0), "quota-charge", "counts 3 devices against quota"),)
    review = parse_review(encode(review_doc(operation="UPDATE", oldObject=CLAIM)))
    answer = answer_validate(review, rules=StubRules(advice=advice).rules(), failure_mode="open")
    assert "warnings" not in answer.document["response"]


def test_unsupported_kind_is_allowed_with_warning() -> None:
    """A skipped object (not a known claim or template) is allowed, warned and marked skipped."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    answer = answer_validate(parse_review(encode(review_doc(object=pod))),
                             rules=StubRules(skipped=True).rules(), failure_mode="closed")
    assert answer.allowed and answer.decision == "skipped"
    [warning] = answer.document["response"]["warnings"]
    assert warning.startswith("draguard did not check Pod v1")


@pytest.mark.parametrize(("mode", "allowed", "code"), [
    pytest.param("open", True, None, id="fail-open"),
    pytest.param("closed", False, 500, id="fail-closed"),
])
def test_internal_error_follows_failure_mode(mode: Any, allowed: bool, code: int | None) -> None:
    """A crashing rule set gives a well-formed answer per failure mode, with the traceback kept."""
    stub = StubRules(raises=RuntimeError("boom"))
    answer = answer_validate(parse_review(encode(review_doc())), rules=stub.rules(),
                             failure_mode=mode)
    response = answer.document["response"]
    assert response["uid"] == "u-1" and response["allowed"] is allowed
    assert response.get("status", {}).get("code") == code
    assert answer.decision == "error"
    assert "RuntimeError: boom" in answer.error
    assert "boom" not in json.dumps(answer.document)  # internals stay in the log


def test_dry_run_answered_the_same() -> None:
    """dryRun does not change the answer."""
    stub = StubRules(errors=TWO_ERRORS)
    plain = answer_validate(parse_review(encode(review_doc())), rules=stub.rules(),
                            failure_mode="open")
    dry = answer_validate(parse_review(encode(review_doc(dryRun=True))), rules=stub.rules(),
                          failure_mode="open")
    assert plain.document == dry.document


@dataclass(frozen=True)
class StubMutation:
    patch: list[dict[str, Any]] = field(default_factory=list)
    errors: tuple[FieldError, ...] = ()
    warnings: tuple[Advice, ...] = ()


def test_mutate_without_policy_is_an_empty_patch() -> None:
    """Without a mutator /mutate allows the object with no patch."""
    answer = answer_mutate(parse_review(encode(review_doc())), rules=StubRules().rules(),
                           failure_mode="open")
    assert answer.allowed and "patch" not in answer.document["response"]


def test_mutate_encodes_patch_as_base64_json_patch() -> None:
    """A mutator's ops are sent base64-encoded with patchType JSONPatch."""
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
    rules = StubRules().rules(mutator=lambda obj, options: StubMutation(patch=ops))
    response = answer_mutate(parse_review(encode(review_doc())), rules=rules,
                             failure_mode="open").document["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == ops


def test_mutation_advice_is_sent_as_path_and_message() -> None:
    """The policy's advice reaches the answer as `path: message`, like the rule set's."""
    advice = (Advice(REQUESTS.index(0), "policy-not-expanded", "request 'gpu' was not expanded"),)
    rules = StubRules().rules(mutator=lambda obj, options: StubMutation(warnings=advice))
    answer = answer_mutate(parse_review(encode(review_doc())), rules=rules, failure_mode="open")
    assert answer.document["response"]["warnings"] == [
        "spec.devices.requests[0]: request 'gpu' was not expanded"]


def test_mutate_denies_with_mutation_errors() -> None:
    """A mutation whose result breaks the rules denies with the 422 Status."""
    rules = StubRules().rules(mutator=lambda obj, options: StubMutation(errors=TWO_ERRORS))
    answer = answer_mutate(parse_review(encode(review_doc())), rules=rules, failure_mode="open")
    assert not answer.allowed and answer.decision == "denied"
    assert answer.document["response"]["status"]["code"] == 422
    assert "patch" not in answer.document["response"]


def test_mutate_ignores_update() -> None:
    """UPDATE is never mutated (the spec is immutable after create)."""
    calls: list[Any] = []
    rules = StubRules().rules(mutator=lambda obj, options: calls.append(obj) or StubMutation())
    review = parse_review(encode(review_doc(operation="UPDATE", oldObject=CLAIM)))
    answer = answer_mutate(review, rules=rules, failure_mode="open")
    assert answer.allowed and answer.decision == "ignored" and not calls


def test_a_lone_surrogate_escape_reads_as_go_reads_it() -> None:
    """`\\ud800` in a review decodes to U+FFFD (Go's encoding/json); the rules then judge it."""
    claim = copy.deepcopy(CLAIM)
    claim.setdefault("metadata", {})["annotations"] = {"note": "\udc80"}
    body = json.dumps(review_doc(object=claim)).encode()  # ASCII: the surrogate escaped
    assert b"\\udc80" in body
    review = parse_review(body)
    assert review.object is not None
    assert review.object["metadata"]["annotations"] == {"note": "\ufffd"}
    answer = answer_validate(review, rules=RuleSet(release=release("1.35")), failure_mode="closed")
    assert answer.decision == "allowed"


def _warnings_of(obj: dict[str, Any], uid: str) -> list[str]:
    review = parse_review(encode(review_doc(uid=uid, object=obj)))
    answer = answer_validate(review, rules=RuleSet(), failure_mode="closed")
    warnings: list[str] = answer.document["response"].get("warnings", [])
    return warnings


def test_warnings_follow_each_claims_own_spec_and_annotations() -> None:
    """Warnings kept per remembered spec: claims from one template share them, and a
    claim with another spec or a silencing annotation gets its own."""
    gpu = copy.deepcopy(CLAIM)
    gpu["spec"]["devices"]["requests"][0]["firstAvailable"].append(
        {"name": "b", "deviceClassName": "b.example.com", "count": 2})
    first = _warnings_of(gpu, "u-1")
    assert any("firstAvailable" in w for w in first)
    assert any("different device counts" in w for w in first)
    renamed = copy.deepcopy(gpu)
    renamed["metadata"] = {"name": "other-pod-claim"}
    assert _warnings_of(renamed, "u-2") == first
    silenced = copy.deepcopy(gpu)
    silenced["metadata"] = {"name": "c", "annotations": {
        "draguard.io/ignore": "alternative-counts-differ"}}
    assert [w for w in _warnings_of(silenced, "u-3") if "different device counts" in w] == []
    exact = copy.deepcopy(CLAIM)
    exact["spec"]["devices"]["requests"] = [
        {"name": "gpu", "exactly": {"deviceClassName": "a.example.com"}}]
    assert not any("firstAvailable" in w for w in _warnings_of(exact, "u-4"))
    assert _warnings_of(gpu, "u-5") == first


def test_options_follow_each_reviews_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Options are kept per namespace, and a full cache drops old ones without mixing them."""
    from draguard.webhook import review as review_module

    monkeypatch.setattr(review_module, "OPTIONS_CACHE_BYTES", 1500)
    rules = RuleSet(release=release("1.34"))
    for namespace in ("a", "b", "c", "a", None, "b"):
        review = parse_review(encode(review_doc(namespace=namespace)))
        options = rules.options(review)
        assert (options.default_namespace, options.release) == (namespace, release("1.34"))
        assert options.remember_specs
    assert len(rules._options) <= 2


def test_options_cache_stays_within_its_byte_budget() -> None:
    """Namespaces of 100,000 characters each never grow the options cache past its budget."""
    from draguard.webhook.review import OPTIONS_CACHE_BYTES

    rules = RuleSet(release=release("1.34"))
    for index in range(30):
        namespace = f"{index:03}" + "n" * 100_000
        assert rules.options(Review("u", "CREATE", {}, namespace=namespace)).default_namespace \
            == namespace
        assert rules._options.info().bytes <= OPTIONS_CACHE_BYTES
    assert len(rules._options) < 30


def _advice(count: int, length: int) -> tuple[Advice, ...]:
    path = FieldPath.root("spec", "devices")
    return tuple(Advice(path.index(i), "alternative-counts-differ", "w" * length)
                 for i in range(count))


@pytest.mark.parametrize(("advice", "kept"), [
    pytest.param(_advice(2, 100), True, id="small-warnings-kept"),
    pytest.param(_advice(40, 250), False, id="large-warnings-rendered-again"),
])
def test_rendered_warnings_are_kept_only_when_small(advice: tuple[Advice, ...],
                                                    kept: bool) -> None:
    """A verdict keeps its rendered warnings only within WARNINGS_CACHE_MAX bytes."""
    from draguard.webhook.review import _WARNINGS, WARNINGS_CACHE_MAX, _warnings

    verdict = StubRules(advice=advice).verdict(CLAIM)
    rendered = _warnings(Review("u", "CREATE", CLAIM), verdict)
    assert rendered
    assert (_WARNINGS in verdict.derived) is kept
    assert sum(len(w) for w in verdict.derived.get(_WARNINGS, ())) <= WARNINGS_CACHE_MAX
