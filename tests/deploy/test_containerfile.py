"""The Containerfile builds the image the manifests expect: entrypoint, user, port, packages."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path
from typing import Any

from draguard.deploy.render import render
from draguard.webhook.cli.main import COMMANDS

REPO = Path(__file__).resolve().parents[2]
CONTAINERFILE = REPO / "deploy" / "Containerfile"


def final_stage() -> dict[str, list[str]]:
    """Instructions of the last build stage: name → argument strings, in order."""
    lines: list[str] = []
    for raw in CONTAINERFILE.read_text(encoding="utf-8").splitlines():
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1] + " " + raw.strip()
        elif raw.strip() and not raw.lstrip().startswith("#"):
            lines.append(raw.strip())
    stage: dict[str, list[str]] = {}
    for line in lines:
        name, _, rest = line.partition(" ")
        if name.upper() == "FROM":
            stage = {}
        stage.setdefault(name.upper(), []).append(rest)
    return stage


def webhook_pod() -> dict[str, Any]:
    deployment = next(m for m in render() if m["kind"] == "Deployment")
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def test_entrypoint_is_draguard_and_the_manifests_pass_only_arguments() -> None:
    """Containers set `args` only, so every manifest command runs through the `draguard` entrypoint."""
    assert json.loads(final_stage()["ENTRYPOINT"][-1]) == ["draguard"]
    pods = [m["spec"]["template"]["spec"] for m in render() if m["kind"] in ("Deployment", "Job")]
    for pod in pods:
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            assert "command" not in container
            assert container["args"][0] in COMMANDS


def test_image_user_is_the_non_root_user_the_pods_require() -> None:
    """The image runs as the same numeric non-root UID and GID the pod security context sets."""
    user, _, group = final_stage()["USER"][-1].partition(":")
    context = webhook_pod()["securityContext"]
    assert (int(user), int(group)) == (context["runAsUser"], context["runAsGroup"])
    assert int(user) != 0


def test_exposed_port_is_the_container_port() -> None:
    """The image documents the port the Deployment's container listens on."""
    (container,) = webhook_pod()["containers"]
    assert final_stage()["EXPOSE"] == [str(p["containerPort"]) for p in container["ports"]]


def test_every_package_folder_is_copied_and_not_ignored() -> None:
    """Each folder pyproject maps into `draguard.*` reaches the build context and the image."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    folders = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    build_text = CONTAINERFILE.read_text(encoding="utf-8")
    copied = {shlex.split(line)[1].rstrip("/") for line in build_text.splitlines()
              if line.startswith("COPY ") and "--from" not in line}
    assert folders <= copied
    ignore = (REPO / "deploy" / "Containerfile.dockerignore").read_text(encoding="utf-8").split()
    assert {f"!{folder}/" for folder in folders} <= set(ignore)
    assert "Containerfile" in pyproject["tool"]["setuptools"]["package-data"]["draguard.deploy"]


def test_build_files_are_copied_and_not_ignored() -> None:
    """pyproject.toml and setup.py (which compiles the hot modules) reach the build stage."""
    copy_lines = [shlex.split(line) for line in CONTAINERFILE.read_text(encoding="utf-8").splitlines()
                  if line.startswith("COPY ") and "--from" not in line]
    copied = {name for words in copy_lines for name in words[1:-1]}
    assert {"pyproject.toml", "setup.py"} <= copied
    ignore = (REPO / "deploy" / "Containerfile.dockerignore").read_text(encoding="utf-8").split()
    assert {"!pyproject.toml", "!setup.py"} <= set(ignore)
