"""Flags, environment and defaults into one frozen Config (draguard.webhook.config)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from draguard.schema.model.releases import DEFAULT_RELEASE, release
from draguard.webhook.config import Config, ConfigError, parse_config


@pytest.mark.parametrize(("argv", "env", "expected"), [
    pytest.param([], {}, {"port": 8443, "host": "0.0.0.0", "state_dir": Path("draguard-state"),
                          "failure_mode": "open", "release": DEFAULT_RELEASE, "cert": None},
                 id="defaults"),
    pytest.param(["--port", "9443", "--workers", "3", "--threads", "8"], {},
                 {"port": 9443, "workers": 3, "threads": 8}, id="flags"),
    pytest.param([], {"DRAGUARD_PORT": "9000", "DRAGUARD_FAILURE_MODE": "closed",
                      "DRAGUARD_STATE_DIR": "/s", "DRAGUARD_KUBERNETES_VERSION": "1.34"},
                 {"port": 9000, "failure_mode": "closed", "state_dir": Path("/s"),
                  "release": release("1.34")}, id="environment"),
    pytest.param(["--port", "9443"], {"DRAGUARD_PORT": "9000"}, {"port": 9443},
                 id="flag-beats-environment"),
    pytest.param(["--cert", "c.pem", "--key", "k.pem"], {},
                 {"cert": Path("c.pem"), "key": Path("k.pem"), "cert_file": Path("c.pem"),
                  "ca_file": None}, id="own-certificate"),
    pytest.param(["--state-dir", "st"], {},
                 {"cert_file": Path("st/tls.crt"), "key_file": Path("st/tls.key"),
                  "ca_file": Path("st/ca.crt")}, id="state-dir-files"),
    pytest.param(["--policy", "p.yaml", "--service", "dg", "--namespace", "x"], {},
                 {"policy": Path("p.yaml"), "service_dns": "dg.x.svc"}, id="policy-and-service"),
])
def test_parse_config(argv: list[str], env: dict[str, str], expected: dict[str, Any]) -> None:
    """Each source lands in the right field, flags first, then DRAGUARD_*, then defaults."""
    config = parse_config(argv, env)
    assert {name: getattr(config, name) for name in expected} == expected


@pytest.mark.parametrize(("argv", "env", "fragment"), [
    pytest.param(["--cert", "c.pem"], {}, "go together", id="cert-without-key"),
    pytest.param([], {"DRAGUARD_PORT": "http"}, "must be a number", id="port-not-number"),
    pytest.param(["--port", "70000"], {}, "out of range", id="port-too-big"),
    pytest.param([], {"DRAGUARD_FAILURE_MODE": "maybe"}, "open or closed", id="bad-mode"),
    pytest.param(["--kubernetes-version", "1.20"], {}, "unsupported", id="old-release"),
])
def test_parse_config_rejects(argv: list[str], env: dict[str, str], fragment: str) -> None:
    """Unusable values are a ConfigError that says what is wrong."""
    with pytest.raises(ConfigError, match=fragment):
        parse_config(argv, env)


def test_config_is_frozen() -> None:
    """The config cannot be changed once built."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().port = 1  # type: ignore[misc]
