"""The Flask app factory: collaborators built once from the frozen config.

`create_app(config)` runs in each gunicorn worker (no preload), so the rule set is
warmed, the TLS pair is loaded into that worker's context cache, and metrics open
that worker's files before the first request. `/readyz` reports exactly those.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from flask import Flask

from draguard.schema.cluster.checks import (
    DEFAULT_SETTINGS,
    EMPTY_VERDICT,
    CheckSettings,
    ClusterVerdict,
    check_internal,
    check_object,
    stale_advice,
)
from draguard.schema.model.options import Options
from draguard.schema.validate import Verdict
from draguard.webhook.config import Config
from draguard.webhook.review import Mutator, RuleSet
from draguard.webhook.routes import WebhookState, blueprint, decisions
from draguard.webhook.serving import laststate
from draguard.webhook.serving.clusterview import ClusterView
from draguard.webhook.serving.deadline import runner_for
from draguard.webhook.serving.decisionlog import BatchingHandler, JsonLine
from draguard.webhook.serving.metrics import Metrics
from draguard.webhook.serving.metricsdir import multiprocess_dir, usable

if TYPE_CHECKING:
    from draguard.schema.cluster.facts import ClusterFacts
    from draguard.schema.policy.store import PolicyStore

log = logging.getLogger("draguard.webhook")

# A typical prioritized claim: validating it once compiles whatever the rule set
# compiles lazily (CEL environments, regexes) before the first real request.
WARM_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "warm-up", "namespace": "default"},
    "spec": {"devices": {"requests": [{
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "big.example.com",
             "selectors": [{"cel": {"expression": 'device.driver == "example.com"'}}]},
            {"name": "small", "deviceClassName": "small.example.com", "count": 2},
        ],
    }]}},
}


def create_app(config: Config | None = None, *, rules: RuleSet | None = None,
               tls: bool = True) -> Flask:
    """Build the webhook app; `rules` replaces the real rule set in tests.

    With `tls` the worker's certificate cache is loaded now, so that `/readyz`
    tells whether connections can be served; the Flask test client passes False.
    """
    config = config or Config()
    _configure_decision_log()
    # Explicit paths: Flask cannot locate a namespace package mapped from a folder.
    here = str(Path(__file__).resolve().parent)
    app = Flask("draguard.webhook", root_path=here, instance_path=here)
    app.config["MAX_CONTENT_LENGTH"] = config.max_body_bytes
    metrics = worker_metrics()
    laststate.count_failures(policy=metrics.policy_failed, tls=metrics.tls_failed)
    store = laststate.policy_store(config)
    view, judge = cluster_checks(config, metrics, store) if config.cluster_view else (None, None)
    rules = rules or RuleSet(release=config.release, mutator=load_mutator(store), cluster=judge)
    cache = laststate.tls_cache(config) if tls else None
    state = WebhookState(config=config, rules=rules, metrics=metrics, tls=cache,
                         runner=runner_for(config.threads), policy=store, view=view)
    state.warm_error = warm(rules)
    if cache is not None:
        try:
            cache.context()
        except Exception as exc:  # reported by /readyz; the hook retries per connection
            log.warning("TLS certificate not loaded: %s", exc)
    app.extensions["draguard"] = state
    app.register_blueprint(blueprint)
    return app


def worker_metrics() -> Metrics:
    """This worker's metrics; disabled (serving goes on) when the shared folder is unusable."""
    folder = multiprocess_dir()
    problem = usable(folder) if folder is not None else None
    if problem is not None:
        log.warning("metrics disabled in this worker, folder unusable: %s", problem)
    return Metrics(enabled=problem is None)


def warm(rules: RuleSet) -> str | None:
    """Validate the warm-up claim once; the error text if the rule set cannot run."""
    try:
        rules.create(WARM_CLAIM, options=Options(release=rules.release))
    except Exception as exc:
        log.error("rule set failed to warm up", exc_info=True)
        return f"{type(exc).__name__}: {exc}"
    return None


def load_mutator(store: PolicyStore | None) -> Mutator | None:
    """The policy-driven mutator (`draguard.schema.policy.mutation`), or None without `--policy`.

    None makes `/mutate` allow everything with an empty patch (issue 4 §3: no policy →
    an empty patch). The store re-reads the file when it changes (ConfigMap updates) and
    keeps the last good policy; it comes from the master with that policy
    (`draguard.webhook.serving.laststate`).
    """
    if store is None:
        return None
    from draguard.schema.policy.mutation import Mutation, mutate

    # Load now, at worker start: a worker that first reads the file after it broke has
    # no last good policy to keep (found by tests/hostile/test_faults.py).
    store.current()

    def apply(obj: dict[str, Any], options: Options) -> Mutation:
        return mutate(obj, policy=store.current(), options=options)

    return apply


def cluster_checks(config: Config, metrics: Metrics,
                   store: PolicyStore | None) -> tuple[ClusterView, ClusterChecks]:
    """This worker's cluster view, started, and the review's cluster checks over it (issue 20).

    Made in each worker (gunicorn forks before `create_app`), so each keeps its own
    view and threads; the checks run with the current policy's `clusterChecks:`.
    """
    from draguard.schema.cluster.facts import WATCHED, ClusterFacts
    from draguard.schema.cluster.live import Target, connect

    target = Target(kubeconfig=str(config.kubeconfig) if config.kubeconfig else None,
                    in_cluster=config.in_cluster)
    facts = ClusterFacts()
    view = ClusterView(WATCHED, facts, connect=lambda: connect(target)[0], observer=metrics)
    view.start()

    def settings() -> CheckSettings:
        return DEFAULT_SETTINGS if store is None else store.current().cluster_checks

    return view, ClusterChecks(view, facts, settings)


class ViewState(Protocol):
    """What the checks ask the view (`ClusterView`; a stand-in in bench/cluster_view.py)."""

    @property
    def generation(self) -> int: ...
    def oldest_age(self) -> float | None: ...


class ClusterChecks:
    """`check_object` over the view's facts for a review, or one `cluster-view-stale` warning
    while a kind is still loading or the view is older than the policy's bound.

    Claims from one template share the rule set's memo (`Verdict.derived`); the verdict
    is kept there with the view's generation, the settings and the namespace it was made
    for, so the next claim from that template in that namespace reuses it until the view
    or the policy changes. The generation, a number, not the facts' snapshot itself: a
    memo entry must not hold an old view alive.
    """

    MEMO = "draguard.webhook.cluster"

    def __init__(self, view: ViewState, facts: ClusterFacts,
                 settings: Callable[[], CheckSettings]) -> None:
        self.view = view
        self.facts = facts
        self.settings = settings

    def __call__(self, obj: dict[str, Any], options: Options,
                 verdict: Verdict) -> ClusterVerdict:
        current = self.settings()
        if current.every_off:
            return EMPTY_VERDICT
        age = self.view.oldest_age()
        if age is None or age > current.stale_after_seconds:
            return ClusterVerdict((), (stale_advice(age, current),))
        # Read before the checks: an update landing meanwhile makes the kept verdict
        # newer than its generation, never older.
        key = (self.view.generation, current, _namespace(obj, options))
        memo = verdict.derived
        kept = memo.get(self.MEMO)
        if kept is not None and kept[0] == key:
            found: ClusterVerdict = kept[1]
            return found
        found = self._check(obj, options, verdict, current)
        memo[self.MEMO] = (key, found)
        return found

    def _check(self, obj: dict[str, Any], options: Options, verdict: Verdict,
               settings: CheckSettings) -> ClusterVerdict:
        # The object the rule set prepared (read, defaulted), not prepared a second time.
        if verdict.internal is not None and verdict.kind is not None:
            return check_internal(verdict.internal, verdict.kind, self.facts, settings,
                                  options=options)
        return check_object(obj, self.facts, settings, options=options)


def _namespace(obj: dict[str, Any], options: Options) -> str | None:
    meta = obj.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) and namespace else options.default_namespace


def _configure_decision_log() -> None:
    """One JSON object per line on stderr for decisions; gunicorn-like lines for the rest.

    gunicorn configures only its own loggers, so draguard's get a handler here. Decision
    lines are written in batches (`draguard.webhook.serving.decisionlog`), flushed at exit.
    """
    if decisions.handlers:
        return
    plain = logging.StreamHandler(sys.stderr)
    plain.setFormatter(logging.Formatter(
        "[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s"))
    log.addHandler(plain)
    log.setLevel(logging.INFO)
    log.propagate = False
    handler = BatchingHandler(sys.stderr)
    handler.setFormatter(JsonLine())
    decisions.addHandler(handler)
    decisions.setLevel(logging.INFO)
    decisions.propagate = False
