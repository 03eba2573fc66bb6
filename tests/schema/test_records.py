"""Values users keep and lint hands to its workers copy and pickle (errors, advice, options, chunks).

Lint's worker processes receive `Chunk`s by pickle; library users keep errors, verdicts
and options. An error keeps the one `OMIT` sentinel through every copy.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from draguard.schema.advice.claims import Advice
from draguard.schema.model.errors import OMIT, ErrorType, invalid, required
from draguard.schema.model.options import Options
from draguard.schema.model.paths import FieldPath, MapKey
from draguard.schema.read.sources import Chunk
from draguard.schema.validate import validate_object

PATH = FieldPath(("spec", "devices", "requests", 0, MapKey("k")))
VALUES: list[Any] = [
    required(PATH),
    invalid(PATH, {"a": [1, 2.5]}, "detail"),
    Advice(PATH, "quota-charge", "message"),
    Options(default_namespace="team-a", remember_specs=True),
    Chunk("f.yaml", 2, "kind: ResourceClaim\n", 10, 0, "yaml"),
    validate_object({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": "BAD"}, "spec": {}}),
]
COPIES: list[Callable[[Any], Any]] = [
    lambda v: pickle.loads(pickle.dumps(v)), copy.deepcopy, copy.copy]


@pytest.mark.parametrize("copier", COPIES, ids=["pickle", "deepcopy", "copy"])
@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_values_survive_copies(value: Any, copier: Callable[[Any], Any]) -> None:
    again = copier(value)
    assert type(again) is type(value)
    assert again == value


def test_a_copied_error_keeps_the_omit_sentinel() -> None:
    err = required(PATH)
    assert err.type is ErrorType.REQUIRED and err.value is OMIT
    for copier in COPIES:
        again = copier(err)
        assert again.value is OMIT  # `render_body` tests identity
        assert again.message == err.message == "Required value"
        assert type(again.path.parts[-1]) is MapKey
