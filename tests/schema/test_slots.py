"""The slot-filling builders of `Verdict` and `Advice` set every field their classes have."""

from __future__ import annotations

import dataclasses

from draguard.schema import advice, validate
from draguard.schema.advice import Advice
from draguard.schema.options import Options
from draguard.schema.paths import FieldPath
from draguard.schema.shapes import identify
from draguard.schema.validate import Verdict, prepare

CLAIM = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "ns"},
    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}},
}


def test_a_built_verdict_has_every_field_of_the_class() -> None:
    options = Options()
    doc_type = identify(CLAIM)
    assert doc_type is not None
    verdict = validate._verdict(prepare(CLAIM, doc_type, options), [], ())
    for f in dataclasses.fields(Verdict):
        getattr(verdict, f.name)  # an unset slot raises AttributeError
    assert verdict == Verdict("ResourceClaim", "resource.k8s.io/v1", "c", "ns", "v1")


def test_a_built_advice_equals_the_dataclass_made_one() -> None:
    built = advice._advice(FieldPath.root("spec"), "code", "text")
    assert built == Advice(FieldPath.root("spec"), "code", "text")
    for f in dataclasses.fields(Advice):
        getattr(built, f.name)
