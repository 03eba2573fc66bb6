"""AdmissionReview in, AdmissionReview out: pure functions, no Flask, no I/O.

Two error channels, as in kopf's admission engine: a review that cannot be read is
`BadReview` (the HTTP layer answers 400); an object that breaks the rules is a
well-formed response with `allowed: false` and the apiserver's own Status (422,
reason Invalid, causes). The rule set and the mutator are parameters so that every
branch, the internal-error one included, is table-testable.
"""

from __future__ import annotations

import base64
import json
import traceback
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from draguard.schema.advice.codes import Advice, ignored_codes
from draguard.schema.cluster.checks import ClusterVerdict
from draguard.schema.model.bounded import ByteBudgetCache, text_bytes
from draguard.schema.model.errors import FieldError, aggregate_message, forbidden, go_quote
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath
from draguard.schema.model.releases import DEFAULT_RELEASE, GROUP, Release
from draguard.schema.read import jsondecode
from draguard.schema.validate import Verdict, validate_object, validate_update
from draguard.webhook.config import FailureMode

API_VERSION = "admission.k8s.io/v1"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
# Deeper bodies are refused (400): json.loads stops near 1,000 levels anyway, and the
# recursive steps after it (deepcopy, the JSON-patch diff) needed headroom below that:
# opaque parameters 900 levels deep made /mutate an internal error (tests/hostile).
# Real claims nest about 10 levels; driver parameters rarely more than a few.
MAX_NESTING = 200
# Echo bounds: a name as long as a DNS subdomain (253) passes whole; one cause message
# as long as one apiserver warning (4,096); the whole status message four times that.
MAX_NAME_ECHO = 253
MAX_MESSAGE_ECHO = 4096
MAX_STATUS_MESSAGE = 16384

# Warnings are bounded as the apiserver bounds them: each item is cut at 256 characters
# and the total stays within 4,096 (Kubernetes "admission webhook warnings" guidance;
# more is dropped by the apiserver anyway).
MAX_WARNING_CHARS = 256
MAX_TOTAL_CHARS = 4096

# `allowed`/`denied`: judged; `skipped`: not a claim or template draguard knows (allowed,
# with a warning); `ignored`: DELETE/CONNECT; `error`: an internal error, answered per
# the failure mode; `timeout`: not judged within the review deadline, answered likewise.
Decision = Literal["allowed", "denied", "skipped", "ignored", "error", "timeout"]


class BadReview(ValueError):
    """The body is not a usable AdmissionReview; the message says why (HTTP 400)."""


class Review(NamedTuple):
    """The parts of an AdmissionReview request that draguard reads.

    Named tuples (this and `Answer`): made once per request, in a third of a frozen
    dataclass's time.
    """

    uid: str
    operation: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None = None
    namespace: str | None = None
    name: str | None = None
    dry_run: bool = False


class Answer(NamedTuple):
    """The response document plus what metrics and the decision log need to know."""

    document: dict[str, Any]
    review: Review
    decision: Decision
    kind: str = ""
    version: str = ""
    findings: int = 0
    error: str = ""  # the traceback of an internal error, for the log only

    @property
    def allowed(self) -> bool:
        return bool(self.document["response"]["allowed"])


class MutationLike(Protocol):
    """What `draguard.schema.policy.mutation.mutate` returns: patch ops, denial errors, warnings."""

    @property
    def patch(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def errors(self) -> Sequence[FieldError]: ...

    @property
    def warnings(self) -> Sequence[Advice]: ...


Mutator = Callable[[dict[str, Any], Options], MutationLike]
# The cluster checks against the worker's cached view, no API call (issue 20), given the
# rule set's verdict: its prepared object (`Verdict.internal`, read only) and its per-spec
# memo (`Verdict.derived`), where they may keep results.
ClusterJudge = Callable[[dict[str, Any], Options, Verdict], ClusterVerdict]
# Byte budgets of the caches here (issue 15 §3): namespaces come from clients, any length.
OPTIONS_CACHE_BYTES = 1024 * 1024
_OPTIONS_BYTES = 400  # an Options object beside its namespace text
# Rendered warnings are kept beside their spec's verdict (in the rule set's memo, at most
# `_SpecMemo.MAX_ENTRIES` of them) only up to this size: at most 4 MiB in all; larger
# ones (up to 4,096 characters) are rendered again when asked.
WARNINGS_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The validation entry points and the release they imitate (injectable for tests)."""

    release: Release = DEFAULT_RELEASE
    create: Callable[..., Verdict] = validate_object
    update: Callable[..., Verdict] = validate_update
    mutator: Mutator | None = field(default=None)
    # The cluster checks with the worker's cluster view (`draguard serve --cluster-view`).
    cluster: ClusterJudge | None = field(default=None)
    # Options are immutable and differ only by namespace: one per namespace seen, the
    # least recently used forgotten beyond a byte budget.
    _options: ByteBudgetCache[str | None, Options] = field(
        default_factory=lambda: ByteBudgetCache(OPTIONS_CACHE_BYTES), init=False, repr=False,
        compare=False)

    def options(self, review: Review) -> Options:
        options = self._options.get(review.namespace)
        if options is None:
            # contract §4 / issue 4: a missing metadata.namespace is filled from the request.
            options = Options(release=self.release, default_namespace=review.namespace,
                              remember_specs=True)
            self._options.put(review.namespace, options,
                              text_bytes(review.namespace or "") + _OPTIONS_BYTES)
        return options


def parse_review(body: bytes) -> Review:
    """Read an AdmissionReview `admission.k8s.io/v1`; raise BadReview naming what is wrong."""
    try:
        # Strict UTF-8: json.loads(bytes) would let encoded surrogates through (it
        # decodes with surrogatepass), and the apiserver only ever sends UTF-8. A lone
        # surrogate escape reads as U+FFFD, as in Go.
        doc = jsondecode.loads_utf8(body)
    except UnicodeDecodeError as exc:
        raise BadReview(f"body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    except (ValueError, RecursionError) as exc:
        raise BadReview(f"body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadReview("body is not a JSON object")
    # Nesting deeper than the limit needs more brackets than that: count them in C first.
    brackets = body.count(b"{") + body.count(b"[")
    if brackets > MAX_NESTING and _nesting_exceeds(doc, MAX_NESTING):
        raise BadReview(f"body nests JSON deeper than {MAX_NESTING} levels")
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != "AdmissionReview":
        raise BadReview(f"expected apiVersion {API_VERSION}, kind AdmissionReview")
    request = doc.get("request")
    if not isinstance(request, dict):
        raise BadReview("request is missing")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid is missing")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise BadReview(f"request.operation must be one of {', '.join(OPERATIONS)}")
    obj, old = request.get("object"), request.get("oldObject")
    if operation in ("CREATE", "UPDATE") and not isinstance(obj, dict):
        raise BadReview(f"request.object is missing for {operation}")
    if operation == "UPDATE" and not isinstance(old, dict):
        raise BadReview("request.oldObject is missing for UPDATE")
    return Review(
        uid=uid,
        operation=operation,
        object=obj if isinstance(obj, dict) else None,
        old_object=old if isinstance(old, dict) else None,
        namespace=_text(request.get("namespace")),
        name=_text(request.get("name")),
        dry_run=request.get("dryRun") is True,
    )


def _nesting_exceeds(doc: Any, limit: int) -> bool:
    """True when arrays and objects nest deeper than `limit` (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))
    return False


def answer_validate(review: Review, *, rules: RuleSet, failure_mode: FailureMode) -> Answer:
    """Judge a claim or template: rules on CREATE, update rules on UPDATE, else allow."""
    if review.operation not in ("CREATE", "UPDATE") or review.object is None:
        return Answer(_response(review.uid, allowed=True), review, "ignored")
    kind, version = _kind_version(review.object)
    try:
        verdict = _judge(review, rules)
        cluster = _judge_cluster(review, rules, verdict)
    except Exception:  # an internal error must still produce a well-formed answer
        return _internal_error(review, failure_mode, kind, version, traceback.format_exc())
    if verdict.skipped:
        return _skipped(review, verdict, kind, version)
    warnings = _warnings(review, verdict)
    if cluster is not None and cluster.warnings:
        warnings = limit_warnings([*warnings, *(render_advice(a) for a in cluster.warnings)])
    if verdict.errors:
        doc = _response(review.uid, allowed=False, status=render_invalid(verdict),
                        warnings=warnings)
        return Answer(doc, review, "denied", kind, version, len(verdict.errors))
    if cluster is not None and cluster.denials:
        errors = [cluster_error(item) for item in cluster.denials]
        status = render_invalid(_verdict_for(review.object, errors))
        doc = _response(review.uid, allowed=False, status=status, warnings=warnings)
        return Answer(doc, review, "denied", kind, version, len(errors))
    return Answer(_response(review.uid, allowed=True, warnings=warnings), review, "allowed",
                  kind, version)


def _judge_cluster(review: Review, rules: RuleSet, verdict: Verdict) -> ClusterVerdict | None:
    """The cluster checks (issue 20), on CREATE of a valid claim or template only.

    Only on CREATE: the spec is immutable afterwards, and a denial on UPDATE would
    block metadata changes (finalizers) of claims made before a DeviceClass went away.
    Only on a valid object: an invalid one is denied by the rules already.
    """
    if (rules.cluster is None or review.operation != "CREATE" or verdict.skipped
            or verdict.errors or review.object is None):
        return None
    return rules.cluster(review.object, rules.options(review), verdict)


def cluster_error(item: Advice) -> FieldError:
    """A denying cluster check as a field error: its path, its message, and the code that
    the policy's `clusterChecks:` section sets to deny (so the operator knows the knob)."""
    return forbidden(item.path, f"{item.message} (draguard cluster check {item.code})")


def answer_mutate(review: Review, *, rules: RuleSet, failure_mode: FailureMode) -> Answer:
    """Apply the operator's policy on CREATE as a JSONPatch; no mutator → an empty patch."""
    if review.operation != "CREATE" or review.object is None:
        return Answer(_response(review.uid, allowed=True), review, "ignored")
    kind, version = _kind_version(review.object)
    if rules.mutator is None:
        # Without a configured policy (`draguard serve --policy`) the
        # mutating webhook is a no-op that allows everything.
        return Answer(_response(review.uid, allowed=True), review, "allowed", kind, version)
    try:
        mutation = rules.mutator(review.object, rules.options(review))
        patch = [dict(op) for op in mutation.patch]
        errors = tuple(mutation.errors)
        warnings = limit_warnings(render_advice(item) for item in mutation.warnings)
    except Exception:
        return _internal_error(review, failure_mode, kind, version, traceback.format_exc())
    if errors:
        status = render_invalid(_verdict_for(review.object, errors))
        doc = _response(review.uid, allowed=False, status=status, warnings=warnings)
        return Answer(doc, review, "denied", kind, version, len(errors))
    doc = _response(review.uid, allowed=True, warnings=warnings)
    if patch:
        doc["response"]["patchType"] = "JSONPatch"
        doc["response"]["patch"] = base64.b64encode(
            json.dumps(patch, separators=(",", ":")).encode()).decode("ascii")
    return Answer(doc, review, "allowed", kind, version, len(patch))


def render_invalid(verdict: Verdict) -> dict[str, Any]:
    """The Status of apimachinery `errors.NewInvalid(GroupKind, name, errs)`.

    `details.kind` is the Kind (`ResourceClaim`), not the resource, because the
    registry strategies pass `resource.Kind(...)` as the qualified kind; each error
    gives one cause {reason: cause type, message: body, field: path} (§3.1).
    """
    kind = verdict.kind or "ResourceClaim"
    name = clip(verdict.name or "", MAX_NAME_ECHO)
    errors = list(verdict.errors)
    causes = [{"reason": e.type.cause_type, "message": clip(e.message, MAX_MESSAGE_ECHO),
               "field": clip(e.field, MAX_MESSAGE_ECHO)} for e in errors]
    message = f"{kind}.{GROUP} {go_quote(name)} is invalid: {aggregate_message(errors)}"
    return {
        "metadata": {},
        "status": "Failure",
        "message": clip(message, MAX_STATUS_MESSAGE),
        "reason": "Invalid",
        "details": {"name": name, "group": GROUP, "kind": kind, "causes": causes},
        "code": 422,
    }


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying so: what a client sent is echoed back
    bounded (a 3 MiB name once made a 12 MB answer). Short texts are unchanged."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


_WARNINGS = "draguard.webhook.warnings"  # the key in `Verdict.derived`


def _warnings(review: Review, verdict: Verdict) -> Sequence[str]:
    """The rule set's advice (issue 7 and skew), within the apiserver's limits.

    Only on CREATE: the spec is immutable afterwards, and repeating the same warnings
    on every metadata update would teach users to ignore them.
    """
    if review.operation != "CREATE":
        return ()
    # Advice depends on the spec alone (and the silencing annotation, which the rule
    # set's memo keys on too), so claims from one template share it.
    if not verdict.warnings:
        return ()  # most claims: nothing to render or to keep
    cached: tuple[str, ...] | None = verdict.derived.get(_WARNINGS)
    if cached is None:
        cached = tuple(limit_warnings([render_advice(item) for item in verdict.warnings]))
        if text_bytes(*cached) <= WARNINGS_CACHE_MAX:
            verdict.derived[_WARNINGS] = cached
    return cached  # `_response` copies it into the answer


def render_advice(item: Advice) -> str:
    """One admission warning: `path: message` (the code is for lint and the annotation);
    the message alone for advice about the whole object (`cluster-view-stale`)."""
    where = item.field
    return f"{where}: {item.message}" if where else item.message


def limit_warnings(warnings: Iterable[str]) -> list[str]:
    """Cut each warning to 256 characters and stop before the total passes 4,096."""
    out: list[str] = []
    total = 0
    for text in warnings:
        line = text if text.isprintable() else _printable(text)
        if len(line) > MAX_WARNING_CHARS:
            line = line[: MAX_WARNING_CHARS - 1] + "…"
        if total + len(line) > MAX_TOTAL_CHARS:
            break
        out.append(line)
        total += len(line)
    return out


def _printable(text: str) -> str:
    # Warnings travel as HTTP Warning headers, where control characters are not allowed.
    return "".join(" " if unicodedata.category(ch)[0] in "CZ" else ch for ch in text)


def _judge(review: Review, rules: RuleSet) -> Verdict:
    options = rules.options(review)
    if review.operation == "UPDATE":
        return rules.update(review.old_object, review.object, options=options)
    return rules.create(review.object, options=options)


def _skipped(review: Review, verdict: Verdict, kind: str, version: str) -> Answer:
    what = f"{kind or 'object'} {version or '(no apiVersion)'}".strip()
    reason = f": {verdict.skip_reason}" if verdict.skip_reason else ""
    warning = Advice(_WHOLE, "not-checked", f"draguard did not check {what}{reason}")
    doc = _response(review.uid, allowed=True, warnings=_review_warnings(review, warning))
    return Answer(doc, review, "skipped", kind, version)


_WHOLE = FieldPath()  # advice about the review, not a field


def _review_warnings(review: Review, *advice: Advice) -> list[str]:
    """Webhook advice as warnings, less the codes the object's annotation silences."""
    obj = review.object if isinstance(review.object, Mapping) else {}
    silenced = ignored_codes(obj.get("metadata"))
    return limit_warnings(render_advice(a) for a in advice if a.code not in silenced)


def _internal_error(review: Review, mode: FailureMode, kind: str, version: str,
                    trace: str) -> Answer:
    if mode == "open":
        doc = _response(review.uid, allowed=True, warnings=_review_warnings(review, Advice(
            _WHOLE, "failure-open-error",
            "draguard had an internal error and allowed the object unchecked (failure mode open)")))
    else:
        doc = _response(review.uid, allowed=False, status={
            "metadata": {}, "status": "Failure", "reason": "InternalError", "code": 500,
            "message": "draguard had an internal error and denied the object "
                       "(failure mode closed); the webhook log has the details"})
    return Answer(doc, review, "error", kind, version, error=trace)


def answer_timed_out(review: Review, mode: FailureMode, seconds: float) -> Answer:
    """The answer to a review not judged within its deadline of `seconds`, per the failure mode."""
    kind, version = _kind_version(review.object or review.old_object or {})
    what = f"draguard did not finish checking within {seconds:g} s"
    if mode == "open":
        doc = _response(review.uid, allowed=True, warnings=_review_warnings(review, Advice(
            _WHOLE, "failure-open-timeout",
            f"{what} and allowed the object unchecked (failure mode open)")))
    else:
        doc = _response(review.uid, allowed=False, status={
            "metadata": {}, "status": "Failure", "reason": "Timeout", "code": 504,
            "message": f"{what} and denied the object (failure mode closed)"})
    return Answer(doc, review, "timeout", kind, version)


def _verdict_for(obj: Mapping[str, Any], errors: Sequence[FieldError]) -> Verdict:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    kind, version = _kind_version(obj)
    return Verdict(kind=kind or None, api_version=version or None, name=_text(meta.get("name")),
                   namespace=_text(meta.get("namespace")), shape=None, errors=tuple(errors))


def _response(uid: str, *, allowed: bool, status: dict[str, Any] | None = None,
              warnings: Sequence[str] = ()) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if status is not None:
        response["status"] = status
    if warnings:
        response["warnings"] = list(warnings)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def _kind_version(obj: Mapping[str, Any]) -> tuple[str, str]:
    return _text(obj.get("kind")) or "", _text(obj.get("apiVersion")) or ""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
