"""The last good certificate pair and policy, loaded by the master and inherited by
each worker it forks (issue 15 §4).

A worker that starts after the files on disk broke (deleted state folder, a policy
edited into nonsense) would otherwise have nothing to keep: it would serve without a
certificate, or without the policy's rules, while `/readyz` said ok. The master loads
both before every fork (`prime`, gunicorn's `pre_fork` hook), keeping its own last good
state the same way the workers do; a worker starts from that copy and then follows
the files itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from draguard.webhook.config import Config
from draguard.webhook.serving import tls as tls_module
from draguard.webhook.serving.tls import ContextCache, cache_for

if TYPE_CHECKING:
    from draguard.schema.policy.store import PolicyStore

log = logging.getLogger("draguard.webhook.serving.laststate")

_stores: dict[Path, PolicyStore] = {}
# The current process's way to count a refused policy (set by each worker's app); the
# store itself is shared with the master over fork, so it calls this indirection.
_on_policy_failure: list[Callable[[], None]] = []


def tls_cache(config: Config) -> ContextCache:
    # No fixed name: the rendered manifests may place the service in another namespace
    # than `--namespace` says; a replacement pair must keep the first pair's service names.
    return cache_for(config.cert_file, config.key_file, client_ca=config.client_ca)


def policy_store(config: Config) -> PolicyStore | None:
    """The store for `--policy` (None without), made once per master, shared by fork."""
    if config.policy is None:
        return None
    path = config.policy.absolute()
    store = _stores.get(path)
    if store is None:
        from draguard.schema.policy.store import PolicyStore

        store = _stores[path] = PolicyStore(path, on_failure=_policy_failed)
    return store


def count_failures(*, policy: Callable[[], None], tls: Callable[[], None]) -> None:
    """Route this process's refused policy and certificate files to these callbacks
    (a worker's metrics); the stores are shared with the master, the callbacks are not."""
    _on_policy_failure[:] = [policy]
    tls_module.on_failure[:] = [tls]


def _policy_failed() -> None:
    for callback in _on_policy_failure:
        callback()


def prime(config: Config) -> None:
    """Load (or keep) the last good pair and policy in this process: the master, before
    it forks a worker. Never raises: a worker reports what is missing on /readyz."""
    try:
        tls_cache(config).context()
    except Exception as exc:
        log.warning("no usable TLS pair for new workers yet: %s", exc)
    store = policy_store(config)
    if store is not None:
        store.current()


def pre_fork_hook(config: Config) -> Callable[[Any, Any], None]:
    """gunicorn's `pre_fork` hook for `config`."""
    def pre_fork(server: Any, worker: Any) -> None:
        prime(config)

    return pre_fork
