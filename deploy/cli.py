"""`draguard deploy render`: print the cluster manifests as one multi-document YAML.

For users without kustomize: the output equals `kubectl kustomize` of the chosen
overlay with the chosen namespace, image and replica count (README.md ("Install in a cluster")).
Exit codes: 0 rendered, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import get_args

from draguard.deploy.render import (
    DEFAULT_IMAGE,
    DEFAULT_NAMESPACE,
    DEFAULT_REPLICAS,
    CertMode,
    RenderOptions,
    render_yaml,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="draguard deploy", description="Cluster manifests.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    render = commands.add_parser(
        "render",
        help="print the manifests (kubectl apply -f -)",
        description="Print the manifests for `kubectl apply -f -`: the same objects as "
        "`kubectl kustomize deploy/overlays/<mode>` with these values.",
    )
    render.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                        help=f"namespace to install into (default {DEFAULT_NAMESPACE})")
    render.add_argument("--image", default=DEFAULT_IMAGE,
                        help=f"draguard container image (default {DEFAULT_IMAGE})")
    render.add_argument("--replicas", type=int, default=DEFAULT_REPLICAS,
                        help=f"webhook pods (default {DEFAULT_REPLICAS})")
    render.add_argument("--certs", choices=get_args(CertMode), default="self",
                        help="self: a Job runs `draguard certs`; cert-manager: cert-manager "
                        "issues them (default self)")
    render.add_argument("--cluster-view", action="store_true",
                        help="run the cluster checks (serve --cluster-view) and grant the "
                        "webhook list and watch on DeviceClasses, ResourceSlices, Namespaces "
                        "and ResourceQuotas")
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        options = RenderOptions(
            namespace=args.namespace, image=args.image, replicas=args.replicas, certs=args.certs,
            cluster_view=args.cluster_view,
        )
    except ValueError as exc:
        print(f"draguard deploy render: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render_yaml(options))
    return 0
