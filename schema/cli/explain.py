"""`draguard explain PATH…`: which alternative each node would give, and why.

Parse options → read the inventory → explain → render → exit code: 0 schedulable on at
least one node (every Pod explained), 1 on none or a scheduling error, 2 usage or
unreadable input. Findings about the inputs (a broken slice, a slice naming an unknown
node) go to stderr with their file and line; the rest is still explained.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import BinaryIO, TextIO

from draguard.schema import explain
from draguard.schema.cli import frame
from draguard.schema.cluster.inventory import (
    Inventory,
    add_objects,
    check_references,
    read_inventory,
)
from draguard.schema.model import releases

EXIT_OK, EXIT_UNSCHEDULABLE, EXIT_USAGE = 0, 1, 2
# The dispatcher ends a `draguard explain` process with `os._exit` once its output is
# flushed (webhook/cli/main.py, `EXIT_WITHOUT_FREEING`): the model and the answer are
# not worth freeing object by object at exit: at 50,000 nodes that is a visible part of
# the command's time (figures in bench/RESULTS.md, issue 19).
EXIT_WITHOUT_FREEING = True
NEWEST_EXPLAINED = 37
OLDEST_EXPLAINED = 34  # v1 objects and the prioritized list's beta start here


def build_parser() -> argparse.ArgumentParser:
    parser = frame.Parser(prog="draguard explain", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files, folders (*.yaml *.yml *.json, recursively) or - for stdin: "
                             "Pods, claims, templates, DeviceClasses, ResourceSlices, Nodes")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--kubernetes-version", default=releases.DEFAULT_RELEASE.name,
                        help="imitate this release, 1.34 to 1.37, or a patch release "
                             "such as 1.35.2 (default: %(default)s)")
    frame.add_feature_gates(parser)
    parser.add_argument("--node", metavar="NAME", help="only this node, with its full story")
    parser.add_argument("-n", "--namespace",
                        help="namespace for objects without one, as kubectl fills it "
                             "(default: the context's, else default)")
    live = parser.add_argument_group("a live cluster")
    live.add_argument("--from-cluster", action="store_true",
                      help="read DeviceClasses, ResourceSlices, Nodes, claims, templates and "
                           "quotas from the cluster (PATHs add the Pods to explain)")
    live.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    live.add_argument("--context", help="kubeconfig context (default: the current one)")
    live.add_argument("--in-cluster", action="store_true",
                      help="use the Pod's service account instead of a kubeconfig")
    live.add_argument("--pod", metavar="NAME", help="also read this Pod from the cluster")
    return parser


def main(argv: Sequence[str], *, stdin: BinaryIO | None = None,
         stdout: TextIO | None = None, stderr: TextIO | None = None,
         keep: list[object] | None = None) -> int:
    """Run `draguard explain`; returns the exit code (never raises SystemExit).

    `keep` receives what the run would otherwise free on the way (the decoded input,
    the model, the answer), for a caller that ends the process without freeing them.
    """
    with _collection_off():
        return _run(argv, stdin, stdout, stderr, keep)


@contextmanager
def _collection_off() -> Iterator[None]:
    """No automatic garbage collection for the command: reading and explaining switch it
    off for themselves, and the text or JSON rendering of a large answer would otherwise
    rescan the whole unfrozen answer many times (a tenth of the run at 50,000 nodes)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _run(argv: Sequence[str], stdin: BinaryIO | None, stdout: TextIO | None,
         stderr: TextIO | None, keep: list[object] | None) -> int:
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
        release = _release(args.kubernetes_version, args.feature_gates)
        if not args.paths and not args.from_cluster:
            raise frame.UsageError("give PATHs, --from-cluster, or both")
    except frame.UsageError as exc:
        err.write(f"{parser.format_usage()}draguard explain: error: {exc}\n")
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    if args.from_cluster:
        loaded = _from_cluster(args, release, stdin, err)
        if isinstance(loaded, str):
            err.write(f"draguard explain: {loaded}\n")
            return EXIT_USAGE
        inventory = loaded
    else:
        inventory = read_inventory(args.paths, release=release,
                                   namespace=args.namespace or "default", stdin=stdin, keep=keep)
    if keep is not None:
        keep.append(inventory)
    for bad in inventory.unreadable:
        err.write(f"draguard explain: cannot read {bad.name}: {bad.reason}\n")
    if inventory.unreadable:
        return EXIT_USAGE
    for finding in inventory.findings:
        err.write(finding.render() + "\n")
    if args.node is not None and args.node not in _node_names(inventory):
        err.write(f"draguard explain: no node named {args.node!r} in the inputs\n")
        return EXIT_USAGE
    result = explain.explain(inventory, release=release,
                             patch=frame.parse_patch(args.kubernetes_version), node_name=args.node)
    if keep is not None:
        keep.append(result)
    if args.output == "json":
        # A fresh tree of dicts and lists (`to_json`), which cannot hold a cycle: the
        # encoder's cycle check (a dict entry per container) is a fifth of the encoding.
        frame.write(out, json.dumps(explain.to_json(result), ensure_ascii=False,
                                    check_circular=False) + "\n")
    else:
        frame.write(out, explain.render_text(result, detail=args.node is not None))
    if not result.pods:
        err.write("draguard explain: nothing to explain: no Pod and no unallocated claim\n")
        return EXIT_UNSCHEDULABLE
    return EXIT_OK if all(p.schedulable for p in result.pods) else EXIT_UNSCHEDULABLE


def _from_cluster(args: argparse.Namespace, release: releases.Release,
                  stdin: BinaryIO | None, err: TextIO) -> Inventory | str:
    """Files first (the Pods to explain), then the live cluster; or why it cannot be read."""
    # Imported here: the `kubernetes` client costs about half a second of start-up,
    # more than explaining a 5,000-node cluster from files (bench/RESULTS.md, issue 19).
    from draguard.schema.cluster import live

    def progress(line: str) -> None:
        err.write(f"\r{line}\033[K" if err.isatty() else f"{line}\n")

    try:
        api, context_namespace = live.connect(live.Target(args.kubeconfig, args.context,
                                                          args.in_cluster))
        namespace = args.namespace or context_namespace or "default"
        inventory = read_inventory(args.paths, release=release, namespace=namespace,
                                   stdin=stdin)
        # A generator: the cluster is listed (and may fail) while the model is built.
        objects = live.list_objects(api, namespace=namespace, pod=args.pod, progress=progress)
        add_objects(inventory, objects, source="cluster", release=release, namespace=namespace)
    except live.LiveError as exc:
        return str(exc)
    if err.isatty():
        err.write("\n")
    check_references(inventory)
    return inventory


def _release(version: str, gates: str) -> releases.Release:
    release, _ = frame.release_with_gates(version, gates)
    if not OLDEST_EXPLAINED <= release.minor <= NEWEST_EXPLAINED:
        raise frame.UsageError(f"explain imitates Kubernetes 1.{OLDEST_EXPLAINED} to "
                          f"1.{NEWEST_EXPLAINED}, not {version}")
    return release


def _node_names(inventory: Inventory) -> set[str]:
    names = {n.name for n in inventory.nodes}
    return names or {s.node_name for s in inventory.slices if s.node_name}
