"""`--feature-gates` on every command that takes `--kubernetes-version` (issue 17).

Upstream: component-base featuregate feature_gate.go — `Set` parses `k=v,k2=v2`
("missing bool value for X", "invalid value of X=V, err: …" from strconv.ParseBool),
`unsafeSetFromMap` refuses a name the binary does not know ("unrecognized feature gate:
X") and a gate locked to its default ("cannot set feature gate X to V, feature is locked
to D"). The gates and their versioned specs: pkg/features at 1.37
(defaultVersionedKubernetesFeatureGates: DRADerivedAttributes alpha from 1.37,
DRAPrioritizedList locked from 1.37, DRAAdminAccess locked from 1.36, DRADeviceTaints GA
and not locked in 1.37, DynamicResourceAllocation locked from 1.35, removed in 1.38).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from draguard.schema.model.releases import check_gate, parse_feature_gates, release
from draguard.webhook.cli.main import main
from draguard.webhook.config import ConfigError, parse_config

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        tolerations: [{key: a, operator: Exists}]
        derivedAttributes:
        - {name: derived/numa, expression: "nope"}
    constraints:
    - {requests: [gpu], matchAttribute: derived/numa}
"""
LOCKED = "cannot set feature gate DRAPrioritizedList to false, feature is locked to true"
# Each command that takes --kubernetes-version, with what else it needs.
COMMANDS = [
    pytest.param(["lint"], id="lint"),
    pytest.param(["convert", "--to", "v1beta2"], id="convert"),
    pytest.param(["roundtrip"], id="roundtrip"),
    pytest.param(["explain"], id="explain"),
    pytest.param(["schema"], id="schema"),
]


@pytest.fixture
def claim(tmp_path: Path) -> str:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM)
    return str(path)


def _run(argv: list[str], claim: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    paths = [] if argv[0] == "schema" else [claim]
    code = main([*argv, *paths])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("argv", COMMANDS)
@pytest.mark.parametrize(
    ("gates", "version", "message"),
    [
        pytest.param("Foo=true", "1.37", "unrecognized feature gate: Foo", id="unknown"),
        pytest.param("DRADerivedAttributes=true", "1.36",
                     "unrecognized feature gate: DRADerivedAttributes (Kubernetes 1.36 does not "
                     "have it: added in 1.37)", id="not-yet-in-release"),
        pytest.param("DRAPrioritizedList=false", "1.37", LOCKED, id="locked"),
        pytest.param("DRADerivedAttributes", "1.37", "missing bool value for DRADerivedAttributes",
                     id="no-value"),
        pytest.param("DRADerivedAttributes=yes", "1.37",
                     'invalid value of DRADerivedAttributes=yes, err: strconv.ParseBool: parsing '
                     '"yes": invalid syntax', id="not-a-bool"),
    ],
)
def test_refused_gate_exits_2_naming_it(argv: list[str], gates: str, version: str, message: str,
                                        claim: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run([*argv, "--kubernetes-version", version, f"--feature-gates={gates}"],
                     claim, capsys)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("version", "gate", "value", "problem"),
    [
        pytest.param("1.34", "DRAPrioritizedList", False, None, id="beta-may-be-turned-off"),
        pytest.param("1.36", "DRAPrioritizedList", False, None, id="ga-not-yet-locked"),
        pytest.param("1.37", "DRAPrioritizedList", True, None, id="locked-to-its-own-value"),
        pytest.param("1.36", "DRAAdminAccess", False,
                     "cannot set feature gate DRAAdminAccess to false, feature is locked to true",
                     id="admin-access-locked-1.36"),
        pytest.param("1.37", "DRADeviceTaints", False, None, id="device-taints-ga-unlocked-1.37"),
        pytest.param("1.38", "DRADeviceTaints", False,
                     "cannot set feature gate DRADeviceTaints to false, feature is locked to true",
                     id="device-taints-locked-1.38"),
        pytest.param("1.34", "DynamicResourceAllocation", True, None, id="dra-ga-1.34"),
        pytest.param("1.35", "DynamicResourceAllocation", False,
                     "cannot set feature gate DynamicResourceAllocation to false, feature is "
                     "locked to true", id="dra-locked-1.35"),
        pytest.param("1.38", "DynamicResourceAllocation", True,
                     "unrecognized feature gate: DynamicResourceAllocation (Kubernetes 1.38 does "
                     "not have it: removed in 1.38)", id="dra-removed-1.38"),
        pytest.param("1.33", "DRAConsumableCapacity", True,
                     "unrecognized feature gate: DRAConsumableCapacity (Kubernetes 1.33 does not "
                     "have it: added in 1.34)", id="consumable-capacity-not-in-1.33"),
    ],
)
def test_gate_table(version: str, gate: str, value: bool, problem: str | None) -> None:
    assert check_gate(release(version), gate, value) == problem


def test_flag_parsing_follows_component_base() -> None:
    assert parse_feature_gates(" A = true ,,B=0, C=T") == {"A": True, "B": False, "C": True}
    assert parse_feature_gates("") == {}


def test_derived_attributes_gate_on_in_lint(claim: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Off (the default), the field is dropped with a warning; on, its expression is compiled."""
    assert main(["lint", claim]) == 0
    assert "release-drops-field" in capsys.readouterr().out
    assert main(["lint", "--feature-gates=DRADerivedAttributes=true", claim]) == 1
    out = capsys.readouterr().out
    assert "derivedAttributes[0].expression" in out and "undeclared reference to 'nope'" in out


def test_a_beta_gate_turned_off_drops_its_field(claim: str, capsys: pytest.CaptureFixture[str]) -> None:
    """DRADeviceTaints is GA but not locked in 1.37: off, the strategy drops tolerations."""
    assert main(["lint", "--feature-gates=DRADeviceTaints=false", claim]) == 0
    out = capsys.readouterr().out
    assert ("drops `tolerations` on create: DRADeviceTaints is set to false by --feature-gates"
            in out)


def test_serve_takes_the_flag_and_refuses_as_the_cli() -> None:
    config = parse_config(["--feature-gates", "DRADerivedAttributes=true"], {})
    assert config.release.derived_attributes
    with pytest.raises(ConfigError, match="feature is locked to true"):
        parse_config(["--feature-gates", "DRAPrioritizedList=false"], {})
    from_env = parse_config([], {"DRAGUARD_FEATURE_GATES": "DRADerivedAttributes=true"})
    assert from_env.release == config.release


def test_v1beta1_gate_in_1_38(claim: str, capsys: pytest.CaptureFixture[str]) -> None:
    """1.38 installs resource.k8s.io/v1beta1 only with DRAResourceV1beta1API
    (pkg/apis/resource/install): convert refuses without it, converts with it."""
    plain = ["convert", "--to", "v1beta1", "--kubernetes-version", "1.38"]
    assert main([*plain, claim]) == 1
    assert "only with the DRAResourceV1beta1API feature gate" in capsys.readouterr().err
    assert release("1.38").with_gates({"DRAResourceV1beta1API": True}) != release("1.38")
    main([*plain, "--feature-gates=DRAResourceV1beta1API=true", claim])
    assert "DRAResourceV1beta1API" not in capsys.readouterr().err
