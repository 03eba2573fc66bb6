"""gunicorn, configured in code from the frozen `Config` (no config file to drift).

Event-driven workers (gevent, `draguard.webhook.serving.worker`) hold each connection
in a greenlet with deadlines, and judge reviews on `threads` native threads each. They
keep connections alive between requests because the apiserver reuses them; the
keep-alive timeout (120 s) outlasts the Go client's idle timeout (90 s in client-go's
transport defaults), so the server never closes a connection the apiserver is about
to reuse. Each new connection is wrapped with the worker's cached certificate context
(`draguard.webhook.serving.tls`), reloaded when the files change.

Each worker moves what it built at start (Flask, the rule set's tables, compiled CEL,
imported modules: some 50,000 objects) out of the cyclic garbage collector's sight once
the app is loaded (`gc.freeze`, gunicorn's `post_worker_init` hook). Distinct claims fill
the rule set's memo, so full collections come every few thousand reviews; each one
walked all of those objects too, a pause in which the worker answers nobody, long
enough to set the p99 at 1,000 reviews/s (issue 21; figures in bench/RESULTS.md).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication

from draguard.webhook.config import Config
from draguard.webhook.serving import laststate, metricsdir, probeport
from draguard.webhook.serving.worker import deadline_context, worker_class

# Connections per worker (gunicorn's default): a greenlet and TLS buffers each.
WORKER_CONNECTIONS = 1000


def gunicorn_settings(config: Config) -> dict[str, Any]:
    """The gunicorn settings for `config` (also used by bench/webhook.py for its no-op app)."""
    host = f"[{config.host}]" if ":" in config.host else config.host

    def ssl_context(conf: Any, default_factory: Any) -> Any:
        # gunicorn's server hook, called once per worker by its gevent worker.
        return deadline_context(config, config.read_timeout)

    settings: dict[str, Any] = {
        "bind": [f"{host}:{config.port}"],
        "workers": config.workers,
        "worker_class": worker_class(config.read_timeout, config.review_timeout),
        "worker_connections": WORKER_CONNECTIONS,
        "keepalive": config.keepalive,
        "certfile": str(config.cert_file),
        "keyfile": str(config.key_file),
        "ssl_context": ssl_context,
        "child_exit": metricsdir.child_exit,
        "pre_fork": laststate.pre_fork_hook(config),
        "loglevel": config.log_level,
        "accesslog": None,  # the app logs one JSON line per decision instead
        "proc_name": "draguard",
        "timeout": 30,
        "graceful_timeout": 10,
        # gunicorn 25+ opens a control socket at one fixed per-user path; several
        # servers on a host (tests, bench, a sidecar) would fight over it.
        "control_socket_disable": True,
    }
    probes = probeport.hooks(config)
    settings.update(probes)
    settings["post_worker_init"] = _frozen_after(probes.get("post_worker_init"))
    settings.update(config.extra)
    return settings


def _frozen_after(hook: Callable[[Any], None] | None) -> Callable[[Any], None]:
    """gunicorn's `post_worker_init`: `hook` (if any), then the worker's start-up heap frozen.

    Frozen objects are still freed by reference counting when dropped; only a reference
    cycle among them would stay. What start-up makes mostly lives as long as the worker;
    what is loaded later (a new policy or certificate, watch events) is not frozen.
    """

    def post_worker_init(worker: Any) -> None:
        if hook is not None:
            hook(worker)
        gc.collect()  # start-up's garbage freed, not frozen with the rest
        gc.freeze()

    return post_worker_init


class WebhookServer(BaseApplication):  # type: ignore[misc]
    """gunicorn running `app_factory(config)` in each worker (`draguard serve` passes one
    that imports `create_app` there: the master never loads Flask or the rule set)."""

    def __init__(self, config: Config, app_factory: Callable[[Config], Any],
                 settings: dict[str, Any] | None = None) -> None:
        self.config = config
        self.app_factory = app_factory
        self.settings = gunicorn_settings(config) if settings is None else settings
        super().__init__()

    def load_config(self) -> None:
        for name, value in self.settings.items():
            self.cfg.set(name, value)

    def load(self) -> Any:
        return self.app_factory(self.config)
