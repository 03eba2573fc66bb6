"""Name formats and their exact apimachinery messages (`upstream-rules.md` §3.2).

Each `*_messages` function returns the list of messages apimachinery's `Is…` helper
returns; callers turn each into one `Invalid` at their own path, as upstream does.
"""

from __future__ import annotations

import re
from functools import lru_cache

# apimachinery's regular expressions (`validation.go`), also what `export` puts in its
# JSON Schema patterns, so that the schemas and the rules share one definition.
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"

_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
_C_IDENTIFIER_RE = re.compile(C_IDENTIFIER_FMT)

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery `RegexError`, including its double space before each "or"."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    quoted = " or ".join(f"'{ex}', " for ex in examples)
    return f"{msg} (e.g. {quoted}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


DNS1123_LABEL_MSG = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
DNS1123_SUBDOMAIN_MSG = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character",
    DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
_QUALIFIED_NAME_BODY = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
QUALIFIED_NAME_MSG = regex_error(_QUALIFIED_NAME_BODY, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
LABEL_VALUE_MSG = regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character",
    LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)
C_IDENTIFIER_MSG = regex_error(
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'",
    C_IDENTIFIER_FMT,
    "my_name",
    "MY_NAME",
    "MyName",
)


def dns1123_label_messages(value: str) -> list[str]:
    """`IsDNS1123Label`: an empty string gets the regex message, not Required."""
    msgs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX:
        msgs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _LABEL_RE.fullmatch(value):
        if _SUBDOMAIN_RE.fullmatch(value):
            msgs.append("must not contain dots")
        else:
            msgs.append(DNS1123_LABEL_MSG)
    return msgs


def dns1123_subdomain_messages(value: str) -> list[str]:
    """`IsDNS1123Subdomain`."""
    return _length_and_pattern(value, DNS1123_SUBDOMAIN_MAX, _SUBDOMAIN_RE, DNS1123_SUBDOMAIN_MSG)


def qualified_name_messages(value: str) -> list[str]:
    """`IsQualifiedName`: an optional DNS-subdomain prefix, a slash, and a name ≤ 63."""
    msgs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            msgs.append("prefix part must be non-empty")
        else:
            msgs.extend("prefix part " + m for m in dns1123_subdomain_messages(prefix))
    else:
        return [
            "a qualified name "
            + QUALIFIED_NAME_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        msgs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        msgs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        msgs.append("name part " + QUALIFIED_NAME_MSG)
    return msgs


def label_value_messages(value: str) -> list[str]:
    """`IsValidLabelValue`."""
    return _length_and_pattern(value, LABEL_VALUE_MAX, _LABEL_VALUE_RE, LABEL_VALUE_MSG)


def _length_and_pattern(value: str, max_len: int, pattern: re.Pattern[str], msg: str) -> list[str]:
    """The length message, then the pattern's, as apimachinery's simple `Is…` helpers list them."""
    msgs: list[str] = []
    if len(value) > max_len:
        msgs.append(max_len_error(max_len))
    if not pattern.fullmatch(value):
        msgs.append(msg)
    return msgs


def c_identifier_matches(value: str) -> bool:
    return bool(_C_IDENTIFIER_RE.fullmatch(value))


# Predicates: true exactly when the matching `*_messages` list is empty. Nearly every
# value is valid, so the rule set asks these first and builds messages (and the field
# path) only for a value that fails. The same few names (classes, requests, label keys)
# come back in document after document, and a cache hit costs a tenth of the regex.
# Class names vary more (one per vendor and model), so subdomains skip the cache and
# use a faster regex for the same language: runs of [a-z0-9] joined by runs of '-'
# make a label (it starts and ends alphanumeric), and the possessive quantifiers
# never backtrack, since the two runs share no character.
PREDICATE_CACHE_SIZE = 4096
_FAST_LABEL = "[a-z0-9]++(?:-++[a-z0-9]++)*+"
_FAST_LABEL_RE = re.compile(_FAST_LABEL)
_FAST_SUBDOMAIN_RE = re.compile(f"{_FAST_LABEL}(?:\\.{_FAST_LABEL})*+")


# The predicates below cache only values within their length limit, so that the cache
# holds at most PREDICATE_CACHE_SIZE short strings (issue 15 §3): a longer value is
# refused before the cache sees it, and cannot make an entry megabytes long.
def is_dns1123_label(value: str) -> bool:
    return len(value) <= DNS1123_LABEL_MAX and _is_dns1123_label(value)


@lru_cache(maxsize=PREDICATE_CACHE_SIZE)
def _is_dns1123_label(value: str) -> bool:
    return _FAST_LABEL_RE.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= DNS1123_SUBDOMAIN_MAX and _FAST_SUBDOMAIN_RE.fullmatch(value) is not None


def is_qualified_name(value: str) -> bool:
    # A prefix (≤ 253) + "/" + a name (≤ 63): anything longer fails one of them.
    return (len(value) <= DNS1123_SUBDOMAIN_MAX + 1 + QUALIFIED_NAME_MAX
            and _is_qualified_name(value))


@lru_cache(maxsize=PREDICATE_CACHE_SIZE)
def _is_qualified_name(value: str) -> bool:
    prefix, slash, name = value.partition("/")
    if not slash:
        name = prefix
    elif not prefix or "/" in name or not is_dns1123_subdomain(prefix):
        return False
    return len(name) <= QUALIFIED_NAME_MAX and _QUALIFIED_NAME_RE.fullmatch(name) is not None


def is_label_value(value: str) -> bool:
    return len(value) <= LABEL_VALUE_MAX and _is_label_value(value)


@lru_cache(maxsize=PREDICATE_CACHE_SIZE)
def _is_label_value(value: str) -> bool:
    return _LABEL_VALUE_RE.fullmatch(value) is not None
