"""mem0 filter expressions compiled to a parameterised SQL boolean over the index's `entries e`.

Syntax accepted (mem0's, plus a few spellings people bring from other stores):
- `{"user_id": "alice"}`: equality; several keys in one dict are ANDed; a list value means `in`.
- `{"field": {"eq"|"ne"|"gt"|"gte"|"lt"|"lte": v}}`, `{"field": {"in"|"nin": [...]}}`,
  `{"field": {"contains"|"icontains": "sub"}}`; several operators in one dict are ANDed.
  Operators may be written in any case and with a leading `$` (`$gte`, as in Chroma or MongoDB).
- `{"field": "*"}`: the field is present (not null, not empty).
- The spec's form: `{"field": "topic", "operator": "eq", "value": "food"}` (any operator above;
  `"value": "*"` with `eq`: present), inside `AND`/`OR`/`NOT` lists or alone. A dict naming
  `operator` or `value` beside `field` is read this way and must hold exactly those keys: an
  expression that cannot be read is an error, never "everything" or "nothing".
- `{"AND": [...]}`, `{"OR": [...]}`, `{"NOT": [...] | {...}}`, nested freely. The words may be written in
  any case and with a leading `$`, so a metadata key can never be called `and`, `or` or `not`.
  `NOT [a, b]` means "none of them" (NOT (a OR b)).

Fields: the columns below (`memory`, mem0's name for the text, means `text`); any other key is a
key of the entry's metadata JSON (which also holds the mem0 fields actor_id, memory_type and
expiration_date). Times (`created_at`, `updated_at`) accept ISO 8601 strings, dates, datetimes
and epoch numbers (a naive time is read as UTC).
Metadata values compare as SQLite compares JSON scalars: numbers as numbers, strings as strings
(the string "2024" is not the number 2024), booleans as 1/0. On a metadata array, `contains` means
"has this element". `icontains` folds case for ASCII letters only (SQLite's lower()).
Absent values: `ne`, `nin` and `NOT` match entries that lack the field; `{"field": None}` matches them.

No value and no key is ever pasted into the SQL: values and JSON paths are parameters.

Limits (SQLite's own: an expression at most 1,000 deep, at most 32,766 parameters): a filter nests
at most MAX_DEPTH levels, holds at most MAX_CONDITIONS field conditions and MAX_LIST_VALUES values
per `in` / `nin` list; integers must fit in 64 bits, numbers must be finite. Beyond them: UsageError.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime
from typing import Any

from memvault.errors import UsageError
from memvault.vault.format.entry import iso_time
from memvault.vault.format.fields import check_scopes, check_text

TEXT_COLUMNS = ("user_id", "agent_id", "run_id", "role", "conversation_id", "id", "text")
TIME_COLUMNS = ("created_at", "updated_at")
LOGICAL = ("and", "or", "not")
SPEC_KEYS = ("field", "operator", "value")
ALIASES = {"memory": "text"}  # mem0's name for a memory's text
COMPARISONS = {"eq": "=", "ne": "IS NOT", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
OPERATORS = (*COMPARISONS, "in", "nin", "contains", "icontains")
MAX_KEY = 128
MAX_DEPTH = 32
MAX_CONDITIONS = 200
MAX_LIST_VALUES = 1000
INT64 = (-(2**63), 2**63 - 1)
# A metadata key becomes a quoted JSON path label `$."key"`: a quote, a backslash or a control
# character could end the label early, and a leading `$` reads as an operator.
UNSAFE_KEY = re.compile(r'["\\\x00-\x1f\x7f]')


def filter_from_json(text: str | None, what: str = "filters") -> dict | None:
    """A mem0 filter given as JSON text (the CLI's --filter, the REST API's ?filters=): None when
    empty, a UsageError naming `what` when it is not a JSON object."""
    import json

    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:  # json.loads recurses once per level
        raise UsageError(f"{what} is nested too deeply") from None
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object, such as '{{\"topic\": \"food\"}}'")
    return value


def compile_filter(expr: dict | None) -> tuple[str, list]:
    """The SQL boolean (over alias `e`) and its parameters for a mem0 filter; ("1", []) for none."""
    if expr is None:
        return "1", []
    params = _Params()
    sql = _node(expr, params, depth=0)
    return sql, list(params)


class _Params(list):
    """The SQL parameters of a filter being compiled, and how many conditions it has so far."""

    conditions = 0

    def count_condition(self) -> None:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise UsageError(f"filter has more than {MAX_CONDITIONS} conditions")


def scope_where(conversations: list[str] | None, scopes: dict | None) -> tuple[str, list]:
    """The mandatory part of every search: live, non-summary entries of these conversations and scopes.

    `conversations` None searches every conversation; `scopes` maps user_id / agent_id / run_id to the
    value every hit must carry (vault.format.fields.check_scopes: None or "" is "not given").
    """
    parts = ["e.role <> 'summary'"]
    params: list = []
    if conversations is not None:
        names = list(conversations)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise UsageError("conversations to search must be a non-empty list of names")
        parts.append(f"e.conversation_id IN ({', '.join('?' * len(names))})")
        params.extend(names)
    for key, value in check_scopes(scopes).items():
        parts.append(f"e.{key} = ?")
        params.append(value)
    return " AND ".join(parts), params


def and_where(*parts: tuple[str, list]) -> tuple[str, list]:
    """Several (sql, params) pairs joined by AND, in order."""
    sqls = [sql for sql, _ in parts if sql != "1"]
    params = [p for _, ps in parts for p in ps]
    return (" AND ".join(f"({s})" for s in sqls) or "1"), params


def _node(expr: Any, params: list, depth: int) -> str:
    if depth > MAX_DEPTH:
        raise UsageError(f"filter is nested deeper than {MAX_DEPTH} levels")
    if not isinstance(expr, dict):
        raise UsageError(f"a filter must be a dict of conditions, got {type(expr).__name__}")
    if "field" in expr and ("operator" in expr or "value" in expr):
        expr = _spec_condition(expr)
    clauses = []
    for key, value in expr.items():
        if not isinstance(key, str):
            raise UsageError(f"filter key must be a string, got {key!r}")
        word = key.lower().lstrip("$")
        if word in LOGICAL:
            clauses.append(_logical(word, value, params, depth))
        else:
            clauses.append(_field(key, value, params))
    if not clauses:
        return "1"
    return clauses[0] if len(clauses) == 1 else "(" + " AND ".join(clauses) + ")"


def _spec_condition(expr: dict) -> dict:
    """`{"field": f, "operator": op, "value": v}` as the mem0 form `{f: {op: v}}`."""
    extra = [key for key in expr if key not in SPEC_KEYS]
    if extra:
        raise UsageError(f"a filter condition {{field, operator, value}} cannot also hold {extra[0]!r}")
    field, op = expr.get("field"), expr.get("operator", "eq")
    if not isinstance(field, str) or not field:
        raise UsageError(f"a filter condition's 'field' must be a field name, got {field!r:.60}")
    if not isinstance(op, str):
        raise UsageError(f"a filter condition's 'operator' must be one of {', '.join(OPERATORS)}, got {op!r:.60}")
    if "value" not in expr:
        raise UsageError(f"the filter condition on {field!r} has no 'value'")
    value = expr["value"]
    if value == "*" and op.lower().lstrip("$") == "eq":
        return {field: "*"}
    return {field: {op: value}}


def _logical(word: str, value: Any, params: list, depth: int) -> str:
    if word == "not" and isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not value:
        raise UsageError(f"{word.upper()} needs a non-empty list of conditions")
    parts = [_node(item, params, depth + 1) for item in value]
    if word == "and":
        return "(" + " AND ".join(parts) + ")"
    either = "(" + " OR ".join(parts) + ")"
    if word == "or":
        return either
    # An absent field makes a comparison NULL, and NOT NULL is NULL: count it as "did not match".
    return f"(NOT COALESCE({either}, 0))"


def _field(key: str, value: Any, params: _Params) -> str:
    params.count_condition()
    target = _Target(key)
    if isinstance(value, dict):
        if not value:
            raise UsageError(f"filter on {key!r} has no operator")
        parts = []
        for op, operand in value.items():
            name = op.lower().lstrip("$") if isinstance(op, str) else op
            if name not in OPERATORS:
                raise UsageError(f"unknown filter operator {op!r} on {key!r}: use {', '.join(OPERATORS)}")
            parts.append(_operator(target, name, operand, params))
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"
    if isinstance(value, list):
        return _operator(target, "in", value, params)
    if value == "*":
        return target.present(params)
    return _operator(target, "eq", value, params)


def _operator(target: _Target, op: str, operand: Any, params: list) -> str:
    if op in ("in", "nin"):
        if not isinstance(operand, (list, tuple)):
            raise UsageError(f"'{op}' on {target.key!r} needs a list, got {operand!r}")
        if any(v is None for v in operand):
            raise UsageError(f"'{op}' on {target.key!r}: null cannot be in the list (use eq/ne null)")
        if len(operand) > MAX_LIST_VALUES:
            raise UsageError(f"'{op}' on {target.key!r}: {len(operand):,} values, more than {MAX_LIST_VALUES:,}")
        values = [target.value(v, op) for v in operand]
        if not values:
            return "0" if op == "in" else "1"
        column = target.expr(params)
        params.extend(values)
        marks = ", ".join("?" * len(values))
        if op == "in":
            return f"({column} IN ({marks}))"
        # An entry without the field is "not in" the list.
        return f"COALESCE({column} NOT IN ({marks}), 1)"
    if op in ("contains", "icontains"):
        return target.contains(operand, op == "icontains", params)
    value = target.value(operand, op)
    if value is None and op not in ("eq", "ne"):
        raise UsageError(f"'{op}' on {target.key!r} cannot compare with null")
    column = target.expr(params)
    params.append(value)
    if op == "eq":
        return f"({column} IS ?)"
    if op == "ne" or target.kind != "metadata":
        return f"({column} {COMPARISONS[op]} ?)"
    # SQLite ranks every string above every number: without this "abc" would be > 2.
    types = "'text'" if isinstance(value, str) else "'integer', 'real'"
    return f"({column} {COMPARISONS[op]} ? AND typeof({target.expr(params)}) IN ({types}))"


class _Target:
    """A filterable field: a column of `entries e` or a key of its metadata JSON."""

    def __init__(self, key: str):
        key = ALIASES.get(key, key)
        self.key = key
        if key in TEXT_COLUMNS or key in TIME_COLUMNS:
            self.kind = "time" if key in TIME_COLUMNS else "column"
            self.path = None
        else:
            if not key or len(key) > MAX_KEY or UNSAFE_KEY.search(key) or key.startswith("$"):
                raise UsageError(f"invalid filter key {key!r}")
            self.kind = "metadata"
            self.path = f'$."{key}"'

    def expr(self, params: list) -> str:
        """The SQL expression for the field; appends its own parameters (the JSON path)."""
        if self.path is None:
            return f"e.{self.key}"
        params.append(self.path)
        return "json_extract(e.metadata, ?)"

    def value(self, value: Any, op: str) -> Any:
        """A filter value as SQLite should compare it."""
        if self.kind == "time" and value is not None:
            return to_epoch(value, self.key)
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
            raise UsageError(f"'{op}' on {self.key!r}: the integer {value:.3g} does not fit in 64 bits")
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"'{op}' on {self.key!r}: {value!r} is not a finite number")
        if isinstance(value, str):
            return check_text(value, f"'{op}' on {self.key!r}: the value")
        if value is None or isinstance(value, (int, float)):
            return value
        raise UsageError(f"'{op}' on {self.key!r}: unsupported value {value!r:.60}")

    def present(self, params: list) -> str:
        if self.kind == "metadata":
            params.append(self.path)
            return "(COALESCE(json_type(e.metadata, ?), 'null') <> 'null')"
        if self.kind == "time":
            return f"(e.{self.key} IS NOT NULL)"
        return f"(COALESCE(e.{self.key}, '') <> '')"

    def contains(self, needle: Any, fold: bool, params: list) -> str:
        op = "icontains" if fold else "contains"
        if self.kind == "time":
            raise UsageError(f"'{op}' does not apply to the time {self.key!r}")
        if isinstance(needle, bool) or not isinstance(needle, (str, int, float)):
            raise UsageError(f"'{op}' on {self.key!r} needs a string, got {needle!r:.60}")
        element = self.value(needle, op)
        needle = str(element)
        norm = "lower({})" if fold else "{}"
        substring = f"(instr({norm.format('{col}')}, {norm.format('?')}) > 0)"
        if self.kind == "column":
            params.append(needle)
            return substring.format(col=f"e.{self.key}")
        # A metadata list "contains" an element; a metadata string contains a substring.
        params.extend([self.path, self.path, element, self.path, needle])
        return (
            "(CASE json_type(e.metadata, ?) WHEN 'array' THEN EXISTS ("
            f"SELECT 1 FROM json_each(e.metadata, ?) WHERE {norm.format('value')} = {norm.format('?')}) "
            f"ELSE {substring.format(col='json_extract(e.metadata, ?)')} END)"
        )


def to_epoch(value: Any, key: str = "time") -> float:
    """Seconds since the epoch for an ISO 8601 string, a date, a datetime or a number."""
    if isinstance(value, bool):
        raise UsageError(f"{key}: not a time: {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or abs(value) > 2**53:  # beyond that no float (nor any calendar) is exact
            raise UsageError(f"{key}: not a time: {value!r:.60}")
        return float(value)
    if not isinstance(value, (str, date)):
        raise UsageError(f"{key}: not a time: {value!r:.60}")
    try:
        return iso_time(value).timestamp()
    except ValueError:
        raise UsageError(f"{key}: not an ISO 8601 time: {value!r:.60}") from None


def unexpired(filters: dict | None, show_expired: bool) -> dict | None:
    """`filters` and, unless `show_expired`, "not expired": mem0 hides a memory whose expiration date
    (YYYY-MM-DD) is before today (UTC). An entry without one never expires (NOT of an absent field)."""
    if show_expired:
        return filters
    today = datetime.now(UTC).date().isoformat()
    alive = {"NOT": [{"expiration_date": {"lt": today}}]}
    return {"AND": [alive, filters]} if filters else alive
