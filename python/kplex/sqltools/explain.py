"""``kplex sql explain``: what each kplex statement of a file will do, without Spark.

For every ``CREATE TABLE kplex.*`` and ``INSERT INTO kplex.*``: the source,
the key and order expressions (as written), V and P with where they come
from, the placement formula and the mapping of virtual onto physical
partitions, the delivery guarantee. V and P come from the definition stored
on the broker when one is reachable (``--bootstrap``, ``KPLEX_BOOTSTRAP`` or
the file's ``-- kplex.bootstrap`` comment; 5 s timeout), else from the
``TBLPROPERTIES`` of a ``CREATE`` earlier in the file, else they are unknown.

>>> print(explain_text('''CREATE TABLE kplex.t TBLPROPERTIES ('kplex.virtual_partitions' = '4', 'kplex.physical_partitions' = '2');
... INSERT INTO kplex.t SELECT kplex_key(k), kplex_order(ts), value FROM kplex.s;''', path="job.sql"))
kplex sql explain job.sql
broker: none given (--bootstrap, KPLEX_BOOTSTRAP or a '-- kplex.bootstrap = HOST:PORT' comment): V and P come from the file
<BLANKLINE>
statement 1, line 1: CREATE TABLE kplex.t
  creates     table kplex.t on topic t
  partitions  4 virtual on 2 physical (TBLPROPERTIES of statement 1)
  placement   vp = (murmur2(key bytes) & 0x7fffffff) % 4; physical partition = vp % 2
  mapping     physical 0: vp 0, 2
              physical 1: vp 1, 3
  delivery    exactly once: one Kafka transaction per INSERT; read_committed consumers see all of its rows once it succeeds, none if it fails
  null key    fail (a NULL key fails the INSERT); null order: fail
<BLANKLINE>
statement 2, line 2: INSERT INTO kplex.t
  source      kplex.s
  key         k
  order       ts
  partitions  4 virtual on 2 physical (TBLPROPERTIES of statement 1)
  placement   vp = (murmur2(key bytes) & 0x7fffffff) % 4; physical partition = vp % 2
  mapping     physical 0: vp 0, 2
              physical 1: vp 1, 3
  delivery    exactly once: one Kafka transaction per INSERT; read_committed consumers see all of its rows once it succeeds, none if it fails
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from sqlglot import exp

import kplex.sqltools.analysis as a
from kplex import settings
from kplex.definitions import TableDefinition
from kplex.kafka.config import librdkafka
from kplex.sqltools.bootstrap import resolve_bootstrap
from kplex.sqltools.definitions import read_table_definitions
from kplex.sqltools.errors import BrokerUnavailable
from kplex.sqltools.script import Script, Statement, load_script, read_script

__all__ = ["explain_script", "explain_text", "explain_file", "mapping_lines", "DELIVERY"]

DELIVERY = {
    "exactly_once": "exactly once: one Kafka transaction per INSERT; read_committed consumers "
    "see all of its rows once it succeeds, none if it fails",
    "at_least_once": "at least once: no transaction; a retried task can write rows twice and "
    "consumers may see rows of an INSERT that failed",
}

_NULLS = {"fail": "fail (a NULL {what} fails the INSERT)", "drop": "drop (rows with a NULL {what} are skipped)",
          "first": "first (a NULL order sorts before every value)"}

_LABEL = 12


@dataclass
class _Broker:
    """What the broker said: its tables, or why there are none to show."""

    bootstrap: str | None
    tables: dict[str, TableDefinition] | None
    note: str


@dataclass
class _State:
    """Definitions created so far in the file, by table name."""

    created: dict[str, tuple[TableDefinition, int, bool]] = field(default_factory=dict)
    catalog: str | None = None


def explain_file(
    path: str | Path,
    variables: Mapping[str, str] | None = None,
    dialect: str | None = None,
    bootstrap: str | None = None,
    timeout: float = 5.0,
    kafka_settings: Mapping[str, str] | None = None,
    kafka_settings_file: str | None = None,
) -> str:
    """Explain the SQL file at ``path``, reading stored definitions from the
    broker when one is given and reachable; ``kafka_settings`` are Java client settings
    (credentials), as ``--kafka-config`` gives them (``kafka_settings_file``, the file, to name
    in an error about them)."""
    script = read_script(path, variables, dialect)
    return explain_script(script, _ask_broker(script, bootstrap, timeout, kafka_settings, kafka_settings_file))


def explain_text(text: str, path: str = "<sql>", variables: Mapping[str, str] | None = None,
                 dialect: str | None = None, stored: Mapping[str, TableDefinition] | None = None,
                 bootstrap: str = "broker") -> str:
    """Explain SQL text; ``stored`` stands for the definitions a broker would hold."""
    script = load_script(text, path, variables, dialect)
    if stored is None:
        broker = _Broker(None, None, _NO_BROKER)
    else:
        broker = _Broker(bootstrap, dict(stored), f"{bootstrap} (stored table definitions read from _kplex_tables)")
    return explain_script(script, broker)


_NO_BROKER = ("none given (--bootstrap, KPLEX_BOOTSTRAP or a '-- kplex.bootstrap = HOST:PORT' comment): "
              "V and P come from the file")


def _ask_broker(script: Script, bootstrap: str | None, timeout: float,
                kafka_settings: Mapping[str, str] | None = None, kafka_settings_file: str | None = None) -> _Broker:
    address, origin = resolve_bootstrap(bootstrap, script.text)
    if address is None:
        return _Broker(None, None, _NO_BROKER)
    try:
        tables = read_table_definitions(address, timeout,
                                        config=librdkafka(kafka_settings or {}, kafka_settings_file))
    except BrokerUnavailable as error:
        return _Broker(address, None, f"{address} (from {origin}) not reachable: V and P come from the file ({error})")
    return _Broker(address, tables, f"{address} (from {origin}; {len(tables)} stored table definition(s))")


def explain_script(script: Script, broker: _Broker | None = None) -> str:
    """The explanation of an already parsed script."""
    broker = broker or _Broker(None, None, _NO_BROKER)
    lines = [f"kplex sql explain {script.path}", f"broker: {broker.note}"]
    for d in script.diagnostics:
        lines.append(d.format(script.path))
    state = _State()
    for statement in script.statements:
        lines.append("")
        lines += _explain_statement(script, statement, state, broker)
        if statement.expression is not None:
            state.catalog = a.catalog_after(statement.expression, state.catalog)
    return "\n".join(lines)


def _explain_statement(script: Script, statement: Statement, state: _State, broker: _Broker) -> list[str]:
    title = f"statement {statement.number}, line {statement.line}"
    node = statement.expression
    if node is None:
        return [f"{title}: {statement.head}", "  (does not parse: run kplex sql check)"]
    create = a.kplex_create(node, state.catalog)
    write = a.kplex_write(node, state.catalog)
    lines: list[str] = []
    if create is not None:
        lines += _explain_create(statement, create, state, broker)
    if write is not None:
        if create is None:
            lines.append(f"{title}: INSERT INTO kplex.{write.table}")
        lines += _explain_write(script, statement, write, state, broker)
    return lines or [f"{title}: {statement.head}", f"  {_other(node)}"]


def _other(node: exp.Expression) -> str:
    """One line on a statement that neither creates nor writes a kplex table."""
    if isinstance(node, exp.Query):
        return "a query: kplex sql run prints its rows on standard output"
    if isinstance(node, exp.Set):
        return "sets an option of the Spark session"
    return "not a kplex write: runs as it is"


def _row(label: str, text: str) -> str:
    return f"  {label:<{_LABEL - 1}} {text}"


def _explain_create(statement: Statement, create: a.KplexCreate, state: _State, broker: _Broker) -> list[str]:
    props = {name: value for name, value, _ in create.properties}
    origin = f"TBLPROPERTIES of statement {statement.number}"
    mine = TableDefinition.from_properties(create.table, props, origin)
    exists = "IF NOT EXISTS " if create.if_not_exists else ""
    lines = [f"statement {statement.number}, line {statement.line}: CREATE TABLE {exists}kplex.{create.table}"]
    stored = (broker.tables or {}).get(create.table)
    if mine.source:
        v = mine.virtual_partitions if mine.virtual_partitions is not None else "?"
        lines.append(_row("creates", f"read-time table kplex.{create.table}: a view of topic {mine.source} "
                          "re-keyed when it is read; nothing is written"))
        lines.append(_row("partitions", f"{v} virtual ({origin})"))
        lowered = {key.lower(): value for key, value in props.items()}
        for name, label, unit in ((settings.MAX_DELAY_MS, "max delay", " ms"), (settings.LATE_POLICY, "late", ""),
                                  (settings.LATE_TOPIC, "late topic", "")):
            if name in lowered:
                lines.append(_row(label, lowered[name] + unit))
    else:
        lines.append(_row("creates", f"table kplex.{create.table} on topic {mine.topic}"))
        lines += _partition_rows(mine)
        lines.append(_row("delivery", DELIVERY.get(mine.delivery, mine.delivery)))
        null_key = _NULLS.get(mine.null_key, mine.null_key).format(what="key")
        lines.append(_row("null key", f"{null_key}; null order: {mine.null_order}"))
    if mine.key or mine.order:
        lines.append(_row("described", f"key: {mine.key or '-'}; order: {mine.order or '-'}"))
    if stored is not None:
        if create.if_not_exists:
            lines.append(_row("note", f"kplex.{create.table} already exists on {broker.bootstrap} "
                              f"({_vp_text(stored)}): IF NOT EXISTS keeps it as it is"))
        elif not create.replace:
            lines.append(_row("note", f"kplex.{create.table} already exists on {broker.bootstrap}: "
                              "this CREATE will fail"))
    if stored is not None and create.if_not_exists:
        state.created[create.table] = (stored, statement.number, True)
    else:
        state.created[create.table] = (mine, statement.number, create.if_not_exists)
    return lines


def _explain_write(
    script: Script, statement: Statement, write: a.KplexWrite, state: _State, broker: _Broker
) -> list[str]:
    lines: list[str] = []
    sources = a.source_tables(write.node, state.catalog)
    lines.append(_row("source", ", ".join(sources) if sources else "(no table: literal rows)"))
    branch = write.branches[0]
    roles = a.select_roles(branch)
    key = _role_text(script, statement, roles, "key", "kplex_key")
    order = _role_text(script, statement, roles, "order", "kplex_order")
    lines.append(_row("key", key))
    lines.append(_row("order", order))
    if len(write.branches) > 1:
        lines.append(_row("", f"(first of {len(write.branches)} UNION branches)"))
    definition = _definition_for(write.table, state, broker)
    if definition is None:
        lines.append(_row("partitions", f"V and P unknown: kplex.{write.table} is not created in this file "
                          f"and {_why_not_stored(broker)}"))
        lines.append(_row("delivery", DELIVERY["exactly_once"] + " (unless the table says otherwise)"))
        return lines
    lines += _partition_rows(definition)
    lines.append(_row("delivery", DELIVERY.get(definition.delivery, definition.delivery)))
    return lines


def _definition_for(table: str, state: _State, broker: _Broker) -> TableDefinition | None:
    if table in state.created:
        return state.created[table][0]
    return (broker.tables or {}).get(table)


def _why_not_stored(broker: _Broker) -> str:
    if broker.bootstrap is None:
        return "no broker was given to read its stored definition"
    if broker.tables is None:
        return f"{broker.bootstrap} was not reachable"
    return f"{broker.bootstrap} has no stored definition of it"


def _role_text(script: Script, statement: Statement, roles: a.Roles, role: str, function: str) -> str:
    items = roles.of(role)
    if not items:
        return "from *" if roles.star is not None else "missing (see kplex sql check)"
    item = items[0]
    inner = item.this if isinstance(item, exp.Alias) else item
    if a.is_kplex_call(inner, function):
        return a.call_argument_text(statement.text, a.unqualified(inner), script.dialect)
    name = item.alias_or_name
    shown = inner.sql(script.dialect, normalize_functions="lower")
    return f"column {name}" + ("" if shown == name else f" = {shown}")


def _vp_text(d: TableDefinition) -> str:
    v = d.virtual_partitions if d.virtual_partitions is not None else "?"
    p = d.physical_partitions if d.physical_partitions is not None else "?"
    return f"{v} virtual on {p} physical"


def _partition_rows(d: TableDefinition) -> list[str]:
    v, p = d.virtual_partitions, d.physical_partitions
    rows = [_row("partitions", f"{_vp_text(d)} ({d.origin})")]
    if v is None or p is None:
        return rows
    if v == 1:
        rows.append(_row("placement", "every record in vp 0: one total order over all of them"))
    else:
        rows.append(_row("placement", f"vp = (murmur2(key bytes) & 0x7fffffff) % {v}; physical partition = vp % {p}"))
    mapping = mapping_lines(v, p)
    rows.append(_row("mapping", mapping[0]))
    rows += [_row("", line) for line in mapping[1:]]
    if p <= v and v % p:
        rows.append(_row("note", f"P = {p} does not divide V = {v}: records are not on the partition a Kafka "
                         "producer keyed the same way would choose (G4)"))
    return rows


def mapping_lines(v: int, p: int, max_partitions: int = 8, max_vps: int = 8) -> list[str]:
    """Which virtual partitions live on each physical one (``physical = vp % P``).

    >>> mapping_lines(9, 3)
    ['physical 0: vp 0, 3, 6', 'physical 1: vp 1, 4, 7', 'physical 2: vp 2, 5, 8']
    >>> mapping_lines(100, 2)
    ['physical 0: vp 0, 2, 4, 6, 8, 10, ..., 98 (50 in all)', 'physical 1: vp 1, 3, 5, 7, 9, 11, ..., 99 (50 in all)']
    >>> mapping_lines(2, 3)
    ['physical 0: vp 0', 'physical 1: vp 1', 'physical 2: empty']
    """
    lines = []
    for physical in range(min(p, max_partitions)):
        vps = list(range(physical, v, p))
        if not vps:
            shown = "empty"
        elif len(vps) <= max_vps:
            shown = "vp " + ", ".join(map(str, vps))
        else:
            shown = "vp " + ", ".join(map(str, vps[: max_vps - 2])) + f", ..., {vps[-1]} ({len(vps)} in all)"
        lines.append(f"physical {physical}: {shown}")
    if p > max_partitions:
        lines.append(f"... physical {max_partitions}..{p - 1} alike ({p} physical partitions in all)")
    return lines
