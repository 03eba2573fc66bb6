"""Options that select upstream behaviour for one validation run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from draguard.schema.model.releases import DEFAULT_RELEASE, Release


@dataclass(frozen=True, slots=True)
class Options:
    """How to validate: which release to imitate and what is known about the cluster.

    `namespace_labels` are the labels of the object's Namespace; `None` means unknown,
    and then the admin-access authorization check (§3.7) is skipped, as lint does.
    `default_namespace` fills a missing `metadata.namespace` the way kubectl does.
    `kubernetes_patch` is the patch level when known (release notes name patch ranges);
    `profiles` turns on the advice for consumers such as Kueue (issue 7).
    `remember_specs` memoizes verdicts per spec: worth it where the same spec comes
    again and again (the webhook: one claim per pod from a template), a cost where
    every document differs (a repository under lint).
    `feature_gates` names the alpha gates turned on (`releases.ALPHA_GATES`, e.g.
    DRADerivedAttributes), as `--feature-gates=X=true` does on a cluster; a gate the
    release does not have changes nothing. The CLI's and serve's `--feature-gates` also
    put every gate set away from its default into `release` (`Release.with_gates`, which
    refuses what kube-apiserver refuses), so a caller holding only the release agrees.
    """

    release: Release = DEFAULT_RELEASE
    namespace_labels: Mapping[str, str] | None = None
    default_namespace: str | None = None
    kubernetes_patch: int | None = None
    profiles: frozenset[str] = frozenset()
    remember_specs: bool = False
    feature_gates: frozenset[str] = frozenset()


DEFAULT_OPTIONS = Options()
