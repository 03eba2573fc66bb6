"""Each worker freezes its start-up heap once the app is loaded (issue 21: GC pauses)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from draguard.webhook.config import Config
from draguard.webhook.serving import probeport
from draguard.webhook.serving.server import gunicorn_settings


@pytest.fixture
def unfrozen() -> Any:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_post_worker_init_freezes_the_heap(unfrozen: Any, tmp_path: Path) -> None:
    hook = gunicorn_settings(Config(state_dir=tmp_path))["post_worker_init"]
    assert gc.get_freeze_count() == 0
    hook(object())
    assert gc.get_freeze_count() > 0


def test_the_probe_port_hook_still_runs_first(unfrozen: Any, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, int]] = []

    def probes(worker: Any) -> None:
        seen.append((worker, gc.get_freeze_count()))

    monkeypatch.setattr(probeport, "hooks", lambda config: {"post_worker_init": probes})
    worker = object()
    gunicorn_settings(Config(state_dir=tmp_path, metrics_port=9))["post_worker_init"](worker)
    assert seen == [(worker, 0)]
    assert gc.get_freeze_count() > 0
