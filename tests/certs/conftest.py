"""Shared fixtures for the certificate tests: a fixed clock and ready-made state folders."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from draguard.certs.authority import PemPair, issue_ca
from draguard.certs.files import StatePaths, create_certificates

# Whole seconds: X.509 times carry no fractions, so comparisons stay exact.
NOW = dt.datetime(2030, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


@pytest.fixture
def now() -> dt.datetime:
    """The fixed moment at which the shared certificates were issued."""
    return NOW


@pytest.fixture(scope="session")
def ca() -> PemPair:
    """One ECDSA CA for tests that only need something to sign with."""
    return issue_ca(now=NOW)


@pytest.fixture(scope="session")
def _made_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("made") / "state"
    create_certificates(folder, now=NOW)
    return folder


@pytest.fixture
def state(_made_state: Path, tmp_path: Path) -> StatePaths:
    """A fresh copy of a complete state folder issued at `NOW` with the default names."""
    folder = tmp_path / "state"
    shutil.copytree(_made_state, folder)
    return StatePaths.of(folder)
