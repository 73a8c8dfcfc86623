"""``kplex sql check``: find what would fail in a kplex SQL file, without Spark.

Besides syntax errors (with line and column) and undefined ``${variables}``:

=====================  ======================================================
rule                   finding
=====================  ======================================================
functions              a misspelt kplex function (``kplex_ordr`` → did you
                       mean ``kplex_order``?); a kplex function with the wrong
                       number of arguments
order type             ``kplex_order`` of a value that is certainly not a
                       TIMESTAMP, DATE or integer (a STRING, a DOUBLE, the
                       BINARY ``value``): the column types of ``kplex.*``
                       tables are known
create                 a ``CREATE TABLE kplex.*`` with a column list, with an
                       unknown property, a wrong value or a required one
                       missing; P not dividing V (warning: placement is then
                       not the one of a Kafka producer, G4)
alter                  ``ALTER TABLE kplex.* SET TBLPROPERTIES`` names/values
write                  an ``INSERT INTO kplex.*`` whose query does not give
                       exactly one key (``kplex_key(...)`` or a column
                       ``key``), one order (``kplex_order(...)`` or
                       ``order_value``) and one ``value`` in every SELECT;
                       ``kplex_key``/``kplex_order`` nested in an expression
                       or used outside the select list, where the writer
                       cannot see them; ``INSERT OVERWRITE`` (topics are
                       append-only)
settings               a ``SET`` of a kplex session setting the plugin would
                       refuse at the next write or stream: an unknown
                       ``spark.kplex.*`` or ``kplex.stream.*`` name (did you
                       mean ...?), or a value it does not take (quotes are
                       kept by ``SET``)
=====================  ======================================================

>>> result = check_text('''INSERT INTO kplex.by_user
... SELECT kplex_key(user), kplex_ordr(ts), value FROM kplex.pageviews;''', path="job.sql")
>>> print(result.format())
job.sql:2:8: error: statement 1: INSERT INTO kplex.by_user has no order column: select kplex_order(<expr>) (or a column named order_value)
job.sql:2:25: error: statement 1: unknown function kplex_ordr; did you mean kplex_order?
>>> result.ok
False
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

import kplex.sqltools.analysis as a
from kplex.settings import (
    PHYSICAL_PARTITIONS,
    PROPERTIES,
    SOURCE,
    TOPIC,
    VIRTUAL_PARTITIONS,
    missing_required,
    parse_int,
    problem_of,
    session_setting_problem,
    suggest,
    topic_name_problem,
)
from kplex.sqltools.diagnostics import ERROR, WARNING, Diagnostic, format_diagnostics, has_errors
from kplex.sqltools.errors import check_failed
from kplex.sqltools.script import Script, Statement, load_script, read_script

__all__ = ["CheckResult", "check_script", "check_text", "check_file", "require_clean", "TOPIC_COLUMNS"]

#: Columns of every table of the kplex catalog (derived ones add the last two).
TOPIC_COLUMNS: dict[str, str] = {
    "key": "BINARY",
    "value": "BINARY",
    "topic": "STRING",
    "partition": "INT",
    "offset": "BIGINT",
    "timestamp": "TIMESTAMP",
    "headers": "ARRAY<STRUCT<key: STRING, value: BINARY>>",
    "vpartition": "INT",
    "order_value": "BIGINT",
}

_NOT_ORDER_TYPES = (
    exp.DataType.TEXT_TYPES
    | exp.DataType.REAL_TYPES
    | exp.DataType.NESTED_TYPES
    | {exp.DataType.Type.BINARY, exp.DataType.Type.VARBINARY, exp.DataType.Type.BOOLEAN}
)

_VALUE_TYPES = exp.DataType.TEXT_TYPES | {exp.DataType.Type.BINARY, exp.DataType.Type.VARBINARY, exp.DataType.Type.NULL}

_UNKNOWN = exp.DataType.Type.UNKNOWN

_CLAUSES = {
    "where": "the WHERE clause",
    "group": "GROUP BY",
    "having": "HAVING",
    "order": "ORDER BY",
    "sort": "SORT BY",
    "cluster": "CLUSTER BY",
    "distribute": "DISTRIBUTE BY",
    "joins": "a JOIN",
    "qualify": "QUALIFY",
    "from_": "FROM",
    "laterals": "a LATERAL VIEW",
}


@dataclass(frozen=True)
class CheckResult:
    """Every finding about one script; ``ok`` when none is an error."""

    script: Script
    diagnostics: list[Diagnostic]

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)

    def format(self, path: str | None = None) -> str:
        """One line per finding (``path:line:col: severity: statement N: message``)."""
        return format_diagnostics(self.diagnostics, path or self.script.path)


def check_file(path: str | Path, variables: Mapping[str, str] | None = None, dialect: str | None = None) -> CheckResult:
    """Check the SQL file at ``path``."""
    return check_script(read_script(path, variables, dialect))


def check_text(
    text: str, path: str = "<sql>", variables: Mapping[str, str] | None = None, dialect: str | None = None
) -> CheckResult:
    """Check SQL given as text (``path`` only names it in the findings)."""
    return check_script(load_script(text, path, variables, dialect))


def check_script(script: Script) -> CheckResult:
    """Run every rule over every statement that parsed."""
    found = list(script.diagnostics)
    catalog: str | None = None
    for statement in script.statements:
        if statement.expression is None:
            continue
        context = _Context(script, statement, catalog)
        for rule in _RULES:
            found.extend(rule(context))
        catalog = a.catalog_after(statement.expression, catalog)
    return CheckResult(script, sorted(set(found), key=lambda d: (d.line, d.column, d.statement, d.message)))


def require_clean(result: CheckResult) -> CheckResult:
    """``result`` when it has no errors; else raise :class:`CheckFailed`."""
    if not result.ok:
        raise check_failed(result.script.path, result.diagnostics)
    return result


@dataclass(frozen=True)
class _Context:
    script: Script
    statement: Statement
    catalog: str | None

    @property
    def expression(self) -> exp.Expression:
        assert self.statement.expression is not None
        return self.statement.expression

    def at(self, node: exp.Expression | None, message: str, severity: str = ERROR) -> Diagnostic:
        offset = a.node_offset(node) if node is not None else None
        return Diagnostic(severity, self.statement.number, *self.script.position_in(self.statement, offset), message)


def _sql(node: exp.Expression, limit: int = 60) -> str:
    text = node.sql("spark", normalize_functions="lower")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- rules -----------------------------------------------------------------


def _functions(ctx: _Context) -> Iterator[Diagnostic]:
    for call in ctx.expression.find_all(exp.Anonymous):
        name = a.call_name(call) or ""
        if name in a.FUNCTIONS:
            want, got = a.FUNCTIONS[name], len(call.expressions)
            if want != got:
                usage = {"kplex_vpartition": "(key, V)", "kplex_json": "(json, '/pointer')"}.get(name, "(<expr>)")
                yield ctx.at(call, f"{name} takes {want} argument(s) {usage}, got {got}")
            continue
        guess = difflib.get_close_matches(name, list(a.FUNCTIONS), n=1, cutoff=0.75)
        if guess:
            yield ctx.at(call, f"unknown function {name}; did you mean {guess[0]}?")
        elif name.startswith("kplex"):
            known = ", ".join(a.FUNCTIONS)
            yield ctx.at(call, f"unknown function {name}; kplex functions are {known}")


def _create(ctx: _Context) -> Iterator[Diagnostic]:
    create = a.kplex_create(ctx.expression, ctx.catalog)
    if create is None:
        return
    where = create.node.this
    if create.has_columns:
        yield ctx.at(where, f"CREATE TABLE kplex.{create.table} takes no column list: "
                     "the columns of a kplex table are fixed (key, value, topic, partition, offset, timestamp, "
                     "headers, ...)")
    values = {name: value for name, value, _ in create.properties}
    spelt: dict[str, str] = {}
    for name, value, node in create.properties:
        first = spelt.setdefault(name.lower(), value.strip())
        if first != value.strip():
            yield ctx.at(node, f"table property '{name.lower()}' is given twice (its name is case-insensitive), "
                               f"with values ['{first}', '{value.strip()}']: give it once")
    for name, value, node in create.properties:
        problem = problem_of(name, value)
        if problem:
            yield ctx.at(node, problem[1], problem[0])
    misspelt = {suggest(name) for name in values if name.lower() not in PROPERTIES}
    for name, problem in missing_required(values).items():
        if name not in misspelt:
            yield ctx.at(where, f"CREATE TABLE kplex.{create.table}: {problem}")
    lowered = {name.lower(): value for name, value in values.items()}
    named_after = SOURCE not in lowered and not lowered.get(TOPIC, "").strip()
    if named_after and topic_name_problem(create.table):
        yield ctx.at(where, f"CREATE TABLE kplex.{create.table}: its topic would be named as the table, which cannot be "
                     f"a Kafka topic's name: {topic_name_problem(create.table)}; name a topic with '{TOPIC}'")
    v, p = parse_int(lowered.get(VIRTUAL_PARTITIONS, "")), parse_int(lowered.get(PHYSICAL_PARTITIONS, ""))
    if v and p and v >= 1 and p >= 1:
        if p > v:
            yield ctx.at(where, f"{p} physical partitions for {v} virtual ones: "
                         f"physical partitions {v}..{p - 1} stay empty", WARNING)
        elif v % p:
            yield ctx.at(where, f"{PHYSICAL_PARTITIONS} = {p} does not divide {VIRTUAL_PARTITIONS} = {v}: "
                         "records are not where a Kafka producer keyed the same way would put them (G4)", WARNING)


def _alter(ctx: _Context) -> Iterator[Diagnostic]:
    node = ctx.expression
    if not isinstance(node, exp.Alter) or a.kplex_table_name(node.this, ctx.catalog) is None:
        return
    for name, value, prop in a.properties_of(node):
        problem = problem_of(name, value)
        if problem:
            yield ctx.at(prop, problem[1], problem[0])


_ROLE_HELP = {
    "key": "select kplex_key(<expr>) (or a column named key)",
    "order": "select kplex_order(<expr>) (or a column named order_value)",
    "value": "select the record value as a column named value",
}


def _write(ctx: _Context) -> Iterator[Diagnostic]:
    write = a.kplex_write(ctx.expression, ctx.catalog)
    if write is None:
        return
    target = f"INSERT INTO kplex.{write.table}"
    if write.overwrite:
        yield ctx.at(write.node, f"INSERT OVERWRITE kplex.{write.table}: Kafka topics are append-only; use INSERT INTO")
    for branch in write.branches:
        yield from _branch_roles(ctx, target, branch)
    for call in write.node.find_all(exp.Anonymous):
        if a.call_name(call) in ("kplex_key", "kplex_order"):
            problem = _nesting(call)
            if problem:
                yield ctx.at(call, problem)


def _branch_roles(ctx: _Context, target: str, branch: exp.Expression) -> Iterator[Diagnostic]:
    roles = a.select_roles(branch)
    missing = [role for role in ("key", "order", "value") if not roles.of(role)]
    if missing and roles.star is not None:
        names = " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
        plural = "s" if len(missing) > 1 else ""
        yield ctx.at(roles.star, f"{target}: cannot check the {names} column{plural} behind *; "
                     "name them in the select list", WARNING)
        return
    for role in missing:
        yield ctx.at(branch, f"{target} has no {role} column: {_ROLE_HELP[role]}")
    for role in ("key", "order", "value", "headers"):
        items = roles.of(role)
        if len(items) > 1:
            listed = " and ".join(_sql(i, 40) for i in items)
            yield ctx.at(items[1], f"{target} has {len(items)} {role} columns: {listed}; keep exactly one")
    if roles.rest and not missing:
        listed = ", ".join(_sql(i, 40) for i in roles.rest)
        yield ctx.at(roles.rest[0], f"{target} has columns with no role: {listed}; the writer takes only "
                     "the key, order, value and headers columns")


def _nesting(call: exp.Expression) -> str | None:
    """Why ``call`` is where the writer cannot see it, or None when it is a
    whole (possibly aliased) select item."""
    name = a.call_name(call) or ""
    site = a.call_site(call)
    child, up = site, site.parent
    while up is not None and not isinstance(up, exp.Select):
        child, up = up, up.parent
    if up is None:
        return f"{name}(...) outside a SELECT cannot work: select it as a column of the INSERT's query"
    if child.arg_key != "expressions":
        clause = _CLAUSES.get(child.arg_key, child.arg_key.upper())
        return (f"{name}(...) in {clause} cannot work: it only marks the {name[6:]} column "
                "as a select item of the INSERT's query")
    if child is site or (isinstance(child, exp.Alias) and child.this is site):
        return None
    parent = site.parent
    if isinstance(parent, exp.Func):
        inside = f"{a.call_name(parent) or parent.sql_name().lower()}(...)"
    else:
        inside = _sql(parent)
    return (f"{name}(...) is nested inside {inside}: the writer only recognises {name} "
            f"as a whole select item, so move the rest of the expression inside it: {name}(<expr>)")


def _types(ctx: _Context) -> Iterator[Diagnostic]:
    """kplex_order of a value that is certainly not a TIMESTAMP, DATE or
    integer; a written value that is certainly not BINARY or STRING."""
    calls = {c.meta.get("start"): c for c in ctx.expression.find_all(exp.Anonymous)
             if a.is_kplex_call(c, "kplex_order")}
    write = a.kplex_write(ctx.expression, ctx.catalog)
    if not calls and write is None:
        return
    typed = _annotated(ctx)
    if typed is None:
        return
    for call in typed.find_all(exp.Anonymous):
        original = calls.get(call.meta.get("start")) if call._meta else None
        if original is None or len(call.expressions) != 1:
            continue
        kind = call.expressions[0].type
        if kind is not None and kind.this in _NOT_ORDER_TYPES:
            arg = a.call_argument_text(ctx.statement.text, original, ctx.script.dialect)
            yield ctx.at(original, f"kplex_order takes a TIMESTAMP, DATE or integer, but {arg} is "
                         f"{kind.sql('spark').upper()}: convert it, e.g. kplex_order(CAST({arg} AS BIGINT))")
    typed_write = a.kplex_write(typed, ctx.catalog)
    if write is None or typed_write is None:
        return
    values = {a.node_offset(i): i for b in write.branches for i in a.select_roles(b).of("value")}
    for branch in typed_write.branches:
        for item in a.select_roles(branch).of("value"):
            kind, original = item.type, values.get(a.node_offset(item))
            if original is not None and kind is not None and kind.this not in _VALUE_TYPES | {_UNKNOWN}:
                yield ctx.at(original, f"the value column {_sql(original, 50)} is {kind.sql('spark').upper()}: "
                             "kplex writes BINARY or STRING values; use to_json(...) for structured ones")


def _annotated(ctx: _Context) -> exp.Expression | None:
    """A copy of the statement with sqlglot's types, knowing the columns of kplex tables."""
    tables = {t.name: TOPIC_COLUMNS for t in ctx.expression.find_all(exp.Table)
              if a.kplex_table_name(t, ctx.catalog) is not None}
    schema = MappingSchema({a.CATALOG: tables} if tables else {}, dialect="spark")
    try:
        typed = qualify(ctx.expression.copy(), schema=schema, dialect="spark", validate_qualify_columns=False,
                        identify=False, quote_identifiers=False)
        return annotate_types(typed, schema=schema, dialect="spark")
    except Exception:  # noqa: BLE001 - a statement sqlglot cannot type is not an error here
        return None


# SET key = value as Spark reads it: the key, then the rest of the statement trimmed (quotes kept).
_SET = re.compile(r"(?:\s|--[^\n]*\n|/\*.*?\*/)*SET\s+`?(?P<key>[\w.:-]+)`?(?:\s*=(?P<value>[^;]*))?[\s;]*\Z",
                  re.IGNORECASE | re.DOTALL)


def _settings(ctx: _Context) -> Iterator[Diagnostic]:
    set_ = _SET.match(ctx.statement.text)
    if set_ is None or set_["value"] is None:  # SET key shows the setting; it sets nothing
        return
    problem = session_setting_problem(set_["key"], set_["value"].strip())
    if problem:
        yield ctx.at(None, f"SET {set_['key']}: {problem}")


_RULES: tuple[Callable[[_Context], Iterator[Diagnostic]], ...] = (_functions, _create, _alter, _write, _types, _settings)
