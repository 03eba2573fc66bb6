"""`draguard certs`: the webhook's CA and serving certificate, on disk and in the cluster.

On a workstation (the state folder is `--dir`, default `$DRAGUARD_STATE_DIR` or
`./draguard-state`, the folder `draguard serve` uses; `--namespace` is the Service's namespace)::

    draguard certs init   --dir DIR [--service draguard] [--namespace draguard-system]
                          [--key-type ecdsa|rsa] [--ca-days 3650] [--leaf-days 365] [--force]
    draguard certs renew  --dir DIR [--service …] [--namespace …] [--key-type …]
                          [--leaf-days 365] [--force]  # only when due, unless --force
    draguard certs check  --dir DIR [-o text|json]      # exit 1 when wrong or due
    draguard certs bundle --dir DIR                     # caBundle: one base64 line

In the cluster, run by the deploy/ Job and CronJob with a writable
emptyDir as `--dir`. The serving Secret is `--secret`/`--from-secret`; the CA with its
key is kept in `<secret>-ca` (or `--ca-secret`). Install (idempotent, keeps an
existing CA and a still-good serving certificate)::

    draguard certs init --dir /tmp/certs --namespace draguard-system \\
        --from-secret draguard-tls --in-cluster
    draguard certs publish --dir /tmp/certs --namespace draguard-system \\
        --secret draguard-tls --webhook-config draguard --in-cluster

Renewal CronJob (reissues the serving certificate with the same CA when less than a
third of its life is left; publish is then a no-op or updates the Secret only)::

    draguard certs renew --dir /tmp/certs --namespace draguard-system \\
        --from-secret draguard-tls --in-cluster
    draguard certs publish --dir /tmp/certs --namespace draguard-system \\
        --secret draguard-tls --webhook-config draguard --in-cluster

`publish` writes the `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`, `ca.crt`) and the
Opaque CA Secret (`ca.crt`, `ca.key`), then patches `caBundle` into every webhook of the
ValidatingWebhookConfiguration and MutatingWebhookConfiguration named
`--webhook-config`. Outside a pod use `--kubeconfig PATH` instead of `--in-cluster`.
Its service account needs get/create/update on those two Secrets and get/patch on the
two webhook configurations.

Exit codes: 0 fine; 1 `check` found a problem or renewal is due, or `publish` found
neither webhook configuration; 2 usage, or a file or Secret that is missing or unusable
(the message names it), or an API error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TextIO, cast

from draguard.certs.authority import (
    DEFAULT_CA_DAYS,
    DEFAULT_LEAF_DAYS,
    DEFAULT_NAMESPACE,
    DEFAULT_SERVICE,
    KEY_TYPES,
    require_dns_label,
)
from draguard.certs.cluster import (
    ClusterApi,
    ClusterError,
    KubernetesApi,
    default_ca_secret,
    fetch_authority,
    fetch_serving,
    publish,
)
from draguard.certs.errors import CertificateFileError
from draguard.certs.files import (
    DEFAULT_STATE_DIR,
    CertificateOptions,
    CheckReport,
    StatePaths,
    ca_bundle_b64,
    check,
    create_certificates,
    ensure_certificates,
    load_pair,
    renew,
    renewal_reason,
)

DEFAULT_DIR = f"./{DEFAULT_STATE_DIR}"
PROG = "draguard certs"

Connect = Callable[[argparse.Namespace], ClusterApi]


def main(
    argv: Sequence[str],
    *,
    connect: Connect | None = None,
    now: dt.datetime | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one `draguard certs` subcommand; `connect` and `now` are seams for tests."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    parser = build_parser(os.environ.get("DRAGUARD_STATE_DIR") or DEFAULT_DIR)
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse has printed usage or help already
        return int(exc.code or 0)
    run = cast(Callable[[argparse.Namespace, Context], int], args.run)
    context = Context(connect or _connect_for_real, now, out)
    try:
        return run(args, context)
    except (CertificateFileError, ClusterError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=err)
        hint = _hint(args, exc)
        if hint:
            print(f"{PROG}: {hint}", file=err)
        return 2


@dataclass(frozen=True, slots=True)
class Context:
    """What a subcommand needs besides its options: the cluster, the clock, the output."""

    connect: Connect
    now: dt.datetime | None
    out: TextIO

    def say(self, line: str) -> None:
        print(line, file=self.out)


# --- subcommands ----------------------------------------------------------------------


def run_init(args: argparse.Namespace, ctx: Context) -> int:
    """Create the CA and serving certificate, or reuse good ones (from the cluster, too)."""
    paths = StatePaths.of(args.dir)
    if args.from_secret:
        api = ctx.connect(args)
        ca_secret = args.ca_secret or default_ca_secret(args.from_secret)
        if fetch_authority(api, paths.dir, ca_secret=ca_secret, namespace=args.namespace):
            ctx.say(f"fetched the CA from Secret {args.namespace}/{ca_secret}")
            if fetch_serving(api, paths.dir, secret=args.from_secret, namespace=args.namespace):
                ctx.say(f"fetched the serving pair from Secret {args.namespace}/{args.from_secret}")
    # --force makes new files; without it good files are reused and broken ones refused.
    issue = create_certificates if args.force else partial(ensure_certificates, on_broken="raise")
    ensured = issue(paths.dir, **_options(args, ctx))
    verb = {
        "created": "created a new CA and serving certificate",
        "reused": "reused the CA and serving certificate",
        "leaf-issued": "kept the CA and issued a new serving certificate",
    }[ensured.action]
    because = f" ({ensured.reason})" if ensured.action == "leaf-issued" else ""
    ctx.say(f"{verb} in {paths.dir}{because}")
    _describe(ctx, paths)
    return 0


def run_renew(args: argparse.Namespace, ctx: Context) -> int:
    """Issue a new serving certificate with the same CA, when due or with `--force`."""
    paths = StatePaths.of(args.dir)
    reason: str | None = "forced" if args.force else None
    if args.from_secret:
        api = ctx.connect(args)
        ca_secret = args.ca_secret or default_ca_secret(args.from_secret)
        if not fetch_authority(api, paths.dir, ca_secret=ca_secret, namespace=args.namespace):
            raise CertificateFileError(
                f"Secret {args.namespace}/{ca_secret}",
                "not found; run `draguard certs init --from-secret` and publish first",
            )
        if not fetch_serving(api, paths.dir, secret=args.from_secret, namespace=args.namespace):
            reason = reason or f"Secret {args.namespace}/{args.from_secret} not found"
    if reason is None:
        reason = renewal_reason(paths.dir, **_options(args, ctx))
    if reason is None:
        leaf = load_pair(paths.tls_cert, paths.tls_key)
        ctx.say(f"not renewed: {paths.tls_cert} is good until {leaf.not_after:%Y-%m-%d %H:%M} UTC")
        return 0
    renew(paths.dir, **_options(args, ctx))
    ctx.say(f"renewed the serving certificate in {paths.dir} with the same CA ({reason})")
    _describe(ctx, paths)
    return 0


def _options(args: argparse.Namespace, ctx: Context) -> CertificateOptions:
    """The certificate options `init` and `renew` were given (renew has no --ca-days, and
    without --key-type keeps the current key's type)."""
    options = CertificateOptions(service=args.service, namespace=args.namespace,
                                 key_type=args.key_type, leaf_days=args.leaf_days,
                                 extra_sans=tuple(args.extra_san), now=ctx.now)
    if "ca_days" in args:
        options["ca_days"] = args.ca_days
    return options


def run_check(args: argparse.Namespace, ctx: Context) -> int:
    """Report on the state folder; 1 when anything is wrong or renewal is due."""
    # A key that does not match its certificate is a finding like any other (exit 1,
    # `keyMatches: false` in JSON); only missing or unparsable files are errors (exit 2).
    report = check(args.dir, service=args.service, namespace=args.namespace, now=ctx.now)
    if args.output == "json":
        ctx.say(json.dumps(report.as_dict(), indent=2))
    else:
        _print_report(ctx, report)
    return 0 if report.ok else 1


def run_bundle(args: argparse.Namespace, ctx: Context) -> int:
    """Print the CA bundle as one base64 line for a webhook configuration's `caBundle`."""
    ctx.say(ca_bundle_b64(args.dir))
    return 0


def run_publish(args: argparse.Namespace, ctx: Context) -> int:
    """Write both Secrets and patch `caBundle` into both webhook configurations."""
    api = ctx.connect(args)
    result = publish(
        api,
        args.dir,
        secret=args.secret,
        namespace=args.namespace,
        webhook_config=args.webhook_config,
        ca_secret=args.ca_secret,
        now=ctx.now,
    )
    for name, outcome in result.secrets:
        ctx.say(f"Secret {args.namespace}/{name}: {outcome}")
    for kind, patched, count in result.configurations:
        detail = f" ({count} webhook{'s' if count != 1 else ''})" if patched == "patched" else ""
        ctx.say(f"{kind} {args.webhook_config}: {patched}{detail}")
    if not result.found_configuration:
        ctx.say(f"neither webhook configuration named {args.webhook_config!r} exists")
        return 1
    return 0


# --- options --------------------------------------------------------------------------


def build_parser(default_dir: str) -> argparse.ArgumentParser:
    """The `draguard certs` parser, one subparser per subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="CA and serving certificates for the draguard webhook."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, run: Callable[[argparse.Namespace, Context], int], summary: str
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=summary)
        sub.set_defaults(run=run)
        sub.add_argument(
            "--dir",
            type=Path,
            default=Path(default_dir),
            help=f"state folder (default $DRAGUARD_STATE_DIR or {DEFAULT_DIR})",
        )
        sub.add_argument(
            "--namespace",
            default=DEFAULT_NAMESPACE,
            help=f"the Service's and Secrets' namespace (default {DEFAULT_NAMESPACE})",
        )
        return sub

    init = command("init", run_init, "create a CA and serving certificate, or reuse good ones")
    renew_ = command("renew", run_renew, "reissue the serving certificate with the same CA")
    check_ = command("check", run_check, "report expiry, names, key match, chain, renewal")
    command("bundle", run_bundle, "print the CA bundle as one base64 line (caBundle)")
    publish_ = command(
        "publish", run_publish, "write the Secrets and patch caBundle in the cluster"
    )

    for sub in (init, renew_, check_):
        sub.add_argument(
            "--service",
            type=_label("service"),
            default=DEFAULT_SERVICE,
            help=f"the webhook's Service name (default {DEFAULT_SERVICE})",
        )
    init.add_argument(
        "--key-type",
        choices=KEY_TYPES,
        default="ecdsa",
        help="key algorithm: ECDSA P-256 (default) or RSA 2048",
    )
    renew_.add_argument(
        "--key-type",
        choices=KEY_TYPES,
        default=None,
        help="key algorithm of the new serving key (default: that of the current one)",
    )
    for sub in (init, renew_):
        sub.add_argument(
            "--leaf-days",
            type=_days,
            default=DEFAULT_LEAF_DAYS,
            help=f"serving certificate validity (default {DEFAULT_LEAF_DAYS})",
        )
        sub.add_argument(
            "--extra-san",
            action="append",
            default=[],
            metavar="NAME",
            help="another DNS name or IP address for the serving certificate",
        )
        sub.add_argument(
            "--from-secret",
            metavar="SECRET",
            help="start from the CA (and serving pair) kept in the cluster",
        )
        _cluster_options(sub)
    init.add_argument(
        "--ca-days",
        type=_days,
        default=DEFAULT_CA_DAYS,
        help=f"CA validity (default {DEFAULT_CA_DAYS})",
    )
    init.add_argument(
        "--force",
        action="store_true",
        help="make a new CA and serving certificate whatever is there",
    )
    renew_.add_argument("--force", action="store_true", help="renew even when not due")
    check_.add_argument("-o", "--output", choices=("text", "json"), default="text")
    publish_.add_argument("--secret", required=True, help="the kubernetes.io/tls Secret to write")
    publish_.add_argument(
        "--webhook-config",
        required=True,
        help="name of the Validating- and MutatingWebhookConfiguration",
    )
    _cluster_options(publish_)
    return parser


def _cluster_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--ca-secret",
        metavar="SECRET",
        help="the Secret that keeps the CA and its key (default <secret>-ca)",
    )
    where = sub.add_mutually_exclusive_group()
    where.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
    where.add_argument("--kubeconfig", metavar="PATH", help="use this kubeconfig file")


def _label(what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            require_dns_label(what, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    return parse


def _days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text!r}") from None
    if days < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 day, got {days}")
    return days


def _connect_for_real(args: argparse.Namespace) -> ClusterApi:
    return KubernetesApi.connect(in_cluster=args.in_cluster, kubeconfig=args.kubeconfig)


# --- output ---------------------------------------------------------------------------


def _describe(ctx: Context, paths: StatePaths) -> None:
    ca = load_pair(paths.ca_cert, paths.ca_key)
    leaf = load_pair(paths.tls_cert, paths.tls_key)
    ctx.say(
        f"  {paths.ca_cert}: {ca.cert.subject.rfc4514_string()}, "
        f"valid until {ca.not_after:%Y-%m-%d %H:%M} UTC"
    )
    ctx.say(
        f"  {paths.tls_cert}: {', '.join(leaf.sans)}; "
        f"valid until {leaf.not_after:%Y-%m-%d %H:%M} UTC"
    )


def _print_report(ctx: Context, report: CheckReport) -> None:
    ctx.say(f"{report.state_dir}:")
    ctx.say(f"  CA       {report.ca_subject}, valid until {report.ca_not_after:%Y-%m-%d %H:%M} UTC")
    ctx.say(
        f"  serving  valid {report.leaf_not_before:%Y-%m-%d %H:%M} to "
        f"{report.leaf_not_after:%Y-%m-%d %H:%M} UTC"
    )
    ctx.say(f"  names    {', '.join(report.sans) or '(none)'}")
    ctx.say(f"  chain    {'verifies' if report.chain_verifies else report.chain_error}")
    for problem in report.problems:
        ctx.say(f"  problem: {problem}")
    ctx.say("  ok" if report.ok else f"  {len(report.problems)} problem(s)")


def _hint(args: argparse.Namespace, exc: Exception) -> str:
    if not isinstance(exc, CertificateFileError):
        return ""
    if str(exc.path).startswith("Secret "):
        return (
            "fix or delete that Secret; without the CA Secret the next `init --from-secret` "
            "makes a new CA, and publish then updates the caBundle"
        )
    if args.command == "renew" and exc.path.name in ("ca.crt", "ca.key"):
        return (
            "renewal keeps the CA, so it needs a good one; `draguard certs init --force` "
            "makes a new CA (then publish it so the caBundle follows)"
        )
    if args.command in ("init", "renew") and not args.force:
        what = "a new CA and serving certificate" if args.command == "init" else "a new one"
        return f"fix or remove the file, or pass --force to make {what}"
    if exc.reason == "no such file":
        return "`draguard certs init` creates the files"
    return ""
