"""Reading the operator's policy file: the format, its defaults, and errors with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from draguard.schema.policy.file import load_policy, parse_policy
from draguard.schema.policy.model import (
    Alternative,
    CatalogEntry,
    Limits,
    Policy,
    PolicyError,
    Toleration,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "policy.yaml"

VALID = """\
catalog:
  gpu.example.com:
    original: last
    originalName: mine
    alternatives:
    - name: h100
      deviceClassName: h100.nvidia.com
      allocationMode: ExactCount
      count: 2
      selectors:
      - device.driver == "gpu.nvidia.com"
      - cel: {expression: "true"}
      tolerations:
      - {key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 30}
      capacity:
        requests: {memory: 40Gi, slots: 2}
limits:
  maxAlternatives: 3
  forbiddenClasses: ["*.bad.example.com"]
defaults: false
configNamesParent: keep
"""


def test_valid_policy_parses_into_values() -> None:
    """Every key of the format lands in the frozen policy values."""
    policy = parse_policy(VALID)
    assert policy == Policy(
        catalog={"gpu.example.com": CatalogEntry(
            "gpu.example.com",
            (Alternative(
                name="h100",
                device_class_name="h100.nvidia.com",
                selectors=('device.driver == "gpu.nvidia.com"', "true"),
                allocation_mode="ExactCount",
                count=2,
                tolerations=(Toleration(key="k", operator="Exists", effect="NoSchedule",
                                        toleration_seconds=30),),
                capacity=(("memory", "40Gi"), ("slots", 2)),
            ),),
            original="last",
            original_name="mine",
        )},
        limits=Limits(max_alternatives=3, forbidden_classes=("*.bad.example.com",)),
        defaults=False,
        config_names_parent="keep",
    )


def test_alternative_renders_as_device_subrequest() -> None:
    """A catalog alternative becomes the API's DeviceSubRequest JSON."""
    (alternative,) = parse_policy(VALID).catalog["gpu.example.com"].alternatives
    assert alternative.to_json() == {
        "name": "h100",
        "deviceClassName": "h100.nvidia.com",
        "selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}},
                      {"cel": {"expression": "true"}}],
        "allocationMode": "ExactCount",
        "count": 2,
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule",
                         "tolerationSeconds": 30}],
        "capacity": {"requests": {"memory": "40Gi", "slots": 2}},
    }


@pytest.mark.parametrize(
    "text",
    [pytest.param("{}", id="empty-json-object"),
     pytest.param("apiVersion: draguard.io/v1alpha1\nkind: MutationPolicy\n", id="header-only")],
)
def test_policy_without_settings_means_the_defaults(text: str) -> None:
    """A policy with no settings turns on defaults and the config rewrite, nothing else."""
    policy = parse_policy(text)
    assert policy == Policy()
    assert (policy.defaults, policy.config_names_parent, dict(policy.catalog)) == (
        True, "rewrite", {})
    assert not policy.is_empty


@pytest.mark.parametrize(
    "text", [pytest.param("", id="empty"), pytest.param("# only a comment\n", id="comment")])
def test_file_without_document_is_refused(text: str) -> None:
    """No document at all (a torn read of a rewrite looks like this) is a PolicyError."""
    with pytest.raises(PolicyError, match="holds no document"):
        parse_policy(text)


def test_empty_policy_is_all_off() -> None:
    """Policy.empty() is the no-policy value: no defaults, no rewrite, no catalog, no limits."""
    empty = Policy.empty()
    assert empty.is_empty
    assert (empty.defaults, empty.config_names_parent, empty.limits) == (False, "keep", Limits())


def test_json_policy_is_accepted() -> None:
    """The same format written as JSON parses to the same policy."""
    text = ('{"catalog": {"gpu.example.com": {"alternatives": '
            '[{"name": "a", "deviceClassName": "a.example.com"}]}}, "defaults": false}')
    assert parse_policy(text) == parse_policy(
        "catalog:\n  gpu.example.com:\n    alternatives:\n"
        "    - {name: a, deviceClassName: a.example.com}\ndefaults: false\n")


def test_example_policy_file_loads() -> None:
    """examples/policy.yaml is a valid policy with both catalog styles."""
    policy = load_policy(EXAMPLE)
    assert {e.original for e in policy.catalog.values()} == {"first", "replace"}
    assert policy.limits.max_alternatives == 4


def entry(alternatives: str, extra: str = "") -> str:
    return f"catalog:\n  gpu.example.com:\n{extra}    alternatives:\n{alternatives}"


@pytest.mark.parametrize(
    ("text", "line", "field", "fragment"),
    [
        pytest.param("catalogue: {}\n", 1, "catalogue", "unknown field", id="unknown-top-key"),
        pytest.param("limits:\n  maxAlternatives: 9\n", 2, "limits.maxAlternatives",
                     "between 1 and 8", id="cap-over-upstream"),
        pytest.param("limits:\n  maxAlternatives: '2'\n", 2, "limits.maxAlternatives",
                     "must be an integer", id="cap-string"),
        pytest.param("limits:\n  forbiddenClasses: [a, '']\n", 2, "limits.forbiddenClasses[1]",
                     "must not be empty", id="empty-pattern"),
        pytest.param("defaults: yes please\n", 1, "defaults", "true or false", id="defaults-text"),
        pytest.param("configNamesParent: drop\n", 1, "configNamesParent", "rewrite, keep",
                     id="rewrite-choice"),
        pytest.param("kind: Policy\n", 1, "kind", "MutationPolicy", id="wrong-kind"),
        pytest.param("catalog:\n  GPU: {alternatives: [{name: a, deviceClassName: b}]}\n", 2,
                     "catalog[GPU]", "subdomain", id="class-key-not-subdomain"),
        pytest.param(entry("    - name: h100\n      deviceClassName: h.example.com\n"
                           "      coutn: 2\n"), 6, "catalog[gpu.example.com].alternatives[0].coutn",
                     "unknown field", id="typo-in-alternative"),
        pytest.param(entry("    - name: h100\n      deviceClassName: h.example.com\n"
                           "      adminAccess: true\n"), 6,
                     "catalog[gpu.example.com].alternatives[0].adminAccess", "admin access",
                     id="admin-access-in-alternative"),
        pytest.param(entry("    - name: H100\n      deviceClassName: h.example.com\n"), 4,
                     "catalog[gpu.example.com].alternatives[0].name", "RFC 1123 label",
                     id="name-not-label"),
        pytest.param(entry("    - name: h100\n"), 4, "catalog[gpu.example.com].alternatives[0]",
                     "deviceClassName: Required", id="class-missing"),
        pytest.param(entry("    - {name: a, deviceClassName: a.example.com}\n"
                           "    - {name: a, deviceClassName: b.example.com}\n"), 5,
                     "catalog[gpu.example.com].alternatives[1].name", "duplicate",
                     id="duplicate-name"),
        pytest.param(entry("    - {name: requested, deviceClassName: a.example.com}\n"), 4,
                     "catalog[gpu.example.com].alternatives[0].name", "originalName",
                     id="name-clashes-with-original"),
        pytest.param(entry("    - {name: a, deviceClassName: a.example.com, count: 0}\n"), 4,
                     "catalog[gpu.example.com].alternatives[0].count", "greater than zero",
                     id="count-zero"),
        pytest.param(entry("    - {name: a, deviceClassName: a.example.com, count: 2, "
                           "allocationMode: All}\n"), 4,
                     "catalog[gpu.example.com].alternatives[0].count", "allocationMode is 'All'",
                     id="count-with-all"),
        pytest.param(entry("".join(f"    - {{name: a{i}, deviceClassName: a.example.com}}\n"
                                   for i in range(8))), 4,
                     "catalog[gpu.example.com].alternatives", "limit of 8",
                     id="eight-plus-original"),
        pytest.param(entry("      []\n"), 4, "catalog[gpu.example.com].alternatives",
                     "at least one", id="no-alternatives"),
        pytest.param(entry("    - {name: a, deviceClassName: a.example.com}\n",
                           "    original: sometimes\n"), 3,
                     "catalog[gpu.example.com].original", "first, last, replace",
                     id="bad-placement"),
        pytest.param("limits: {forbiddenClasses: ['*.bad.example.com']}\n"
                     + entry("    - {name: a, deviceClassName: a.bad.example.com}\n"), 5,
                     "catalog[gpu.example.com].alternatives[0].deviceClassName", "forbidden",
                     id="alternative-forbidden"),
        pytest.param("limits: {forbiddenClasses: [gpu.example.com]}\n"
                     + entry("    - {name: a, deviceClassName: a.example.com}\n"), 3,
                     "catalog[gpu.example.com]", "original: replace",
                     id="kept-original-forbidden"),
        pytest.param(entry("    - {name: a, deviceClassName: a.example.com, selectors: [{}]}\n"),
                     4, "catalog[gpu.example.com].alternatives[0].selectors[0]",
                     "cel: Required", id="selector-without-cel"),
        pytest.param(entry("    - {name: a, deviceClassName: a.example.com}\n"
                           "    - {name: b, deviceClassName: b.example.com, "
                           "selectors: [device.driver]}\n"), 5,
                     "catalog[gpu.example.com].alternatives[1].selectors[0].cel.expression",
                     "must evaluate to bool", id="selector-not-bool"),
        pytest.param(entry("    - {name: a, deviceClassName: a.example.com, "
                           "tolerations: [{key: 'bad key', operator: Equal}]}\n"), 4,
                     "catalog[gpu.example.com].alternatives[0].tolerations[0].key",
                     "Invalid value", id="toleration-key"),
    ],
)
def test_invalid_policy_names_file_line_and_field(text: str, line: int, field: str,
                                                  fragment: str) -> None:
    """Each mistake raises PolicyError at the right line and field, saying what is wrong."""
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, source="policy.yaml")
    error = caught.value
    assert (error.source, error.line, str(error.field)) == ("policy.yaml", line, field)
    assert fragment in error.message


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param("limits: [1,\n", 2, id="unclosed-flow"),
        pytest.param("defaults: true\ndefaults: false\n", 2, id="duplicate-key"),
        pytest.param("a: 1\n---\nb: 2\n", 2, id="two-documents"),
        pytest.param("- 1\n", 1, id="top-level-list"),
    ],
)
def test_unparsable_policy_names_the_line(text: str, line: int) -> None:
    """Broken YAML is a PolicyError with the line of the problem."""
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, source="p.yaml")
    assert caught.value.line == line
    assert str(caught.value).startswith(f"p.yaml:{line}:")


def test_policy_error_renders_file_line_column_field() -> None:
    """The error text is `file:line:column: field: message`, like the linter's."""
    with pytest.raises(PolicyError) as caught:
        parse_policy("limits:\n  maxAlternatives: 0\n", source="cm/policy.yaml")
    assert str(caught.value) == ("cm/policy.yaml:2:20: limits.maxAlternatives: must be between "
                                 "1 and 8 (upstream's limit, §2.4)")


def test_unreadable_file_is_a_policy_error(tmp_path: Path) -> None:
    """A missing file raises PolicyError naming it, not OSError."""
    missing = tmp_path / "nope.yaml"
    with pytest.raises(PolicyError, match=r"nope\.yaml: cannot read the policy"):
        load_policy(missing)


def test_non_utf8_file_is_a_policy_error(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 raise PolicyError."""
    path = tmp_path / "p.yaml"
    path.write_bytes(b"defaults: \xff\n")
    with pytest.raises(PolicyError, match="not UTF-8"):
        load_policy(path)


@pytest.mark.parametrize(
    ("device_class", "forbidden"),
    [
        pytest.param("x.bad.example.com", "*.bad.example.com", id="glob"),
        pytest.param("legacy.example.com", "legacy.example.com", id="exact"),
        pytest.param("good.example.com", None, id="allowed"),
        pytest.param("LEGACY.example.com", None, id="case-sensitive"),
    ],
)
def test_forbidden_patterns_match_like_shell_globs(device_class: str,
                                                   forbidden: str | None) -> None:
    """forbiddenClasses entries are case-sensitive shell patterns."""
    limits = Limits(forbidden_classes=("*.bad.example.com", "legacy.example.com"))
    assert limits.forbidding_pattern(device_class) == forbidden
