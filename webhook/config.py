"""The webhook's configuration: flags and `DRAGUARD_*` environment, built once, frozen.

Handlers never read `os.environ`; `create_app` receives one `Config` and every
collaborator is built from it (STYLE.md, Flask's `create_app(config)` model).
A flag wins over its environment variable, which wins over the default.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from draguard.schema.model.releases import (
    DEFAULT_RELEASE,
    Release,
    parse_feature_gates,
    release,
)

FailureMode = Literal["open", "closed"]

DEFAULT_PORT = 8443
DEFAULT_STATE_DIR = "draguard-state"
DEFAULT_SERVICE = "draguard"
DEFAULT_NAMESPACE = "draguard-system"
# The apiserver's own request limit is 3 MiB (etcd's 1.5 MiB object limit ×2 for
# encodings); an AdmissionReview carries object + oldObject, so 3 MiB is the cap.
MAX_BODY_BYTES = 3 * 1024 * 1024
# The apiserver waits 10 s for a webhook by default and 1–3 s in most installs; a review
# that has not finished in a second is answered by the failure mode instead.
REVIEW_TIMEOUT = 1.0
# A new connection must complete its TLS handshake, and each request its headers and
# body, within this (Go's net/http servers in Gatekeeper and Kyverno: ReadHeaderTimeout
# and ReadTimeout of a few seconds). Idle keep-alive connections wait `keepalive`.
READ_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Config:
    """Everything the server needs, known before the first request.

    `failure_mode` answers internal errors: `open` allows the object (with a
    warning), `closed` denies it. The default is `open` because draguard repeats the
    apiserver's own rules: an object draguard fails to judge is still judged by the
    apiserver, so allowing it loses nothing upstream enforces and never locks the
    cluster on a draguard bug.
    """

    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    state_dir: Path = Path(DEFAULT_STATE_DIR)
    cert: Path | None = None
    key: Path | None = None
    workers: int = 2
    threads: int = 4
    keepalive: int = 120
    policy: Path | None = None
    release: Release = DEFAULT_RELEASE
    failure_mode: FailureMode = "open"
    service: str = DEFAULT_SERVICE
    namespace: str = DEFAULT_NAMESPACE
    metrics_dir: Path | None = None
    log_level: str = "info"
    max_body_bytes: int = MAX_BODY_BYTES
    review_timeout: float = REVIEW_TIMEOUT
    read_timeout: float = READ_TIMEOUT
    client_ca: Path | None = None
    # The cluster view (issue 20): list+watch DeviceClasses, ResourceSlices, Namespaces
    # and ResourceQuotas for the cluster checks. Off by default: it needs RBAC to list
    # and watch them (deploy/components/cluster-view). Credentials: `kubeconfig`, else the
    # in-cluster service account when running in a pod, else the default kubeconfig.
    cluster_view: bool = False
    kubeconfig: Path | None = None
    in_cluster: bool = False
    metrics_port: int | None = None  # plain HTTP for /metrics and probes (probeport.py)
    metrics_host: str | None = None  # default: `host`
    # Extra gunicorn settings (tests: a short graceful timeout); not exposed as flags.
    extra: Mapping[str, object] = field(default_factory=dict)

    @property
    def cert_file(self) -> Path:
        return self.cert if self.cert is not None else self.state_dir / "tls.crt"

    @property
    def key_file(self) -> Path:
        return self.key if self.key is not None else self.state_dir / "tls.key"

    @property
    def ca_file(self) -> Path | None:
        """The CA that signed the serving cert, known only for self-managed certificates."""
        return None if self.cert is not None else self.state_dir / "ca.crt"

    @property
    def service_dns(self) -> str:
        return f"{self.service}.{self.namespace}.svc"


class ConfigError(ValueError):
    """A flag or environment value that cannot be used (exit code 2)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="draguard serve",
        description="Run the draguard admission webhook (gunicorn, TLS). Every flag can "
        "also be given as DRAGUARD_<FLAG> in the environment, e.g. DRAGUARD_PORT=9443.",
    )
    add = parser.add_argument
    add("--host", help="address to listen on (default 0.0.0.0)")
    add("--port", type=int, help=f"port to listen on (default {DEFAULT_PORT})")
    add("--state-dir",
        help=f"folder for the self-made CA and certificate (default ./{DEFAULT_STATE_DIR})")
    add("--cert", help="serving certificate (PEM); with --key, skips the self-made certificates")
    add("--key", help="serving key (PEM)")
    add("--client-ca", help="require a client certificate signed by this CA (PEM): mutual "
        "TLS with the apiserver's admission kubeconfig")
    add("--workers", type=int, help="gunicorn worker processes (default 2)")
    add("--threads", type=int, help="review threads per worker (default 4), for reviews not "
                                    "done within their inline slice; connections are greenlets")
    add("--keepalive", type=int,
        help="seconds an idle keep-alive connection stays open (default 120)")
    add("--policy", help="mutation policy file (reloaded on change)")
    add("--kubernetes-version", help="Kubernetes release whose rules to apply (default newest)")
    add("--feature-gates", help="that release's DRA feature gates, kube style "
        "(KEY=true|false,...), e.g. DRADerivedAttributes=true")
    add("--failure-mode", choices=("open", "closed"),
        help="answer to an internal error or a review past its deadline (default open)")
    add("--review-timeout", help=f"seconds a review may take before the failure mode answers "
        f"it (default {REVIEW_TIMEOUT:g})")
    add("--read-timeout", help="seconds for a TLS handshake, and for a request's headers and "
        f"body (default {READ_TIMEOUT:g})")
    add("--service", help=f"service name in the self-made certificate (default {DEFAULT_SERVICE})")
    add("--namespace", help=f"service namespace in the certificate (default {DEFAULT_NAMESPACE})")
    add("--cluster-view", action="store_true", default=None,
        help="keep a list+watch view of DeviceClasses, ResourceSlices, Namespaces and "
        "ResourceQuotas and run the cluster checks of the policy's clusterChecks (needs "
        "list and watch on them; /readyz waits for the first lists)")
    add("--kubeconfig", help="kubeconfig for the cluster view when not running in a pod "
        "(default: the service account in a pod, else $KUBECONFIG or ~/.kube/config)")
    add("--metrics-dir", help="prometheus multiprocess folder (default: a fresh temporary one)")
    add("--log-level", help="gunicorn log level (default info)")
    add("--metrics-port", type=int, help="also serve /metrics, /healthz and /readyz over plain "
        "HTTP on this port (for Prometheus and kubelet probes; default: off)")
    add("--metrics-host", help="address for --metrics-port (default: --host)")
    return parser


def parse_config(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> Config:
    """Build the frozen config from flags, then `DRAGUARD_*`, then defaults; raise ConfigError."""
    env = os.environ if environ is None else environ
    args = vars(build_parser().parse_args(list(argv)))

    def pick(name: str) -> str | None:
        flag = args.get(name.replace("-", "_"))
        if flag is not None:
            return str(flag)
        return env.get("DRAGUARD_" + name.upper().replace("-", "_")) or None

    cert, key = pick("cert"), pick("key")
    if (cert is None) != (key is None):
        raise ConfigError("--cert and --key go together")
    mode = pick("failure-mode") or "open"
    if mode not in ("open", "closed"):
        raise ConfigError(f"failure mode must be open or closed, not {mode!r}")
    metrics_dir = pick("metrics-dir")
    client_ca = pick("client-ca")
    policy = pick("policy")
    kubeconfig = pick("kubeconfig")
    return Config(
        host=pick("host") or "0.0.0.0",
        port=_port(pick("port"), DEFAULT_PORT),
        state_dir=Path(pick("state-dir") or DEFAULT_STATE_DIR),
        cert=Path(cert) if cert else None,
        key=Path(key) if key else None,
        workers=_number(pick("workers"), 2, "workers", int),
        threads=_number(pick("threads"), 4, "threads", int),
        keepalive=_number(pick("keepalive"), 120, "keepalive", int),
        policy=Path(policy) if policy else None,
        release=_release(pick("kubernetes-version"), pick("feature-gates")),
        failure_mode="closed" if mode == "closed" else "open",
        service=pick("service") or DEFAULT_SERVICE,
        namespace=pick("namespace") or DEFAULT_NAMESPACE,
        metrics_dir=Path(metrics_dir) if metrics_dir else None,
        log_level=pick("log-level") or "info",
        review_timeout=_seconds(pick("review-timeout"), REVIEW_TIMEOUT, "review timeout"),
        read_timeout=_seconds(pick("read-timeout"), READ_TIMEOUT, "read timeout"),
        client_ca=Path(client_ca) if client_ca else None,
        cluster_view=_switch(pick("cluster-view"), "cluster view"),
        kubeconfig=Path(kubeconfig) if kubeconfig else None,
        # The variable the kubelet sets in every pod (client-go's InClusterConfig reads it).
        in_cluster=kubeconfig is None and bool(env.get("KUBERNETES_SERVICE_HOST")),
        metrics_port=_metrics_port(pick("metrics-port"), pick("port")),
        metrics_host=pick("metrics-host"),
    )


def _metrics_port(text: str | None, serving: str | None) -> int | None:
    if text is None:
        return None
    port = _port(text, 0)
    if port == _port(serving, DEFAULT_PORT):
        raise ConfigError(f"--metrics-port must differ from --port ({port})")
    return port


_N = TypeVar("_N", int, float)


def _number(text: str | None, default: _N, name: str, read: Callable[[str], _N], *,
            most: _N | None = None, unit: str = "") -> _N:
    """`text` read as an int or float (`read`) above 0, and at most `most` when given."""
    if text is None:
        return default
    try:
        value = read(text)
    except ValueError:
        raise ConfigError(f"{name} must be a number{unit}, not {text!r}") from None
    if not (value > 0 and (most is None or value <= most)):  # NaN fails both
        raise ConfigError(f"{name} out of range: {text}")
    return value


def _port(text: str | None, default: int) -> int:
    return _number(text, default, "port", int, most=65535)


def _switch(text: str | None, name: str) -> bool:
    """A flag given (`True`) or DRAGUARD_<NAME> as true/false, 1/0, yes/no."""
    if text is None:
        return False
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off", ""):
        return False
    raise ConfigError(f"{name} must be true or false, not {text!r}")


def _seconds(text: str | None, default: float, name: str) -> float:
    return _number(text, default, name, float, most=3600.0, unit=" of seconds")


def _release(text: str | None, gates: str | None) -> Release:
    try:
        chosen = DEFAULT_RELEASE if text is None else release(text)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    values = parse_feature_gates(gates or "")
    applied = values if isinstance(values, str) else chosen.with_gates(values)
    if isinstance(applied, str):
        raise ConfigError(f"--feature-gates: {applied}")
    return applied
