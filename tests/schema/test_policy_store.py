"""PolicyStore: reload on change, keep the last good policy, record what went wrong."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from draguard.schema.policy.model import Policy
from draguard.schema.policy.store import PolicyStore

CAP_TWO = "limits: {maxAlternatives: 2}\n"
CAP_THREE = "limits: {maxAlternatives: 3}\n"
GARBAGE = "limits: {maxAlternatives: [\n"


def write(path: Path, text: str, *, mtime_ns: int | None = None) -> None:
    path.write_text(text)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def replace(path: Path, text: str) -> None:
    """Write as kubelet and careful editors do: a new file renamed over the old one."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(text)
    os.replace(fresh, path)


def cap(store: PolicyStore) -> int | None:
    return store.current().limits.max_alternatives


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    write(path, CAP_TWO)
    return path


def test_no_path_is_the_empty_policy() -> None:
    """Without a policy file the store always answers Policy.empty()."""
    store = PolicyStore(None)
    assert store.current() == Policy.empty()
    assert store.status().generation == 0


def test_loads_the_file_on_first_use(policy_file: Path) -> None:
    """The first current() reads the file; status shows generation 1 and its hash."""
    store = PolicyStore(policy_file, check_interval=0)
    assert cap(store) == 2
    status = store.status()
    assert (status.generation, status.error, status.failures) == (1, None, 0)
    assert status.sha256 is not None and len(status.sha256) == 64


def test_reloads_when_the_file_changes(policy_file: Path) -> None:
    """A new file content replaces the policy at the next check."""
    store = PolicyStore(policy_file, check_interval=0)
    assert cap(store) == 2
    write(policy_file, CAP_THREE)
    assert cap(store) == 3
    assert store.status().generation == 2


def test_garbage_keeps_the_last_good_policy(policy_file: Path) -> None:
    """An invalid new file leaves the old policy in force and records the error once."""
    store = PolicyStore(policy_file, check_interval=0)
    assert cap(store) == 2
    write(policy_file, GARBAGE)
    assert cap(store) == 2
    assert cap(store) == 2
    status = store.status()
    assert status.failures == 1
    assert status.error is not None and status.error.startswith(f"{policy_file}:2:")
    assert status.generation == 1


def test_failure_is_logged_once(policy_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A rejected file is logged once with the generation kept, not at every check."""
    store = PolicyStore(policy_file, check_interval=0)
    cap(store)
    write(policy_file, GARBAGE)
    with caplog.at_level("INFO", logger="draguard.policy"):
        for _ in range(3):
            cap(store)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "policy not loaded, keeping generation 1"]


def test_fixed_file_clears_the_error(policy_file: Path) -> None:
    """After garbage, a valid file is loaded and the error is gone."""
    store = PolicyStore(policy_file, check_interval=0)
    cap(store)
    write(policy_file, GARBAGE)
    cap(store)
    write(policy_file, CAP_THREE)
    assert cap(store) == 3
    assert store.status().error is None


def test_reverting_to_the_good_file_clears_the_error(policy_file: Path) -> None:
    """Going back to the bytes in force clears the error without a new generation."""
    store = PolicyStore(policy_file, check_interval=0)
    cap(store)
    write(policy_file, GARBAGE)
    cap(store)
    write(policy_file, CAP_TWO)
    assert cap(store) == 2
    assert (store.status().error, store.status().generation) == (None, 1)


def test_missing_file_at_start_is_empty_with_error(tmp_path: Path) -> None:
    """A file that does not exist yet gives Policy.empty() and an error naming it."""
    store = PolicyStore(tmp_path / "later.yaml", check_interval=0)
    assert store.current() == Policy.empty()
    error = store.status().error
    assert error is not None and "later.yaml" in error
    write(tmp_path / "later.yaml", CAP_TWO)
    assert cap(store) == 2


def test_deleted_file_keeps_the_last_good_policy(policy_file: Path) -> None:
    """Removing the file (e.g. a ConfigMap being recreated) keeps the policy in force."""
    store = PolicyStore(policy_file, check_interval=0)
    cap(store)
    policy_file.unlink()
    assert cap(store) == 2
    assert store.status().failures == 1


def test_same_size_rewrite_with_same_mtime_is_seen(policy_file: Path) -> None:
    """A same-size edit within the file system's timestamp granularity is still reloaded."""
    store = PolicyStore(policy_file, check_interval=0)
    stamp = policy_file.stat().st_mtime_ns
    assert cap(store) == 2
    write(policy_file, CAP_THREE, mtime_ns=stamp)
    assert policy_file.stat().st_size == len(CAP_TWO)
    assert cap(store) == 3


def test_torn_write_keeps_the_policy_in_force(policy_file: Path) -> None:
    """A file caught truncated mid-rewrite (empty) is refused; the old policy stays."""
    store = PolicyStore(policy_file, check_interval=0)
    assert cap(store) == 2
    write(policy_file, "")
    assert cap(store) == 2
    write(policy_file, CAP_THREE)
    assert cap(store) == 3


def test_check_interval_limits_stat_calls(policy_file: Path) -> None:
    """Within check_interval the store answers from memory; after it, it looks again."""
    now = [100.0]
    store = PolicyStore(policy_file, check_interval=5.0, clock=lambda: now[0])
    assert cap(store) == 2
    write(policy_file, CAP_THREE)
    now[0] += 4.0
    assert cap(store) == 2
    now[0] += 1.0
    assert cap(store) == 3


def test_configmap_symlink_swap_is_seen(tmp_path: Path) -> None:
    """kubelet's atomic update (swap `..data` to a new folder) triggers a reload."""
    first, second = tmp_path / "..2026_01", tmp_path / "..2026_02"
    first.mkdir()
    second.mkdir()
    write(first / "policy.yaml", CAP_TWO)
    write(second / "policy.yaml", CAP_THREE)
    (tmp_path / "..data").symlink_to(first.name)
    (tmp_path / "policy.yaml").symlink_to("..data/policy.yaml")
    store = PolicyStore(tmp_path / "policy.yaml", check_interval=0)
    assert cap(store) == 2
    (tmp_path / "..data_tmp").symlink_to(second.name)
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")
    assert cap(store) == 3


def test_concurrent_readers_see_a_whole_policy(policy_file: Path) -> None:
    """Threads reading while the file changes always get one of the valid policies."""
    store = PolicyStore(policy_file, check_interval=0)
    seen: set[int | None] = set()
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(200):
                seen.add(cap(store))
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for text in (CAP_THREE, GARBAGE, CAP_TWO, CAP_THREE):
        replace(policy_file, text)
    for thread in threads:
        thread.join()
    assert failures == []
    assert seen <= {2, 3}
    assert cap(store) == 3
