"""The NetworkPolicy admits HTTPS to the webhook pods' port and nothing out (issue 15 §6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

BASE = Path(__file__).resolve().parents[2] / "deploy" / "base"


def load(name: str) -> Any:
    return yaml.safe_load((BASE / name).read_text())


def test_listed_in_the_base() -> None:
    assert "networkpolicy.yaml" in load("kustomization.yaml")["resources"]


def test_selects_the_webhook_pods_and_admits_only_their_port() -> None:
    policy, deployment = load("networkpolicy.yaml"), load("deployment.yaml")
    template = deployment["spec"]["template"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= template["metadata"]["labels"].items()
    assert selector == deployment["spec"]["selector"]["matchLabels"]
    [container] = template["spec"]["containers"]
    ports = {(p["containerPort"], p["protocol"]) for p in container["ports"]}
    [rule] = policy["spec"]["ingress"]
    assert {(p["port"], p["protocol"]) for p in rule["ports"]} == ports
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert policy["spec"]["egress"] == []
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
