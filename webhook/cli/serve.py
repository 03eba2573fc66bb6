"""`draguard serve`: parse the config → certificates → metrics folder → gunicorn.

With no arguments this is the README's "run" command: it makes (or reuses) a
throwaway CA and serving certificate in the state folder (`./draguard-state`, the
same default as `draguard certs`), listens on 8443, and prints the `draguard certs`
commands that give the CA bundle and check the certificates, and a `curl` line that
sends an example AdmissionReview. The bundle itself is printed only on request
(`draguard certs bundle`): a base64 blob in the log helps nobody.

    draguard serve [--host H] [--port P] [--state-dir DIR] [--cert FILE --key FILE]
                   [--service NAME] [--namespace NS] [--client-ca FILE] [--policy FILE]
                   [--kubernetes-version V] [--feature-gates G=B,...]
                   [--failure-mode open|closed]
                   [--review-timeout S] [--read-timeout S]
                   [--workers N] [--threads N] [--keepalive SECONDS]
                   [--cluster-view [--kubeconfig FILE]]
                   [--metrics-dir DIR] [--log-level LEVEL]
                   [--metrics-port PORT [--metrics-host ADDR]]
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from draguard.webhook.config import Config, ConfigError, parse_config

EXAMPLE_REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "00000000-0000-0000-0000-000000000001",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"},
        "operation": "CREATE",
        "namespace": "default",
        "name": "gpu-claim",
        "object": {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "gpu-claim"},
            "spec": {"devices": {"requests": [{
                "name": "gpu",
                "firstAvailable": [
                    {"name": "h100", "deviceClassName": "h100.nvidia.com"},
                    {"name": "a100", "deviceClassName": "a100.nvidia.com", "count": 2},
                ],
            }]}},
        },
    },
}


def main(argv: Sequence[str]) -> int:
    try:
        config = parse_config(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    except ConfigError as exc:
        print(f"draguard serve: {exc}", file=sys.stderr)
        return 2
    try:
        bundle = prepare_certificates(config)
    except Exception as exc:  # certificate files the user named or a state dir we cannot use
        print(f"draguard serve: {exc}", file=sys.stderr)
        return 1
    from draguard.webhook.serving.metricsdir import (
        prepare_multiprocess_dir,
        remove_multiprocess_dir,
    )

    metrics_dir = prepare_multiprocess_dir(config.metrics_dir)
    print_banner(config, self_made=bundle is not None)
    from draguard.webhook.serving.server import WebhookServer

    master = os.getpid()
    try:
        # returns through SystemExit when the master stops
        WebhookServer(config, app_factory=worker_app).run()
    finally:
        # Workers are forked inside run() and leave through this `finally` too (their
        # SystemExit): only the master may remove the folder all workers share.
        if config.metrics_dir is None and os.getpid() == master:
            remove_multiprocess_dir(metrics_dir)
    return 0


def worker_app(config: Config) -> Any:
    """The Flask app, built in each worker: imported there, so the master stays small."""
    from draguard.webhook.app import create_app

    return create_app(config)


def prepare_certificates(config: Config) -> str | None:
    """Make or reuse the state folder's certificates; the base64 CA bundle when self-made."""
    from draguard.certs.files import ca_bundle_b64, ensure_certificates, load_pair

    if config.cert is not None and config.key is not None:
        load_pair(config.cert, config.key)  # fail now, naming the file, not per connection
        return None
    ensured = ensure_certificates(config.state_dir, service=config.service,
                                  namespace=config.namespace)
    print(f"certificates {ensured.action} in {config.state_dir}"
          + (f" ({ensured.reason})" if ensured.reason else ""), file=sys.stderr)
    example = config.state_dir / "example-review.json"
    example.write_text(json.dumps(EXAMPLE_REVIEW, indent=2) + "\n")
    return ca_bundle_b64(config.state_dir)


def print_banner(config: Config, *, self_made: bool) -> None:
    """How to get the caBundle and check the certificates (when self-made), and a curl line."""
    port = config.port
    if self_made:
        where = ["--dir", str(config.state_dir)]
        names = ["--service", config.service, "--namespace", config.namespace]
        print("caBundle: " + shlex.join(["draguard", "certs", "bundle", *where]))
        print("check:    " + shlex.join(["draguard", "certs", "check", *where, *names]))
    ca = config.ca_file
    host = config.service_dns
    target = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
    curl = ["curl", "--resolve", f"{host}:{port}:{target}"]
    if ca is not None:
        curl += ["--cacert", str(ca)]
    curl += ["-H", "Content-Type: application/json",
             "--data", "@" + str(Path(config.state_dir) / "example-review.json"),
             f"https://{host}:{port}/validate"]
    print("try: " + shlex.join(curl), flush=True)
