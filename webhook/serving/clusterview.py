"""The cluster view: list + watch of the kinds the cluster checks need, in each worker (issue 20).

For each watched kind a native thread does what client-go's reflector does
(k8s.io/client-go/tools/cache/reflector.go, `ListAndWatch`): a paged list
(`limit`/`continue`), each page handed to the sink as it arrives and the whole
committed at once (`stage`), then a watch from the list's
resourceVersion with `allowWatchBookmarks=true`, each event handed to `apply`.
Bookmarks and events move the resourceVersion; a dropped connection resumes the watch
from it after a capped, jittered backoff (reflector: 800 ms doubling to 30 s); 410 Gone
(an HTTP status, or an ERROR event with code 410, "too old resource version") relists.
A line that is not a watch event is counted, logged and answered by reconnecting; no
failure ends the thread.

Native threads, not greenlets: decoding a page of ResourceSlices is pure CPU, and in a
greenlet it would hold every connection of the worker; a native thread shares the GIL
in slices, so reviews keep being answered. Reviews never wait for the view: they read
the sink's snapshots (`draguard.schema.cluster.facts`), and ask `oldest_age` whether
those may be trusted. Sockets are gevent's in the gevent worker (monkey-patched); each
thread then runs its own gevent hub, as gevent documents for native threads.

Everything goes through the `kubernetes` client's generated API methods
(`CustomObjectsApi.list_cluster_custom_object`, `CoreV1Api.list_namespace`, …) with
`_preload_content=False`, which returns the HTTP response unread (a watch streams).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import orjson

log = logging.getLogger("draguard.webhook.serving.clusterview")

# Why a watch ended, as the restart counter labels it (a closed set: bounded series).
RestartReason = Literal["timeout", "dropped", "expired", "error", "garbage"]
EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})


class Watched(Protocol):
    """One kind to keep (`draguard.schema.cluster.facts.WATCHED` entries)."""

    @property
    def kind(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def plural(self) -> str: ...


class Staged(Protocol):
    """A list in progress (`draguard.schema.cluster.facts.StagedList`)."""

    def add(self, objects: Iterable[Mapping[str, Any]]) -> None: ...
    def commit(self) -> None: ...


class Sink(Protocol):
    """Where objects go (`draguard.schema.cluster.facts.ClusterFacts`).

    A list goes to `stage(kind)` page by page and is committed at its end: each page is
    read into the sink's own form as it arrives, and readers see the whole list at once.
    """

    def stage(self, kind: str) -> Staged: ...
    def apply(self, kind: str, event: str, obj: Mapping[str, Any]) -> None: ...


class Observer(Protocol):
    """What the view reports (the worker's metrics)."""

    def view_relisted(self, kind: str) -> None: ...
    def view_restarted(self, kind: str, reason: RestartReason) -> None: ...
    def view_bad_event(self, kind: str) -> None: ...
    def view_age(self, kind: str, seconds: float, loaded: bool) -> None: ...


class Silent:
    """An observer that records nothing."""

    def view_relisted(self, kind: str) -> None:
        pass

    def view_restarted(self, kind: str, reason: RestartReason) -> None:
        pass

    def view_bad_event(self, kind: str) -> None:
        pass

    def view_age(self, kind: str, seconds: float, loaded: bool) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Tuning:
    """Paging, timeouts and backoff; the defaults follow client-go's reflector."""

    page: int = 500
    # The apiserver ends a watch after `timeoutSeconds`: between `watch_seconds` and twice
    # that, at random, so that many watchers do not reconnect together (reflector.go:
    # minWatchTimeout × (1 + rand)). The client's read timeout, `read_margin` longer,
    # detects a connection that died silently. The view counts as current while a watch
    # is open, so a dead connection goes unnoticed for at most that read timeout.
    watch_seconds: int = 240
    read_margin: float = 30.0
    connect_timeout: float = 10.0
    list_timeout: float = 60.0
    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    # An event is one object (etcd's limit is 1.5 MiB, a few times that as JSON); a
    # longer line is garbage and must not grow without bound.
    max_line_bytes: int = 16 * 1024 * 1024
    # How often the age gauges are refreshed.
    report_every: float = 5.0


@dataclass(frozen=True, slots=True)
class KindStatus:
    """One kind's state, replaced whole (readers on other threads see old or new, never half).

    `synced_at` (monotonic) is the last moment the kind was known current: a list
    finished, an event or bookmark arrived, or its watch ended. While `watching` the
    view is current by definition: the apiserver sends every change on the open stream.
    """

    loaded: bool = False
    watching: bool = False
    synced_at: float = 0.0
    resource_version: str | None = None
    error: str | None = None


class Gone(Exception):
    """410: the resourceVersion is too old (compacted); relist."""


class StreamProblem(Exception):
    """The watch cannot go on: garbage, an ERROR event, a dropped connection."""

    def __init__(self, reason: RestartReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


ListCall = Callable[..., Any]


def list_call(api: Any, watched: Watched) -> ListCall:
    """The generated client method that lists (and, with `watch=True`, watches) a kind cluster-wide."""
    from kubernetes import client

    if watched.group == "":
        core = client.CoreV1Api(api)
        methods: dict[str, ListCall] = {
            "namespaces": core.list_namespace,
            "resourcequotas": core.list_resource_quota_for_all_namespaces}
        if watched.plural not in methods:
            raise ValueError(f"no cluster-wide list for core {watched.plural}")
        return methods[watched.plural]
    custom = client.CustomObjectsApi(api)

    def call(**kwargs: Any) -> Any:
        return custom.list_cluster_custom_object(watched.group, watched.version,
                                                 watched.plural, **kwargs)

    return call


class ClusterView:
    """List + watch of `kinds` into `sink`, one daemon thread per kind (see module docstring)."""

    def __init__(self, kinds: Sequence[Watched], sink: Sink, *, connect: Callable[[], Any],
                 observer: Observer | None = None, tuning: Tuning | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.kinds = tuple(kinds)
        self.sink = sink
        self.observer = observer or Silent()
        self.tuning = tuning or Tuning()
        self.clock = clock
        self._connect = connect
        self._local = threading.local()  # one API client per thread, see `_client`
        self._stop = threading.Event()
        self._loaded = threading.Event()
        self._responses: dict[str, Any] = {}
        self._status: dict[str, KindStatus] = {k.kind: KindStatus() for k in self.kinds}
        self._threads: list[threading.Thread] = []
        self._generation = 0
        self._generation_lock = threading.Lock()
        self.started_at = clock()

    # --- what readers ask (any thread, never blocking) ---------------------------------

    def status(self) -> dict[str, KindStatus]:
        return dict(self._status)

    @property
    def generation(self) -> int:
        """A number that changes after every update handed to the sink (results made
        from the facts at one generation stay valid while it stays)."""
        return self._generation

    def _changed(self) -> None:
        with self._generation_lock:  # `+=` from several threads could lose a step
            self._generation += 1

    def age(self, kind: str) -> float | None:
        """Seconds since `kind` was last known current; None before its first list."""
        status = self._status[kind]
        if not status.loaded:
            return None
        return 0.0 if status.watching else max(0.0, self.clock() - status.synced_at)

    def not_ready(self) -> str | None:
        """Why the view cannot serve yet (a kind never listed), or None."""
        waiting = [(name, s) for name, s in self._status.items() if not s.loaded]
        if not waiting:
            return None
        parts = [name + (f" ({s.error})" if s.error else "") for name, s in waiting]
        return "cluster view loading, not listed yet: " + ", ".join(parts)

    def oldest_age(self) -> float | None:
        """The age of the least current kind, in seconds; None while any kind is loading.

        A review compares it with the policy's bound and skips the cluster checks
        (warning `cluster-view-stale`) rather than judge from an old or partial view.
        """
        ages = [self.age(name) for name in self._status]
        if any(age is None for age in ages):
            return None
        return max((age for age in ages if age is not None), default=0.0)

    def wait_loaded(self, timeout: float) -> bool:
        """Block until every kind has been listed once (tests, tools), or `timeout` passes."""
        return self._loaded.wait(timeout)

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        for watched in self.kinds:
            self._spawn(f"draguard-view-{watched.kind}", self._run, watched)
        self._spawn("draguard-view-report", self._report)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the threads: closing the open responses wakes their reads."""
        self._stop.set()
        for response in list(self._responses.values()):
            _close(response)
        for thread in self._threads:
            thread.join(timeout)

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    # --- one kind ----------------------------------------------------------------------

    def _run(self, watched: Watched) -> None:
        kind = watched.kind
        backoff = Backoff(self.tuning.backoff_initial, self.tuning.backoff_max,
                          clock=self.clock)
        while not self._stop.is_set():
            # Resume from the last version seen (events and bookmarks record it), or list.
            version = self._status[kind].resource_version
            try:
                call = list_call(self._client(), watched)
                if version is None:
                    version = self._relist(watched, call)
                self._watch(watched, call, version)
                backoff.reset()
                self.observer.view_restarted(kind, "timeout")
                continue  # the server ended the watch on time: resume at once
            except Gone as exc:
                log.info("cluster view %s: %s; relisting", kind, exc)
                self._set(kind, resource_version=None)
                self.observer.view_restarted(kind, "expired")
                continue
            except StreamProblem as exc:
                self._note(kind, exc.reason, str(exc))
            except Exception as exc:  # unreachable, refused, 403, a bug: never end the thread
                self._note(kind, "dropped", _describe(exc))
            self._stop.wait(backoff.next())

    def _note(self, kind: str, reason: RestartReason, message: str) -> None:
        log.warning("cluster view %s: %s; retrying", kind, message)
        self._set(kind, error=message[:300])
        if self._status[kind].loaded:
            self.observer.view_restarted(kind, reason)

    def _client(self) -> Any:
        # One client (and so one urllib3 pool) per thread: in the gevent worker each native
        # thread has its own hub, and a pooled connection made under one thread's hub and
        # reused by another fails with "Cannot switch to a different thread".
        api = getattr(self._local, "api", None)
        if api is None:
            api = self._local.api = self._connect()
        return api

    def _relist(self, watched: Watched, call: ListCall) -> str:
        """List every page into a staged replace, committed at the end; the list's resourceVersion.

        Each page is handed to the sink as it arrives and dropped: at most one page of
        raw objects is held (issue 20: the whole list held at once was most of a
        worker's memory). Nothing is committed unless the list completes.
        """
        kind, tuning = watched.kind, self.tuning
        api_version = f"{watched.group}/{watched.version}" if watched.group else watched.version
        staged = self.sink.stage(kind)
        count = 0
        token: str | None = None
        version = ""
        while True:
            kwargs: dict[str, Any] = {"limit": tuning.page}
            if token:
                kwargs["_continue"] = token
            try:
                page = _json_object(call(**kwargs, _preload_content=False, _request_timeout=(
                    tuning.connect_timeout, tuning.list_timeout)).data, f"{kind} list")
            except Exception as exc:
                if getattr(exc, "status", None) == 410 and token:
                    # The continue token expired: a consistent list starts over.
                    staged, count, token = self.sink.stage(kind), 0, None
                    continue
                raise
            items = [item for item in page.get("items") or () if isinstance(item, dict)]
            for item in items:
                # List items omit kind and apiVersion; events carry them.
                item.setdefault("kind", kind)
                item.setdefault("apiVersion", api_version)
            staged.add(items)
            count += len(items)
            metadata = page.get("metadata")
            metadata = metadata if isinstance(metadata, dict) else {}
            version = str(metadata.get("resourceVersion") or version)
            token = metadata.get("continue") or None
            del page, items  # the page's objects are in the sink's form now
            if not token:
                break
        was_loaded = self._status[kind].loaded
        staged.commit()
        self._changed()
        self._set(kind, loaded=True, synced_at=self.clock(), resource_version=version,
                  error=None)
        if was_loaded:
            self.observer.view_relisted(kind)
        log.info("cluster view %s: listed %d objects at resourceVersion %s", kind, count,
                 version)
        if not self._loaded.is_set() and all(s.loaded for s in self._status.values()):
            log.info("cluster view ready: every kind listed (%s)", ", ".join(self._status))
            self._loaded.set()
        return version

    def _watch(self, watched: Watched, call: ListCall, version: str) -> str:
        """Follow the watch from `version` until the server ends it; the last resourceVersion."""
        kind, tuning = watched.kind, self.tuning
        seconds = int(tuning.watch_seconds * (1 + random.random()))
        try:
            response = call(watch=True, resource_version=version, allow_watch_bookmarks=True,
                            timeout_seconds=seconds, _preload_content=False,
                            _request_timeout=(tuning.connect_timeout,
                                              seconds + tuning.read_margin))
        except Exception as exc:
            if getattr(exc, "status", None) == 410:
                raise Gone(f"watch from resourceVersion {version}: 410 Gone") from None
            raise
        self._responses[kind] = response
        self._set(kind, watching=True, error=None)
        try:
            if self._stop.is_set():  # `stop` ran while this watch was connecting
                return version
            for line in lines(response, tuning.max_line_bytes):
                version = self._event(kind, line, version)
                self._set(kind, synced_at=self.clock(), resource_version=version)
        except (Gone, StreamProblem):
            raise
        except Exception as exc:  # urllib3's read timeouts and protocol errors, closed sockets
            raise StreamProblem("dropped", f"watch connection lost: {_describe(exc)}") from None
        finally:
            self._responses.pop(kind, None)
            _close(response)
            self._set(kind, watching=False, synced_at=self.clock())
        return version

    def _event(self, kind: str, line: bytes, version: str) -> str:
        """Apply one watch line; the resourceVersion after it."""
        if not line.strip():
            return version
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            event = None
        kind_of_event = event.get("type") if isinstance(event, dict) else None
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict) or not isinstance(kind_of_event, str):
            self.observer.view_bad_event(kind)
            raise StreamProblem("garbage", f"not a watch event: {_preview(line)}")
        if kind_of_event == "ERROR":
            # metav1.Status; the apiserver's cacher sends 410 Expired for a compacted
            # resourceVersion (apimachinery pkg/api/errors NewResourceExpired).
            if obj.get("code") == 410:
                raise Gone(f"watch expired: {obj.get('message', 'resourceVersion too old')}")
            raise StreamProblem("error", f"watch error: {_preview(line)}")
        metadata = obj.get("metadata")
        new = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
        if kind_of_event == "BOOKMARK":
            return str(new) if new else version
        if kind_of_event not in EVENTS:
            self.observer.view_bad_event(kind)
            raise StreamProblem("garbage", f"unknown watch event type {kind_of_event[:40]!r}")
        try:
            self.sink.apply(kind, kind_of_event, obj)
        except Exception:  # the sink promises not to raise; a bug there must not stop the view
            self.observer.view_bad_event(kind)
            log.exception("cluster view %s: applying a %s event failed", kind, kind_of_event)
        finally:
            self._changed()
        return str(new) if new else version

    def _set(self, kind: str, **changes: Any) -> None:
        self._status[kind] = replace(self._status[kind], **changes)

    def _report(self) -> None:
        while not self._stop.is_set():
            try:
                for name, status in self._status.items():
                    age = self.age(name)
                    seconds = age if age is not None else self.clock() - self.started_at
                    self.observer.view_age(name, seconds, status.loaded)
            except Exception:
                log.exception("cluster view: reporting its age failed")
            self._stop.wait(self.tuning.report_every)


@dataclass(slots=True)
class Backoff:
    """Capped exponential backoff with jitter, back to the start after a quiet spell.

    As the reflector's backoff manager (client-go `wait.NewExponentialBackoffManager(
    800ms, 30s, 2min, 2.0, 1.0, clock)`): doubling to the cap, jitter up to the delay
    again, and reset when no failure came for `reset_after` seconds, so a watch that
    ran well for a while and then dropped resumes quickly.
    """

    initial: float
    cap: float
    reset_after: float = 120.0
    clock: Callable[[], float] = time.monotonic
    _next: float = field(default=0.0)
    _last: float | None = field(default=None)

    def __post_init__(self) -> None:
        self._next = self.initial

    def next(self) -> float:
        now = self.clock()
        if self._last is not None and now - self._last > self.reset_after:
            self._next = self.initial
        self._last = now
        delay = min(self._next, self.cap)
        self._next = min(self._next * 2, self.cap)
        return delay * (1 + random.random())  # jitter, not secrecy

    def reset(self) -> None:
        self._next = self.initial


def lines(response: Any, limit: int) -> Iterator[bytes]:
    """The newline-separated lines of a streaming response, each at most `limit` bytes."""
    buffer = bytearray()
    for chunk in response.stream(amt=None, decode_content=False):
        buffer.extend(chunk)
        start = 0
        while (end := buffer.find(b"\n", start)) != -1:
            yield bytes(buffer[start:end])
            start = end + 1
        del buffer[:start]
        if len(buffer) > limit:
            raise StreamProblem("garbage", f"a watch line longer than {limit} bytes")
    if buffer.strip():
        yield bytes(buffer)


def _json_object(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StreamProblem("garbage", f"{what}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise StreamProblem("garbage", f"{what}: not a JSON object")
    return value


def _preview(line: bytes) -> str:
    return repr(line[:120]) + (f" (+{len(line) - 120} bytes)" if len(line) > 120 else "")


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or (str(exc).splitlines() or [""])[0]
    text = f"{status} {reason}" if status else f"{type(exc).__name__}: {reason}"
    return text[:300]


def _close(response: Any) -> None:
    try:
        # `shutdown` (urllib3 2.3+) wakes a read blocked in another thread; `close` does not.
        shutdown = getattr(response, "shutdown", None)
        if shutdown is not None:
            shutdown()
        response.close()
    except Exception:  # already closed, or closing a broken socket
        log.debug("closing a watch response failed", exc_info=True)
