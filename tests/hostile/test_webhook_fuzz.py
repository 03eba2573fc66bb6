"""Hostile bodies to /validate and /mutate over real gunicorn + TLS (issue 6 §2).

Every answer must be a well-formed AdmissionReview echoing the uid, or a 4xx with a
JSON message; never a 500, never a dropped connection, none hanging; and
after all of it the same two workers are alive and healthy.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import is_admission_review, review
from .mutations import paths

# Seconds per request that would mean a hang. Not a speed check (bench/ measures that):
# the suite runs on loaded machines, where an honest answer may take seconds.
TIME_BUDGET = 30.0
MAX_BODY = 3 * 1024 * 1024
ENDPOINTS = ("/validate", "/mutate")
FUZZ = settings(max_examples=examples(40), deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

CLAIM: dict[str, Any] = {  # a valid claim using most fields, for wrong types at each
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "full", "namespace": "default", "labels": {"app": "x"},
                 "annotations": {"a": "b"}},
    "spec": {"devices": {
        "requests": [
            {"name": "gpu", "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 1,
                 "allocationMode": "ExactCount",
                 "selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}],
                 "tolerations": [{"key": "k", "operator": "Equal", "value": "v",
                                  "effect": "NoSchedule", "tolerationSeconds": 5}]},
                {"name": "small", "deviceClassName": "small.example.com", "count": 2}]},
            {"name": "nic", "exactly": {"deviceClassName": "nic.example.com",
                                        "allocationMode": "All", "adminAccess": False}},
        ],
        "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "example.com/numa"}],
        "config": [{"requests": ["gpu/big"], "opaque": {"driver": "gpu.nvidia.com",
                                                        "parameters": {"x": 1}}}],
    }},
}
WRONG_VALUES = (None, True, 1.5, 2**64, -(2**63) - 1, "s", [], {}, [None], {"": 0})


def send(api: Any, path: str, body: bytes, uid: str = "hostile") -> None:
    """POST `body`; assert a well-formed answer or a 4xx with a JSON message, and no hang."""
    started = time.perf_counter()
    reply = api.request("POST", path, body)
    seconds = time.perf_counter() - started
    assert seconds < TIME_BUDGET, f"{path} took {seconds:.1f} s"
    if reply.status == 200:
        assert is_admission_review(reply.body, uid), reply.body[:300]
    else:
        assert 400 <= reply.status < 500, (reply.status, reply.body[:300])
        assert json.loads(reply.body)["message"]


def body_of(obj: Any, uid: str = "hostile") -> bytes:
    return json.dumps(review(obj, uid=uid)).encode()


def children(master: int) -> set[int]:
    """The gunicorn master's worker pids."""
    return set(map(int, Path(f"/proc/{master}/task/{master}/children").read_text().split()))


@pytest.fixture(scope="module")
def worker_pids(hostile_server: Any) -> set[int]:
    """The workers alive before this module's hostile requests."""
    return children(hostile_server.process.pid)


@pytest.mark.parametrize("path", ENDPOINTS)
@FUZZ
@given(data=st.binary(max_size=2048))
def test_arbitrary_bytes(api: Any, worker_pids: set[int], path: str, data: bytes) -> None:
    """Any byte string gets a well-formed answer or a 4xx."""
    send(api, path, data)


@pytest.mark.parametrize("path", ENDPOINTS)
@FUZZ
@given(cut=st.integers(min_value=0, max_value=len(body_of(CLAIM)) - 1))
def test_truncated_json(api: Any, path: str, cut: int) -> None:
    """A review cut short anywhere is a 400, not a hang or a 500."""
    send(api, path, body_of(CLAIM)[:cut])


@pytest.mark.parametrize("path", ENDPOINTS)
@FUZZ
@given(position=st.integers(min_value=0, max_value=len(body_of(CLAIM)) - 1),
       junk=st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
                             b"\x80\x80", b"\xe2\x82"]))
def test_invalid_utf8(api: Any, path: str, position: int, junk: bytes) -> None:
    """Invalid UTF-8 spliced into a valid review is answered or refused cleanly."""
    body = body_of(CLAIM)
    send(api, path, body[:position] + junk + body[position:])


def nested(kind: str, depth: int) -> str:
    return "[" * depth + "]" * depth if kind == "array" else '{"a":' * depth + "1" + "}" * depth


def spliced(where: str, text: str) -> bytes:
    """A review with `text` (raw JSON) at `where`: the whole body or a field of the claim."""
    if where == "body":
        return text.encode()
    marker = '"__SPLICE__"'
    obj = copy.deepcopy(CLAIM)
    if where == "labels":
        obj["metadata"]["labels"] = "__SPLICE__"
    elif where == "parameters":
        obj["spec"]["devices"]["config"][0]["opaque"]["parameters"] = "__SPLICE__"
    else:
        obj["spec"]["devices"]["requests"][0]["firstAvailable"][0]["selectors"] = "__SPLICE__"
    return body_of(obj).replace(marker.encode(), text.encode())


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("where", ["body", "labels", "parameters", "selectors"])
@pytest.mark.parametrize("kind", ["array", "object"])
@pytest.mark.parametrize("depth", [150, 900, 10_000])
def test_deep_nesting(api: Any, path: str, where: str, kind: str, depth: int) -> None:
    """Arrays and objects nested 150, 900 and 10,000 levels deep, anywhere, are answered cleanly."""
    send(api, path, spliced(where, nested(kind, depth)))


def three_mib(field: str) -> Callable[[dict[str, Any], int], None]:
    def put(obj: dict[str, Any], size: int) -> None:
        text = "x" * size
        if field == "name":
            obj["metadata"]["name"] = text
        elif field == "expression":
            obj["spec"]["devices"]["requests"][0]["firstAvailable"][0]["selectors"][0][
                "cel"]["expression"] = text
        else:
            obj["spec"]["devices"]["config"][0]["opaque"]["parameters"] = {"blob": text}
    return put


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("field", ["name", "expression", "parameters"])
@pytest.mark.parametrize("over", [False, True], ids=["just-under-3MiB", "over-3MiB"])
def test_three_mib_strings(api: Any, path: str, field: str, over: bool) -> None:
    """A string filling the 3 MiB body limit is judged in time; one byte more is a 413."""
    obj = copy.deepcopy(CLAIM)
    three_mib(field)(obj, 0)
    size = MAX_BODY - len(body_of(obj)) + (1 if over else 0)
    three_mib(field)(obj, size)
    body = body_of(obj)
    assert len(body) == MAX_BODY + (1 if over else 0)
    reply = api.request("POST", path, body)
    assert reply.status == (413 if over else 200)
    if not over:
        assert is_admission_review(reply.body, "hostile")


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("number", ["9223372036854775808", "-9223372036854775809", "1e400",
                                    "-1e400", "NaN", "Infinity", "1" * 4000, "1" * 5000,
                                    "0.1e-400", "1.0"])
def test_numbers_out_of_range(api: Any, path: str, number: str) -> None:
    """Out-of-int64, huge, non-finite and float numbers in count are answered cleanly."""
    body = body_of(CLAIM).replace(b'"count": 2', b'"count": ' + number.encode())
    assert number.encode() in body
    send(api, path, body)




def put_at(obj: Any, path: tuple[str | int, ...], value: Any) -> Any:
    out = copy.deepcopy(obj)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize("path", ENDPOINTS)
def test_wrong_types_at_every_field(api: Any, path: str) -> None:
    """Each field of a valid claim replaced by each wrong-typed value: answered, never a 500."""
    for i, field in enumerate(paths(CLAIM)):
        for j, value in enumerate(WRONG_VALUES):
            uid = f"w{i}-{j}"
            send(api, path, body_of(put_at(CLAIM, field, value), uid), uid)


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("what", ["requests", "subrequests", "selectors", "constraints",
                                  "config-requests"])
def test_ten_thousand_entries(api: Any, path: str, what: str) -> None:
    """A list of 10,000 requests, subrequests, selectors, constraints or references."""
    obj = copy.deepcopy(CLAIM)
    devices = obj["spec"]["devices"]
    if what == "requests":
        devices["requests"] = [{"name": f"r{i}", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                               for i in range(10_000)]
        devices.pop("constraints")
        devices.pop("config")
    elif what == "subrequests":
        devices["requests"][0]["firstAvailable"] = [
            {"name": f"s{i}", "deviceClassName": "gpu.nvidia.com"} for i in range(10_000)]
    elif what == "selectors":
        devices["requests"][1]["exactly"]["selectors"] = [
            {"cel": {"expression": f'device.driver == "d{i}.example.com"'}} for i in range(10_000)]
    elif what == "constraints":
        devices["constraints"] = [{"requests": ["gpu"], "matchAttribute": "example.com/numa"}
                                  for _ in range(10_000)]
    else:
        devices["config"][0]["requests"] = [f"gpu/s{i}" for i in range(10_000)]
    send(api, path, body_of(obj))


def test_workers_survived(hostile_server: Any, worker_pids: set[int]) -> None:
    """After every hostile request above, the same workers are alive and the server healthy."""
    now = children(hostile_server.process.pid)
    assert now == worker_pids and len(now) == 2
    api = hostile_server.client()
    assert api.request("GET", "/healthz", fresh=True).status == 200
    assert is_admission_review(api.request("POST", "/validate", body_of(CLAIM)).body, "hostile")
    api.close()
    assert "Traceback" not in hostile_server.log()
