"""The rendered manifests keep the cluster safe: webhook scope, timeouts, pods, RBAC, names."""

from __future__ import annotations

import importlib.metadata
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from draguard.certs.authority import service_dns_names
from draguard.certs.cli import build_parser as certs_parser
from draguard.deploy.render import CERT_MODES, DEFAULT_IMAGE, RenderOptions, render
from draguard.schema.policy.file import parse_policy
from draguard.webhook.config import parse_config

Manifest = dict[str, Any]

OPTIONS = [
    pytest.param(RenderOptions(certs=mode, **extra), id=f"{mode}-{label}")
    for mode in CERT_MODES
    for label, extra in (("defaults", {}), ("namespace-ops", {"namespace": "ops"}),
                         ("cluster-view", {"namespace": "ops", "cluster_view": True}))
]
VERSIONS = ("v1", "v1beta2", "v1beta1")
RESOURCES = ("resourceclaims", "resourceclaimtemplates")
OPERATIONS = ("CREATE", "UPDATE")


def only(mode: str) -> pytest.MarkDecorator:
    """Parametrize `options` with the OPTIONS of one certificate mode (overrides the fixture)."""
    chosen = [p for p in OPTIONS if p.values[0].certs == mode]  # type: ignore[union-attr]
    return pytest.mark.parametrize("options", chosen)


@pytest.fixture(params=OPTIONS)
def options(request: pytest.FixtureRequest) -> RenderOptions:
    value: RenderOptions = request.param
    return value


@pytest.fixture
def manifests(options: RenderOptions) -> list[Manifest]:
    rendered: list[Manifest] = render(options)
    return rendered


def all_of(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def one(manifests: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = [m for m in all_of(manifests, kind) if name in (None, m["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def webhooks(manifests: list[Manifest]) -> Iterator[tuple[str, Manifest]]:
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        for webhook in one(manifests, kind)["webhooks"]:
            yield kind, webhook


def pod_specs(manifests: list[Manifest]) -> Iterator[tuple[str, Manifest]]:
    for manifest in manifests:
        spec = manifest.get("spec", {})
        if manifest["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        if "template" in spec:
            yield f"{manifest['kind']}/{manifest['metadata']['name']}", spec["template"]["spec"]


def containers(pod: Manifest) -> list[Manifest]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def webhook_container(manifests: list[Manifest]) -> Manifest:
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    result: Manifest = container
    return result


# --- webhook configurations ---------------------------------------------------------


def test_webhooks_exclude_kube_system_and_their_own_namespace(
    manifests: list[Manifest], options: RenderOptions
) -> None:
    """Every webhook skips kube-system and draguard's namespace, so draguard can always restart."""
    for _, webhook in webhooks(manifests):
        expressions = webhook["namespaceSelector"]["matchExpressions"]
        excluded = {
            value
            for e in expressions
            if e["key"] == "kubernetes.io/metadata.name" and e["operator"] == "NotIn"
            for value in e["values"]
        }
        assert {"kube-system", options.namespace} <= excluded
        assert "objectSelector" not in webhook


@pytest.mark.parametrize(
    ("kind", "timeout", "failure_policy"),
    [
        pytest.param("ValidatingWebhookConfiguration", 3, "Fail", id="validate"),
        pytest.param("MutatingWebhookConfiguration", 2, "Ignore", id="mutate"),
    ],
)
def test_timeouts_and_failure_policies_are_the_documented_defaults(
    manifests: list[Manifest], kind: str, timeout: int, failure_policy: str
) -> None:
    """Validation fails closed within 3 s, mutation fails open within 2 s."""
    (webhook,) = one(manifests, kind)["webhooks"]
    assert (webhook["timeoutSeconds"], webhook["failurePolicy"]) == (timeout, failure_policy)


def test_webhooks_have_no_side_effects_and_speak_admission_v1(manifests: list[Manifest]) -> None:
    """sideEffects None (dry-run safe), AdmissionReview v1 only, equivalent versions matched."""
    for _, webhook in webhooks(manifests):
        assert webhook["sideEffects"] == "None"
        assert webhook["admissionReviewVersions"] == ["v1"]
        assert webhook["matchPolicy"] == "Equivalent"


def test_mutation_is_never_reinvoked(manifests: list[Manifest]) -> None:
    """The mutating webhook's patch is computed once (it is idempotent anyway)."""
    (webhook,) = one(manifests, "MutatingWebhookConfiguration")["webhooks"]
    assert webhook["reinvocationPolicy"] == "Never"


def test_rules_cover_exactly_both_resources_in_all_three_versions(
    manifests: list[Manifest],
) -> None:
    """Rules match CREATE/UPDATE of claims and templates in v1, v1beta2, v1beta1, nothing else."""
    expected = set(itertools.product(["resource.k8s.io"], VERSIONS, RESOURCES, OPERATIONS))
    for kind, webhook in webhooks(manifests):
        covered = {
            combination
            for rule in webhook["rules"]
            for combination in itertools.product(
                rule["apiGroups"], rule["apiVersions"], rule["resources"], rule["operations"]
            )
        }
        assert covered == expected, kind
        assert all(rule["scope"] == "Namespaced" for rule in webhook["rules"])


def test_client_config_calls_the_rendered_service_on_its_port(manifests: list[Manifest]) -> None:
    """Each webhook calls the rendered Service by name, namespace and port, on its own path."""
    service = one(manifests, "Service")
    ports = {p["port"] for p in service["spec"]["ports"]}
    paths = {"ValidatingWebhookConfiguration": "/validate",
             "MutatingWebhookConfiguration": "/mutate"}
    for kind, webhook in webhooks(manifests):
        target = webhook["clientConfig"]["service"]
        assert target["name"] == service["metadata"]["name"]
        assert target["namespace"] == service["metadata"]["namespace"]
        assert target["port"] in ports
        assert target["path"] == paths[kind]
        assert "url" not in webhook["clientConfig"]


def test_service_443_reaches_the_container_on_8443(manifests: list[Manifest]) -> None:
    """The Service's port 443 targets the container port 8443 that serve listens on."""
    (port,) = one(manifests, "Service")["spec"]["ports"]
    container = webhook_container(manifests)
    by_name = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert port["port"] == 443
    assert by_name[port["targetPort"]] == 8443
    assert parse_config(container["args"][1:], environ={}).port == 8443


def test_selectors_pick_the_webhook_pods(manifests: list[Manifest]) -> None:
    """The Service, Deployment, PDB and spread constraint all select the webhook pods only."""
    deployment = one(manifests, "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selectors = [
        one(manifests, "Service")["spec"]["selector"],
        deployment["spec"]["selector"]["matchLabels"],
        one(manifests, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        *(c["labelSelector"]["matchLabels"]
          for c in deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]),
    ]
    for selector in selectors:
        assert selector.items() <= labels.items()
    for name, _ in pod_specs(manifests):
        if not name.startswith("Deployment/"):
            assert not selectors[0].items() <= _labels_of(manifests, name).items(), name


def _labels_of(manifests: list[Manifest], owner: str) -> dict[str, str]:
    kind, name = owner.split("/")
    spec = one(manifests, kind, name)["spec"]
    if kind == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    labels: dict[str, str] = spec["template"]["metadata"]["labels"]
    return labels


# --- the webhook pods ---------------------------------------------------------------


@pytest.mark.parametrize("replicas", [1, 2, 5])
def test_disruption_budget_keeps_a_pod_yet_never_blocks_a_drain(replicas: int) -> None:
    """With 2+ replicas one pod always serves; with 1 replica a drain can still evict it."""
    manifests = render(RenderOptions(replicas=replicas))
    budget = one(manifests, "PodDisruptionBudget")["spec"]
    assert "minAvailable" not in budget
    assert one(manifests, "Deployment")["spec"]["replicas"] == replicas
    assert budget["maxUnavailable"] >= 1
    if replicas >= 2:
        assert replicas - budget["maxUnavailable"] >= 1


def test_two_replicas_spread_over_nodes_by_default(manifests: list[Manifest]) -> None:
    """Two replicas, spread across nodes, and a rollout never removes a ready pod first."""
    spec = one(manifests, "Deployment")["spec"]
    assert spec["replicas"] == 2
    keys = {c["topologyKey"] for c in spec["template"]["spec"]["topologySpreadConstraints"]}
    assert "kubernetes.io/hostname" in keys
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


@pytest.mark.parametrize(
    ("probe", "path"),
    [pytest.param("readinessProbe", "/readyz", id="readiness"),
     pytest.param("livenessProbe", "/healthz", id="liveness")],
)
def test_probes_use_https_on_the_serving_port(
    manifests: list[Manifest], probe: str, path: str
) -> None:
    """Readiness asks /readyz and liveness /healthz, over HTTPS on the named serving port."""
    container = webhook_container(manifests)
    get = container[probe]["httpGet"]
    assert (get["path"], get["scheme"]) == (path, "HTTPS")
    assert get["port"] in {p["name"] for p in container["ports"]}
    # A probe must give up before the apiserver's webhook timeout would matter.
    assert container[probe]["timeoutSeconds"] <= 3


def test_every_container_runs_locked_down(manifests: list[Manifest]) -> None:
    """Non-root, read-only root, no escalation, no capabilities, seccomp RuntimeDefault."""
    specs = list(pod_specs(manifests))
    assert specs
    for owner, pod in specs:
        assert pod["securityContext"]["runAsNonRoot"] is True, owner
        assert pod["securityContext"]["runAsUser"] != 0, owner
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", owner
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            assert not pod.get(flag), (owner, flag)
        assert not any("hostPath" in volume for volume in pod.get("volumes", [])), owner
        for container in containers(pod):
            where = (owner, container["name"])
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["readOnlyRootFilesystem"] is True, where
            assert context.get("privileged", False) is False, where
            assert context["capabilities"]["drop"] == ["ALL"], where
            assert not context["capabilities"].get("add"), where
            assert context["seccompProfile"]["type"] == "RuntimeDefault", where


def test_every_container_has_requests_and_limits(manifests: list[Manifest]) -> None:
    """Each container requests and caps CPU and memory, so it is schedulable and bounded."""
    for owner, pod in pod_specs(manifests):
        for container in containers(pod):
            resources = container["resources"]
            for bound in ("requests", "limits"):
                assert set(resources[bound]) == {"cpu", "memory"}, (owner, bound)


def test_every_writable_path_is_an_empty_dir(manifests: list[Manifest]) -> None:
    """Only emptyDir mounts are writable; Secret and ConfigMap mounts are read-only."""
    for owner, pod in pod_specs(manifests):
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for container in containers(pod):
            for mount in container.get("volumeMounts", []):
                volume = volumes[mount["name"]]
                if "emptyDir" not in volume:
                    assert mount.get("readOnly") is True, (owner, mount["name"])


def test_image_is_the_package_version_by_default() -> None:
    """The default image tag follows the package version, so a release renders its own image."""
    assert f"draguard:{importlib.metadata.version('draguard')}" == DEFAULT_IMAGE
    images = {c["image"] for _, pod in pod_specs(render()) for c in containers(pod)}
    assert images == {DEFAULT_IMAGE}


def test_serve_accepts_the_deployment_arguments(manifests: list[Manifest]) -> None:
    """`draguard serve` parses the container's arguments, reading TLS and policy from the mounts."""
    container = webhook_container(manifests)
    assert container["args"][0] == "serve"
    config = parse_config(container["args"][1:], environ={})
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert config.cert is not None and config.key is not None and config.policy is not None
    assert mounts[str(config.cert.parent)] == mounts[str(config.key.parent)] == "tls"
    assert mounts[str(config.policy.parent)] == "policy"
    assert config.failure_mode == "open"


def test_policy_configmap_is_a_valid_policy_under_the_mounted_name(
    manifests: list[Manifest],
) -> None:
    """The shipped policy parses, and the file serve reads is a key of the mounted ConfigMap."""
    config = parse_config(webhook_container(manifests)["args"][1:], environ={})
    assert config.policy is not None
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "policy"]
    configmap = one(manifests, "ConfigMap", volume["configMap"]["name"])
    parse_policy(configmap["data"][config.policy.name])


def test_tls_secret_mounted_is_the_one_the_certificates_go_to(manifests: list[Manifest]) -> None:
    """The Secret the pods mount is the one cert-manager or `draguard certs publish` writes."""
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "tls"]
    secret = volume["secret"]["secretName"]
    certificates = all_of(manifests, "Certificate")
    if certificates:
        serving = {c["spec"]["secretName"] for c in certificates if not c["spec"].get("isCA")}
        assert secret in serving
    else:
        for owner, job_pod in pod_specs(manifests):
            for container in containers(job_pod):
                if container["args"][:2] == ["certs", "publish"]:
                    args = certs_parser("unused").parse_args(container["args"][1:])
                    assert args.secret == secret, owner


# --- certificates -------------------------------------------------------------------


@only("cert-manager")
def test_certificate_names_equal_the_service_dns_names(
    manifests: list[Manifest], options: RenderOptions
) -> None:
    """cert-manager's SANs are exactly the names the certs library issues for the Service."""
    service = one(manifests, "Service")["metadata"]
    certificate = one(manifests, "Certificate", "draguard-serving")
    expected = service_dns_names(service["name"], service["namespace"])
    assert certificate["spec"]["dnsNames"] == list(expected)
    assert f"{service['name']}.{service['namespace']}.svc" in expected


@only("cert-manager")
def test_ca_injection_points_at_the_serving_certificate_and_its_ca(
    manifests: list[Manifest], options: RenderOptions
) -> None:
    """inject-ca-from names the serving Certificate, signed by a CA Issuer with a long-lived CA."""
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        annotations = one(manifests, kind)["metadata"]["annotations"]
        namespace, name = annotations["cert-manager.io/inject-ca-from"].split("/")
        serving = one(manifests, "Certificate", name)
        assert serving["metadata"]["namespace"] == namespace == options.namespace
    issuer = one(manifests, "Issuer", serving["spec"]["issuerRef"]["name"])
    ca = [c for c in all_of(manifests, "Certificate")
          if c["spec"]["secretName"] == issuer["spec"]["ca"]["secretName"]]
    assert len(ca) == 1 and ca[0]["spec"]["isCA"] is True
    # Renewal at a third of the leaf's life, like `draguard certs renew`.
    assert serving["spec"]["duration"] == "8760h"
    assert serving["spec"]["renewBefore"] == "2920h"


@only("self")
def test_certificate_jobs_name_the_service_secret_and_webhook_configurations(
    manifests: list[Manifest], options: RenderOptions
) -> None:
    """Every `draguard certs` command line parses and names the rendered objects."""
    service = one(manifests, "Service")["metadata"]["name"]
    configurations = {one(manifests, k)["metadata"]["name"]
                      for k in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")}
    commands = []
    for owner, pod in pod_specs(manifests):
        for container in containers(pod):
            if container["args"][0] != "certs":
                continue
            env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
            assert env == {"POD_NAMESPACE": "metadata.namespace"}, owner
            args = certs_parser("unused").parse_args(container["args"][1:])
            commands.append(args.command)
            assert args.namespace == "$(POD_NAMESPACE)" and args.in_cluster, owner
            if args.command == "publish":
                assert {args.webhook_config} == configurations
            else:
                assert args.service == service
    assert sorted(commands) == ["init", "publish", "publish", "renew"]


# --- RBAC ---------------------------------------------------------------------------


RBAC_CASES = [
    ("draguard", "list", "resource.k8s.io", "deviceclasses", "", None, True),
    ("draguard", "watch", "resource.k8s.io", "deviceclasses", "", None, True),
    ("draguard", "get", "", "configmaps", "draguard-policy", "NS", True),
    ("draguard", "get", "", "configmaps", "kube-root-ca.crt", "NS", False),
    ("draguard", "update", "", "configmaps", "draguard-policy", "NS", False),
    ("draguard", "get", "", "secrets", "draguard-tls", "NS", False),
    ("draguard", "get", "", "secrets", "draguard-tls-ca", "NS", False),
    ("draguard", "create", "resource.k8s.io", "deviceclasses", "", None, False),
    ("draguard", "patch", "admissionregistration.k8s.io",
     "validatingwebhookconfigurations", "draguard", None, False),
    ("draguard", "list", "resource.k8s.io", "resourceclaims", "", "NS", False),
    ("draguard-certs", "get", "", "secrets", "draguard-tls-ca", "NS", True),
    ("draguard-certs", "update", "", "secrets", "draguard-tls", "NS", True),
    ("draguard-certs", "create", "", "secrets", "", "NS", True),
    ("draguard-certs", "get", "", "secrets", "other", "NS", False),
    ("draguard-certs", "create", "", "secrets", "", "kube-system", False),
    ("draguard-certs", "list", "", "secrets", "", "NS", False),
    ("draguard-certs", "get", "", "secrets", "draguard-tls", "kube-system", False),
    ("draguard-certs", "patch", "admissionregistration.k8s.io",
     "mutatingwebhookconfigurations", "draguard", None, True),
    ("draguard-certs", "patch", "admissionregistration.k8s.io",
     "validatingwebhookconfigurations", "someone-elses", None, False),
    ("draguard-certs", "delete", "admissionregistration.k8s.io",
     "validatingwebhookconfigurations", "draguard", None, False),
]


@pytest.mark.parametrize(
    ("account", "verb", "group", "resource", "name", "namespace", "expected"),
    [pytest.param(*case, id=f"{case[0]}-{case[1]}-{case[3]}-{case[4] or 'any'}-"
                  f"{case[5] or 'cluster'}") for case in RBAC_CASES],
)
def test_service_accounts_get_the_least_rbac(
    account: str, verb: str, group: str, resource: str, name: str, namespace: str | None,
    expected: bool, authorizer: Any,
) -> None:
    """The webhook reads DeviceClasses and its policy; the cert Job touches only its own objects."""
    options = RenderOptions(namespace="ops")
    manifests = render(options)
    where = options.namespace if namespace == "NS" else namespace
    assert authorizer(manifests, account, verb, group, resource, name, where) is expected


def test_rbac_has_no_wildcards_and_the_webhook_pods_do_not_get_the_job_account(
    manifests: list[Manifest],
) -> None:
    """No rule uses `*`, and only the certificate pods run as the certificate account."""
    for role in [*all_of(manifests, "Role"), *all_of(manifests, "ClusterRole")]:
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(key, []), (role["metadata"]["name"], key)
    for owner, pod in pod_specs(manifests):
        expected = "draguard" if owner.startswith("Deployment/") else "draguard-certs"
        assert pod["serviceAccountName"] == expected, owner


# The cluster view (issue 20): exactly list and watch on four resources, only when enabled.
VIEWED = [("resource.k8s.io", "deviceclasses"), ("resource.k8s.io", "resourceslices"),
          ("", "namespaces"), ("", "resourcequotas")]


@pytest.mark.parametrize(("group", "resource"), VIEWED)
@pytest.mark.parametrize("verb", ["list", "watch"])
def test_cluster_view_may_list_and_watch_what_the_checks_read(
    group: str, resource: str, verb: str, authorizer: Any,
) -> None:
    """With the cluster view the webhook may list and watch the four kinds cluster-wide."""
    manifests = render(RenderOptions(namespace="ops", cluster_view=True))
    assert authorizer(manifests, "draguard", verb, group, resource, "", None)


@pytest.mark.parametrize(("group", "resource"), VIEWED[1:])
def test_without_the_cluster_view_nothing_more_is_granted(
    group: str, resource: str, authorizer: Any,
) -> None:
    """Off (the default), the webhook can list no ResourceSlices, Namespaces or quotas."""
    manifests = render(RenderOptions(namespace="ops"))
    assert not authorizer(manifests, "draguard", "list", group, resource, "", None)
    assert not any(m["metadata"]["name"] == "draguard-cluster-view" for m in manifests)
    assert "--cluster-view" not in webhook_container(manifests)["args"]


def test_cluster_view_role_grows_by_exactly_list_and_watch() -> None:
    """The added role holds list and watch on the four resources and nothing else."""
    manifests = render(RenderOptions(cluster_view=True))
    role = one(manifests, "ClusterRole", "draguard-cluster-view")
    granted = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    assert granted == {(g, r, v) for g, r in VIEWED for v in ("list", "watch")}
    assert all("resourceNames" not in rule for rule in role["rules"])
    binding = one(manifests, "ClusterRoleBinding", "draguard-cluster-view")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "draguard",
                                    "namespace": "draguard-system"}]
    assert "--cluster-view" in webhook_container(manifests)["args"]


def test_cluster_view_may_reach_only_https_ports_out() -> None:
    """The NetworkPolicy lets the view out to the apiserver's ports (443, 6443), nothing else."""
    manifests = render(RenderOptions(cluster_view=True))
    policy = one(manifests, "NetworkPolicy")
    (rule,) = policy["spec"]["egress"]
    assert "to" not in rule
    assert {(p["port"], p["protocol"]) for p in rule["ports"]} == {(443, "TCP"), (6443, "TCP")}
