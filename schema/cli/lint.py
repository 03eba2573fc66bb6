"""`draguard lint PATH… | -`: validate DRA claims and templates as the apiserver would.

Parse options → read inputs → check every document → render → exit code
(`contract.md` §4): 0 all valid, 1 findings, 2 usage or unreadable input. Unreadable
inputs are named on stderr and the others are still checked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, BinaryIO, TextIO

from draguard.schema import lint
from draguard.schema.advice.claims import PROFILES
from draguard.schema.advice.codes import refusal
from draguard.schema.cli.frame import (
    WORKER_DIED,
    Parser,
    UsageError,
    add_feature_gates,
    add_jobs,
    parse_patch,
    release_with_gates,
    write,
)
from draguard.schema.model import releases
from draguard.schema.model.options import Options
from draguard.schema.read.sources import (
    Chunk,
    Unreadable,
    expand_paths,
    read_source,
    split_documents,
    split_exactly,
)
from draguard.schema.report import REPORTERS, DocumentResult, Report, render
from draguard.schema.validate import validate_object

if TYPE_CHECKING:
    from draguard.schema.cluster.checks import CheckSettings

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="draguard lint", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="files, folders (*.yaml *.yml *.json, recursively) or - for stdin")
    parser.add_argument("-o", "--output", choices=list(REPORTERS), default="text")
    parser.add_argument("--kubernetes-version", default=releases.DEFAULT_RELEASE.name,
                        help="imitate this release, e.g. 1.35 or 1.35.2 (default: %(default)s)")
    add_feature_gates(parser)
    parser.add_argument("-n", "--namespace", default="default",
                        help="namespace for objects without one, as kubectl fills it")
    parser.add_argument("--namespace-labels", metavar="K=V,...",
                        help="labels of the objects' namespace; without them the check that "
                             "adminAccess is only used in a namespace labelled "
                             "resource.kubernetes.io/admin-access=true is skipped")
    parser.add_argument("--profile", action="append", default=[], choices=PROFILES,
                        help="also the refusals and notes of this consumer (repeatable)")
    add_jobs(parser)
    parser.add_argument("--fail-on-warning", action="store_true",
                        help="exit 1 on warnings too")
    parser.add_argument("--disable", action="append", default=[], metavar="CODE",
                        help="drop warnings with this code (repeatable, or comma-separated)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="say on stderr what was skipped and why")
    cluster = parser.add_argument_group(
        "cluster-aware checks",
        "class-missing, attribute-unknown, alternative-unsatisfiable, quota-exceeded (warnings) "
        "and admin-access-namespace (an error, as the apiserver refuses it), or the levels "
        "--policy sets, against the "
        "cluster's DeviceClasses, ResourceSlices, Namespaces and ResourceQuotas; Namespaces "
        "among the PATHs count for admin-access-namespace even without these options")
    cluster.add_argument("--cluster-objects", action="append", default=[], metavar="DIR",
                         help="read the cluster's objects from these files or folders "
                              "(YAML/JSON, e.g. kubectl get -o yaml; repeatable)")
    cluster.add_argument("--from-cluster", action="store_true",
                         help="list the cluster's objects through the kubeconfig")
    cluster.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    cluster.add_argument("--context", help="kubeconfig context (default: the current one)")
    cluster.add_argument("--in-cluster", action="store_true",
                         help="use the Pod's service account instead of a kubeconfig")
    cluster.add_argument("--policy", metavar="FILE",
                         help="the levels of this policy file's clusterChecks: section (deny: "
                              "an error, warn, off), as draguard serve --policy uses them")
    return parser


def parse_labels(text: str | None) -> dict[str, str] | None:
    """`k=v,k2=v2` → a dict; an empty value is allowed (`k=`), a missing `=` is not."""
    if text is None:
        return None
    labels: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--namespace-labels: expected KEY=VALUE, got {pair!r}")
        labels[key] = value
    return labels


def build_options(args: argparse.Namespace) -> Options:
    release, gates = release_with_gates(args.kubernetes_version, args.feature_gates)
    return Options(release=release, namespace_labels=parse_labels(args.namespace_labels),
                   default_namespace=args.namespace,
                   kubernetes_patch=parse_patch(args.kubernetes_version),
                   profiles=frozenset(args.profile), feature_gates=gates)


def main(
    argv: Sequence[str], *, validate: lint.Validator = validate_object,
    stdin: BinaryIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None,
) -> int:
    """Run `draguard lint` with `argv`; returns the exit code (never raises SystemExit)."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
        options = build_options(args)
        disabled = disabled_codes(args.disable)
    except UsageError as exc:
        err.write(f"{parser.format_usage()}draguard lint: error: {exc}\n")
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK

    chunks, unreadable = _read_all(args.paths, stdin)
    for bad in unreadable:
        err.write(f"draguard lint: cannot read {bad.name}: {bad.reason}\n")

    policy = _policy_checks(args.policy)
    if isinstance(policy, str):
        err.write(f"draguard lint: {policy}\n")
        return EXIT_USAGE
    cluster = _read_cluster(args)
    if isinstance(cluster, str):
        err.write(f"draguard lint: {cluster}\n")
        return EXIT_USAGE
    if cluster is not None:
        for bad in cluster.unreadable:
            err.write(f"draguard lint: cannot read {bad.name}: {bad.reason}\n")
        unreadable = [*unreadable, *cluster.unreadable]

    report = Report(disabled=disabled)
    try:
        chunks, results = _run(chunks, report, args.output, options=options,
                               validate=validate, jobs=args.jobs)
    except lint.WorkerDied:  # a worker killed (out of memory, a crash in C code)
        err.write(f"draguard lint: {WORKER_DIED}\n")
        return EXIT_USAGE
    facts = lint.add_input_namespaces(chunks, results, cluster.facts if cluster else None)
    if args.verbose and options.namespace_labels is None and facts is None:
        err.write("draguard lint: admin-access namespace check skipped: no --namespace-labels, "
                  "Namespace among the inputs or cluster objects given\n")
    if facts is not None:
        results = lint.cluster_check(chunks, results, facts=facts,
                                     settings=cluster_settings(options, policy),
                                     options=options)
    report.extend(results)
    if cluster is not None:
        report.extend(cluster.results)
    if args.verbose:
        for result in report.results:
            if result.skipped:
                err.write(f"{result.file}:{result.line}: skipped document {result.document}"
                          f" ({result.kind or 'no kind'}): {result.skip_reason}\n")
    write(out, render(report, args.output))
    if unreadable:
        return EXIT_USAGE
    return EXIT_FINDINGS if report.has_findings(fail_on_warning=args.fail_on_warning) else EXIT_OK


def cluster_settings(options: Options, policy: CheckSettings | None = None) -> CheckSettings:
    """Lint's levels: the policy's (`--policy`), else every cluster code warns, but
    admin-access-namespace is an error unless the policy sets it.

    The apiserver itself refuses that one (upstream-rules.md §3.7), so it is an error as
    with --namespace-labels; given those labels, the rule set already checks it and the
    cluster check is off (one finding, not two).
    """
    from draguard.schema.cluster.checks import CheckSettings, Level  # CEL: only when used

    levels: dict[str, Level] = dict(policy.levels) if policy is not None else {}
    if options.namespace_labels is not None:
        levels["admin-access-namespace"] = "off"
    else:
        levels.setdefault("admin-access-namespace", "deny")
    return CheckSettings(levels)


def _policy_checks(path: str | None) -> CheckSettings | str | None:
    """`--policy`: its `clusterChecks:` levels, None without it, or the error text."""
    if path is None:
        return None
    from draguard.schema.policy.file import load_policy
    from draguard.schema.policy.model import PolicyError

    try:
        return load_policy(path).cluster_checks
    except PolicyError as exc:
        return str(exc)


def _read_cluster(args: argparse.Namespace) -> lint.ClusterInput | str | None:
    """The cluster view asked for by --cluster-objects / --from-cluster, None, or an error.

    The cluster modules (CEL, the kubernetes client) load only here: most lint runs
    have no use for them.
    """
    if not args.cluster_objects and not args.from_cluster:
        return None
    if args.cluster_objects and args.from_cluster:
        return "give --cluster-objects or --from-cluster, not both"
    if args.cluster_objects:
        return lint.read_cluster_files(args.cluster_objects)
    from draguard.schema.cluster import live
    from draguard.schema.cluster.facts import WATCHED

    try:
        api, _ = live.connect(live.Target(args.kubeconfig, args.context, args.in_cluster))
        objects = list(live.list_watched(api, WATCHED, progress=lambda _: None))
    except live.LiveError as exc:
        return str(exc)
    return lint.cluster_from_objects(objects, source="cluster")


def _read_all(paths: Sequence[str], stdin: BinaryIO | None) -> tuple[list[Chunk], list[Unreadable]]:
    """The inputs' documents and the inputs that could not be read. JSON is cut
    provisionally (`split_documents`): the checker decodes every chunk, so the main
    process does not decode each value first only to find where it ends."""
    chunks: list[Chunk] = []
    unreadable: list[Unreadable] = []
    for path in expand_paths(paths):
        source = read_source(path, stdin)
        if isinstance(source, Unreadable):
            unreadable.append(source)
        else:
            chunks.extend(split_documents(source, provisional=True))
    return chunks, unreadable


def _run(
    chunks: list[Chunk], report: Report, output: str, *,
    options: Options, validate: lint.Validator, jobs: int | None,
) -> tuple[list[Chunk], list[DocumentResult]]:
    """`lint.run` over the chunks; when a provisional cut was wrong (`lint.Recut`: a
    broken JSON stream, values on one line), over the chunks split exactly
    (`split_exactly`), so that the results are those of an exact split. Parts rendered
    by the first run are dropped with it (`parts_for` starts again)."""
    try:
        return chunks, lint.run(chunks, options=options, validate=validate, jobs=jobs,
                                parts=report.parts_for(output))
    except lint.Recut:
        pass
    exact = split_exactly(chunks)
    return exact, lint.run(exact, options=options, validate=validate, jobs=jobs,
                           parts=report.parts_for(output))


def disabled_codes(values: Sequence[str]) -> frozenset[str]:
    """The `--disable` codes (repeatable, comma-separated); an unknown code is a usage error.

    A misspelt code would otherwise silence nothing and go unnoticed.
    """
    codes = [code.strip() for value in values for code in value.split(",") if code.strip()]
    problem = refusal(codes)
    if problem is not None:
        raise UsageError(f"--disable: {problem}")
    return frozenset(codes)


