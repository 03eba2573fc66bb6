"""The cluster checks in a review (issue 20): when they run, how denials and warnings answer."""

from __future__ import annotations

from typing import Any

import pytest

from draguard.schema.advice.codes import Advice
from draguard.schema.cluster.checks import ClusterVerdict
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.validate import Verdict, validate_object
from draguard.webhook.review import Review, RuleSet, answer_validate

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "ns"},
    "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "a", "deviceClassName": "a.example.com"}]}]}},
}
INVALID: dict[str, Any] = {**CLAIM, "spec": {"devices": {"requests": [{"name": "GPU!"}]}}}
CLASS = FieldPath.root("spec", "devices", "requests").index(0).child(
    "firstAvailable").index(0).child("deviceClassName")
MISSING = Advice(CLASS, "class-missing", "request gpu/a: device class a.example.com does not exist")
STALE = Advice(FieldPath.root(), "cluster-view-stale", "the cluster view is still loading")


class Judge:
    """A stand-in for the cluster checks: a fixed verdict, and the objects it was asked about."""

    def __init__(self, verdict: ClusterVerdict) -> None:
        self.verdict = verdict
        self.seen: list[dict[str, Any]] = []

    def __call__(self, obj: dict[str, Any], options: Options,
                 verdict: Verdict) -> ClusterVerdict:
        self.seen.append(obj)
        return self.verdict


def judge(obj: dict[str, Any], verdict: ClusterVerdict, operation: str = "CREATE"
          ) -> tuple[dict[str, Any], Judge]:
    stand_in = Judge(verdict)
    review = Review(uid="u", operation=operation, object=obj,
                    old_object=obj if operation == "UPDATE" else None, namespace="ns")
    answer = answer_validate(review, rules=RuleSet(cluster=stand_in), failure_mode="open")
    response: dict[str, Any] = answer.document["response"]
    return response, stand_in


def test_a_denying_check_denies_with_its_path_message_and_code() -> None:
    """A check at level deny answers 422 Invalid with a Forbidden cause at the check's path."""
    response, _ = judge(CLAIM, ClusterVerdict((MISSING,), ()))
    assert response["allowed"] is False
    status = response["status"]
    assert status["code"] == 422 and status["reason"] == "Invalid"
    (cause,) = status["details"]["causes"]
    assert cause["field"] == str(CLASS)
    assert cause["reason"] == "FieldValueForbidden"
    assert cause["message"] == (f"Forbidden: {MISSING.message} (draguard cluster check "
                                "class-missing)")


def test_a_warning_check_allows_with_path_and_message() -> None:
    """A check at level warn is an AdmissionReview warning `path: message`, after the rules' own."""
    response, _ = judge(CLAIM, ClusterVerdict((), (MISSING,)))
    assert response["allowed"] is True
    assert response["warnings"][-1] == f"{CLASS}: {MISSING.message}"


def test_the_stale_warning_allows() -> None:
    """A stale or loading view adds its one warning and decides nothing."""
    response, _ = judge(CLAIM, ClusterVerdict((), (STALE,)))
    assert response["allowed"] is True
    assert response["warnings"][-1] == STALE.message


@pytest.mark.parametrize(("obj", "operation"), [
    pytest.param(CLAIM, "UPDATE", id="update"),
    pytest.param(INVALID, "CREATE", id="invalid-object"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "CREATE",
                 id="not-a-claim"),
])
def test_checks_run_only_on_create_of_a_valid_claim(obj: dict[str, Any], operation: str) -> None:
    """UPDATE (immutable spec, finalizer changes), invalid objects and other kinds are not checked."""
    response, stand_in = judge(obj, ClusterVerdict((MISSING,), (MISSING,)), operation)
    assert stand_in.seen == []
    assert "class-missing" not in str(response)


def test_cluster_warnings_follow_the_rule_set_warnings_within_the_limits() -> None:
    """Many cluster warnings are cut like every other: at most 4,096 characters in all."""
    many = tuple(Advice(CLASS, "attribute-unknown", "x" * 300) for _ in range(40))
    response, _ = judge(CLAIM, ClusterVerdict((), many))
    assert sum(len(w) for w in response["warnings"]) <= 4096
    assert all(len(w) <= 256 for w in response["warnings"])


def test_an_error_in_the_checks_follows_the_failure_mode() -> None:
    """A check that raises is an internal error, answered by the failure mode (open: allowed)."""
    def broken(obj: dict[str, Any], options: Options, verdict: Verdict) -> ClusterVerdict:
        raise RuntimeError("bug")

    review = Review(uid="u", operation="CREATE", object=CLAIM, namespace="ns")
    answer = answer_validate(review, rules=RuleSet(cluster=broken), failure_mode="closed")
    assert answer.decision == "error" and answer.allowed is False


class View:
    """A stand-in view: its generation and age set by the test."""

    def __init__(self) -> None:
        self.generation = 1
        self.age: float | None = 0.0

    def oldest_age(self) -> float | None:
        return self.age


def loaded_facts(*classes: str) -> Any:
    from draguard.schema.cluster.facts import ClusterFacts

    facts = ClusterFacts()
    facts.replace("DeviceClass", [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                   "metadata": {"name": name}, "spec": {}} for name in classes])
    for kind in ("ResourceSlice", "Namespace", "ResourceQuota"):
        facts.replace(kind, [])
    return facts


def codes(verdict: ClusterVerdict) -> list[str]:
    return [a.code for a in (*verdict.denials, *verdict.warnings)]


def test_checks_keep_a_verdict_per_generation_settings_and_namespace() -> None:
    """The memo answers while view generation, settings and namespace stay; else it recomputes."""
    from draguard.schema.cluster.checks import CheckSettings
    from draguard.webhook.app import ClusterChecks

    view, facts = View(), loaded_facts()
    settings = [CheckSettings()]
    checks = ClusterChecks(view, facts, lambda: settings[0])
    options = Options(default_namespace="ns")
    verdict = validate_object(CLAIM, options=options)
    assert "class-missing" in codes(checks(CLAIM, options, verdict))

    facts.replace("DeviceClass", [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                   "metadata": {"name": "a.example.com"}, "spec": {}}])
    assert "class-missing" in codes(checks(CLAIM, options, verdict))  # same generation: kept
    view.generation += 1
    assert "class-missing" not in codes(checks(CLAIM, options, verdict))

    settings[0] = CheckSettings(levels={"alternative-unsatisfiable": "deny"})
    assert checks(CLAIM, options, verdict).denials  # new settings: recomputed
    other = {**CLAIM, "metadata": {"name": "c", "namespace": "other"}}
    verdict.derived[ClusterChecks.MEMO] = ((view.generation, settings[0], "other"), "kept")
    assert checks(other, options, verdict) == "kept"  # the object's namespace is the key
    assert checks(CLAIM, options, verdict) != "kept"  # CLAIM's own namespace, ns, is not


@pytest.mark.parametrize("age", [None, 301.0])
def test_loading_or_stale_view_gives_one_warning_and_no_checks(age: float | None) -> None:
    """While loading (no age) or older than the bound, only `cluster-view-stale` is returned."""
    from draguard.schema.cluster.checks import CheckSettings
    from draguard.webhook.app import ClusterChecks

    view = View()
    view.age = age
    checks = ClusterChecks(view, loaded_facts(), lambda: CheckSettings())
    options = Options(default_namespace="ns")
    verdict = checks(CLAIM, options, validate_object(CLAIM, options=options))
    assert verdict.denials == () and codes(verdict) == ["cluster-view-stale"]


def test_all_checks_off_means_no_stale_warning_either() -> None:
    """With every cluster code off the view's state does not matter: nothing is said."""
    from draguard.schema.cluster.checks import CLUSTER_CODES, CheckSettings
    from draguard.webhook.app import ClusterChecks

    view = View()
    view.age = None
    off = CheckSettings(levels=dict.fromkeys(CLUSTER_CODES, "off"))
    checks = ClusterChecks(view, loaded_facts(), lambda: off)
    options = Options(default_namespace="ns")
    assert codes(checks(CLAIM, options, validate_object(CLAIM, options=options))) == []
