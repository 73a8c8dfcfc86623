"""What a parsed statement does to the ``kplex`` catalog: the shared reading of
``check`` and ``explain``.

A *kplex table* is a table of the ``kplex`` catalog: ``kplex.<topic>``, or an
unqualified name after ``USE kplex``. A statement matters when it creates one
(:class:`KplexCreate`) or writes into one (:class:`KplexWrite`).

The writer of kplex finds its columns by name in the output of the INSERT's
query: the key is the output of ``kplex_key(...)`` or a column named ``key``,
the order the output of ``kplex_order(...)`` or a column named
``order_value``, then ``value`` and optionally ``headers``. So
:func:`select_roles` reads the top-level items of each SELECT the INSERT
writes (every branch of a UNION).

>>> import sqlglot
>>> e = sqlglot.parse_one("INSERT INTO kplex.t SELECT kplex_key(k), ts AS order_value, value FROM kplex.s", read="spark")
>>> w = kplex_write(e)
>>> w.table, [sorted(r.items) for r in (select_roles(b) for b in w.branches)][0]
('t', ['key', 'order', 'value'])
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.tokens import TokenType

__all__ = [
    "CATALOG",
    "FUNCTIONS",
    "KplexCreate",
    "KplexWrite",
    "Roles",
    "call_name",
    "call_site",
    "unqualified",
    "catalog_after",
    "is_kplex_call",
    "kplex_table_name",
    "kplex_create",
    "kplex_write",
    "select_roles",
    "branches",
    "source_tables",
    "node_offset",
    "call_argument_text",
    "properties_of",
]

CATALOG = "kplex"

#: The SQL functions of kplex and how many arguments each takes.
FUNCTIONS: dict[str, int] = {"kplex_key": 1, "kplex_order": 1, "kplex_vpartition": 2, "kplex_json": 2}

KEY_COLUMN = "key"
ORDER_COLUMNS = ("order_value", "order")
VALUE_COLUMN = "value"


def call_name(node: exp.Expression) -> str | None:
    """The lower-case name of a call to a function sqlglot does not know (as
    kplex's are), else None."""
    return node.name.lower() if isinstance(node, exp.Anonymous) else None


def is_kplex_call(node: exp.Expression, name: str | None = None) -> bool:
    """True for a call of ``name`` (or of any kplex function when None),
    also catalog-qualified: ``kplex.kplex_key(x)``."""
    found = call_name(unqualified(node))
    return found == name if name else found in FUNCTIONS


def unqualified(node: exp.Expression) -> exp.Expression:
    """The call inside ``kplex.<function>(...)`` (sqlglot reads it as a Dot), else ``node``."""
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Anonymous) and node.this.name.lower() == CATALOG:
        return node.expression
    return node


def call_site(call: exp.Expression) -> exp.Expression:
    """The node standing for ``call`` in its tree: the ``kplex.`` Dot around it, if any."""
    parent = call.parent
    return parent if isinstance(parent, exp.Dot) and unqualified(parent) is call else call


def kplex_table_name(table: exp.Expression, current_catalog: str | None = None) -> str | None:
    """The topic/table name when ``table`` is in the kplex catalog, else None."""
    if isinstance(table, exp.Schema):
        table = table.this
    if not isinstance(table, exp.Table) or table.catalog:
        return None
    if table.db:
        return table.name if table.db.lower() == CATALOG else None
    return table.name if current_catalog == CATALOG else None


def catalog_after(expression: exp.Expression, catalog: str | None) -> str | None:
    """The current catalog after a statement (Spark: ``USE kplex`` selects the catalog)."""
    if isinstance(expression, exp.Use) and isinstance(expression.this, exp.Table) and not expression.this.db:
        return expression.this.name.lower()
    return catalog


def properties_of(node: exp.Expression | None) -> list[tuple[str, str, exp.Property]]:
    """(name, value, node) of each ``TBLPROPERTIES`` entry under ``node``."""
    found: list[tuple[str, str, exp.Property]] = []
    if node is None:
        return found
    for prop in node.find_all(exp.Property):
        if type(prop) is not exp.Property:  # USING ..., LOCATION ...: not TBLPROPERTIES
            continue
        value = prop.args.get("value")
        if isinstance(value, (exp.Literal, exp.Identifier, exp.Var)):
            text = value.name
        else:
            text = value.sql() if value else ""
        # An unquoted dotted key (Spark's grammar allows kplex.virtual_partitions = 9) is a Dot.
        name = prop.name or (prop.this.sql(dialect="spark") if isinstance(prop.this, (exp.Dot, exp.Column)) else "")
        found.append((name, text, prop))
    return found


@dataclass(frozen=True)
class KplexCreate:
    """``CREATE TABLE kplex.<table> ...``: its properties and whether it declares columns."""

    table: str
    properties: list[tuple[str, str, exp.Property]]
    if_not_exists: bool
    replace: bool
    has_columns: bool
    node: exp.Create


def kplex_create(expression: exp.Expression | None, current_catalog: str | None = None) -> KplexCreate | None:
    """The kplex table a statement creates, or None."""
    if not isinstance(expression, exp.Create) or str(expression.args.get("kind", "")).upper() != "TABLE":
        return None
    name = kplex_table_name(expression.this, current_catalog)
    if name is None:
        return None
    return KplexCreate(
        table=name,
        properties=properties_of(expression.args.get("properties")),
        if_not_exists=bool(expression.args.get("exists")),
        replace=bool(expression.args.get("replace")),
        has_columns=isinstance(expression.this, exp.Schema) and bool(expression.this.expressions),
        node=expression,
    )


@dataclass(frozen=True)
class KplexWrite:
    """An ``INSERT INTO kplex.<table>`` (or a ``CREATE TABLE kplex.<table> AS``)."""

    table: str
    query: exp.Expression
    overwrite: bool
    node: exp.Expression

    @property
    def branches(self) -> list[exp.Expression]:
        return branches(self.query)


def kplex_write(expression: exp.Expression | None, current_catalog: str | None = None) -> KplexWrite | None:
    """The kplex table a statement writes rows into, or None."""
    if isinstance(expression, exp.Insert):
        name = kplex_table_name(expression.this, current_catalog)
        query = expression.expression
        if name is None or query is None:
            return None
        return KplexWrite(name, query, bool(expression.args.get("overwrite")), expression)
    create = kplex_create(expression, current_catalog)
    if create is not None and isinstance(expression.expression, exp.Query):
        return KplexWrite(create.table, expression.expression, False, expression)
    return None


def branches(query: exp.Expression) -> list[exp.Expression]:
    """The SELECTs (or VALUES) whose rows a query returns: each side of a set operation."""
    while isinstance(query, exp.Subquery):
        query = query.this
    if isinstance(query, exp.SetOperation):
        return branches(query.this) + branches(query.expression)
    return [query]


@dataclass
class Roles:
    """The top-level items of one SELECT, by the role the writer gives them.
    ``items`` maps a role (key, order, value, headers) to its select items;
    ``rest`` holds the items with no role."""

    items: dict[str, list[exp.Expression]] = field(default_factory=dict)
    rest: list[exp.Expression] = field(default_factory=list)
    star: exp.Expression | None = None

    def add(self, role: str, item: exp.Expression) -> None:
        self.items.setdefault(role, []).append(item)

    def of(self, role: str) -> list[exp.Expression]:
        return self.items.get(role, [])


def select_roles(select: exp.Expression) -> Roles:
    """Sort a SELECT's top-level items as the writer does: the key is
    ``kplex_key(...)`` or a column ``key``; the order ``kplex_order(...)`` or a
    column ``order_value`` or ``order``; ``headers``; the value a column
    ``value``, else the only item left."""
    roles = Roles()
    if not isinstance(select, exp.Select):
        return roles
    for item in select.expressions:
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Star) or (isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)):
            roles.star = item
            continue
        name = item.alias_or_name.lower()
        made = is_kplex_call(inner, "kplex_key") or is_kplex_call(inner, "kplex_order")
        found = [
            role
            for role, matches in (
                ("key", is_kplex_call(inner, "kplex_key") or name == KEY_COLUMN),
                ("order", is_kplex_call(inner, "kplex_order") or name in ORDER_COLUMNS),
                ("headers", name == "headers"),
                ("value", name == VALUE_COLUMN and not made),
            )
            if matches
        ]
        for role in found:
            roles.add(role, item)
        if not found:
            roles.rest.append(item)
    if not roles.of("value") and len(roles.rest) == 1 and roles.star is None:
        roles.add("value", roles.rest.pop())
    return roles


def source_tables(statement: exp.Expression, current_catalog: str | None = None) -> list[str]:
    """The tables a statement reads, in order of appearance: CTE names and the
    table written to left out, ``kplex.`` shown for unqualified names after
    ``USE kplex``."""
    ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
    target = statement.this if isinstance(statement, (exp.Insert, exp.Create)) else None
    if isinstance(target, exp.Schema):
        target = target.this
    names: list[str] = []
    for table in statement.find_all(exp.Table):
        if table is target or (not table.db and table.name.lower() in ctes):
            continue
        db = table.db or (CATALOG if current_catalog == CATALOG else "")
        text = ".".join(part for part in (table.catalog, db, table.name) if part)
        if text and text not in names:
            names.append(text)
    return names


def node_offset(node: exp.Expression) -> int | None:
    """Character offset (in the statement) where ``node`` starts, when known."""
    starts = [n.meta["start"] for n in node.walk() if "start" in (n.meta if n._meta else {})]
    return min(starts) if starts else None


def call_argument_text(statement_text: str, call: exp.Expression, dialect: str) -> str:
    """The arguments of a call as written in the statement, whitespace folded.

    Falls back to sqlglot's rendering when the call's position is unknown.
    """
    from sqlglot.dialects import Dialect

    start = call.meta.get("start") if call._meta else None
    if start is not None:
        tokens = Dialect.get_or_raise(dialect).tokenize(statement_text)
        text = _parenthesised(statement_text, tokens, start)
        if text is not None:
            return " ".join(text.split())
    return ", ".join(a.sql(dialect, normalize_functions="lower") for a in call.expressions)


def _parenthesised(text: str, tokens: list, start: int) -> str | None:
    index = next((i for i, t in enumerate(tokens) if t.start == start), None)
    if index is None or index + 1 >= len(tokens) or tokens[index + 1].token_type != TokenType.L_PAREN:
        return None
    depth = 0
    for token in tokens[index + 1 :]:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return text[tokens[index + 1].end + 1 : token.start].strip()
    return None
