"""A SQL file as numbered statements: variables substituted, split, parsed.

``${name}`` is replaced by the value given for ``name`` before anything else
(an undefined variable is an error at its line and column). The text is then
split at top-level semicolons with the dialect's own tokenizer, so a ``;``
inside a string or a comment splits nothing, and each statement is parsed
with sqlglot on its own: a syntax error in one statement is reported at its
line and column, the others are still parsed.

Line numbers are those of the file as written; columns are counted after
substitution (a value longer than its ``${name}`` shifts the rest of its line).

>>> script = load_script("SET a = 1;\\nSELECT ${col}\\nFROM kplex.t;", variables={"col": "value"})
>>> [(s.number, s.line, s.text) for s in script.statements]
[(1, 1, 'SET a = 1'), (2, 2, 'SELECT value\\nFROM kplex.t')]
>>> script.diagnostics
[]
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from sqlglot import exp
from sqlglot.dialects import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from kplex.sqltools.diagnostics import ERROR, Diagnostic
from kplex.sqltools.errors import unknown_dialect

__all__ = ["Statement", "Script", "load_script", "read_script", "substitute", "DEFAULT_DIALECT"]

DEFAULT_DIALECT = "spark"

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}")
_TOKEN_REPR = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+.*?>")



@dataclass(frozen=True)
class Statement:
    """One statement of a script. ``start`` is its offset in ``Script.text``;
    ``expression`` is None when it did not parse."""

    number: int
    text: str
    start: int
    line: int
    column: int
    expression: exp.Expression | None

    @property
    def head(self) -> str:
        """The statement's first line, shortened: how progress and errors name it."""
        first = " ".join(self.text.split("\n", 1)[0].split())
        return first if len(first) <= 72 else first[:69] + "..."


@dataclass(frozen=True)
class Script:
    """A parsed SQL file. ``diagnostics`` holds variable and syntax errors."""

    path: str
    text: str
    dialect: str
    statements: tuple[Statement, ...]
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset of ``text``."""
        return _position(self.text, offset)

    def position_in(self, statement: Statement, offset: int | None) -> tuple[int, int]:
        """(line, column) of an offset inside ``statement`` (its start when None)."""
        return self.position(statement.start + (offset or 0))


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def substitute(text: str, variables: Mapping[str, str]) -> tuple[str, list[tuple[int, str]]]:
    """``text`` with every ``${name}`` replaced; also the (offset, name) of the
    undefined ones, left as they were. Inside comments an undefined variable
    is not an error.

    >>> substitute("FROM kplex.${t} -- ${u}", {"t": "pageviews"})
    ('FROM kplex.pageviews -- ${u}', [])
    >>> substitute("FROM kplex.${u}", {})
    ('FROM kplex.${u}', [(11, 'u')])
    """
    undefined: list[tuple[int, str]] = []
    comments = _comment_spans(text)

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in variables:
            return variables[name]
        if not any(start <= match.start() < end for start, end in comments):
            undefined.append((match.start(), name))
        return match.group(0)

    return _VARIABLE.sub(replace, text), undefined


def _comment_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each ``--`` and ``/* */`` comment, strings skipped."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            i += 1
            while i < n and text[i] != c:
                i += 2 if text[i] == "\\" and c != "`" else 1
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            spans.append((i, end))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            spans.append((i, end))
            i = end
        else:
            i += 1
    return spans


class ScriptEncodingError(ValueError):
    """A SQL (or job) file that is not UTF-8, named with the first byte that is not."""


def read_text(path: str | Path) -> str:
    """The text of the file at ``path``: UTF-8, with or without a byte order mark (as editors
    on Windows save it); else :class:`ScriptEncodingError` naming the file and its first byte
    that is not, and where it is."""
    data = Path(path).read_bytes()
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as e:
        offset = start + e.start
        raise ScriptEncodingError(f"{path}: not UTF-8 (byte 0x{data[offset]:02x} at offset {offset})") from None


def read_script(path: str | Path, variables: Mapping[str, str] | None = None, dialect: str | None = None) -> Script:
    """Read and parse the SQL file at ``path`` (see :func:`load_script`): UTF-8 (:func:`read_text`),
    any line endings."""
    text = read_text(path).replace("\r\n", "\n").replace("\r", "\n")
    return load_script(text, str(path), variables, dialect)


def load_script(
    text: str,
    path: str = "<sql>",
    variables: Mapping[str, str] | None = None,
    dialect: str | None = None,
) -> Script:
    """Substitute, split and parse ``text``, written in ``dialect`` (Spark SQL by default)."""
    dialect = dialect or DEFAULT_DIALECT
    try:
        d = Dialect.get_or_raise(dialect)
    except ValueError as error:
        raise unknown_dialect(dialect, error) from error
    substituted, undefined = substitute(text, variables or {})
    if undefined:
        found = [
            Diagnostic(ERROR, 0, *_position(text, offset), f"undefined variable ${{{name}}}: pass --var {name}=VALUE")
            for offset, name in undefined
        ]
        return Script(path, substituted, dialect, (), found)
    try:
        tokens = d.tokenize(substituted)
    except TokenError as error:
        tokens = None
        token_error = _token_diagnostic(substituted, error)
    moved = _values_moving_ends(d, text, variables or {}, tokens)
    if moved:
        names = ", ".join(f"--var {name}" for name in moved)
        return Script(path, substituted, dialect, (), [Diagnostic(
            ERROR, 0, 1, 1, f"the value of {names} holds a ';', a quote, a comment or a line break that changes where the file's"
                            " statements end: a value stays inside its statement; pass it without them")])
    if tokens is None:
        return Script(path, substituted, dialect, (), [token_error])
    statements: list[Statement] = []
    diagnostics: list[Diagnostic] = []
    for first, last in _statement_spans(tokens):
        number = len(statements) + 1
        body = substituted[tokens[first].start : tokens[last].end + 1]
        line, column = _position(substituted, tokens[first].start)
        expression, problem = _parse(d, body)
        if problem:
            offset, message = problem
            where = _position(substituted, tokens[first].start + offset)
            diagnostics.append(Diagnostic(ERROR, number, *where, message))
        statements.append(Statement(number, body, tokens[first].start, line, column, expression))
    return Script(path, substituted, dialect, tuple(statements), diagnostics)


def _values_moving_ends(d: Dialect, text: str, variables: Mapping[str, str], tokens: list[Token] | None) -> list[str]:
    """The names of the variables used in ``text`` whose values change where its statements
    end (``tokens``: the file's with the values in, None if it did not tokenize so): a value
    that ends a statement or opens a quote or comment would run SQL the file does not hold.
    Empty when the values leave every statement end where it is in the file as written, or
    the file does not tokenize without them either.

    >>> from sqlglot.dialects.dialect import Dialect
    >>> spark = Dialect.get_or_raise("spark")
    >>> text = "SELECT '${a}'; SELECT 1;"
    >>> value = {"a": "'; DROP TABLE t; --"}
    >>> _values_moving_ends(spark, text, value, spark.tokenize(substitute(text, value)[0]))
    ['a']
    >>> _values_moving_ends(spark, text, {"a": "it's; fine"}, None)
    ['a']
    >>> _values_moving_ends(spark, text, {"a": "2026-01-01"}, spark.tokenize("SELECT '2026-01-01'; SELECT 1;"))
    []
    >>> text = "SELECT 1;\\n-- run by ${who}\\n"
    >>> value = {"who": "me\\nDROP TABLE kplex.t"}
    >>> _values_moving_ends(spark, text, value, spark.tokenize(substitute(text, value)[0]))
    ['who']
    """
    used = {m.group(1) for m in _VARIABLE.finditer(text) if m.group(1) in variables}
    suspects = sorted(n for n in used if any(c in variables[n] for c in (";", "'", '"', "`", "--", "/*", "*/", "\\",
                                                                        "\n", "\r")))
    if not suspects:
        return []
    try:
        masked = d.tokenize(_VARIABLE.sub(lambda m: "_" * len(m.group(0)), text))
    except TokenError:
        return []
    if tokens is None:
        return suspects
    # The text between values, by its offset with the values in and as written.
    outside: list[tuple[int, int, int]] = []
    written = put = 0
    for m in _VARIABLE.finditer(text):
        if m.group(1) in variables:
            outside.append((put, put + m.start() - written, written))
            put += m.start() - written + len(variables[m.group(1)])
            written = m.end()
    outside.append((put, put + len(text) - written, written))

    def as_written(offset: int) -> int:
        for start, end, at in outside:
            if start <= offset < end:
                return at + offset - start
        return -1  # inside a value

    # Where each statement starts and ends (its ';'), as written: a value must move none.
    ends = {as_written(t.start) for t in tokens if t.token_type == TokenType.SEMICOLON}
    starts = [as_written(tokens[first].start) for first, _ in _statement_spans(tokens)]
    if ends != {t.start for t in masked if t.token_type == TokenType.SEMICOLON}:
        return suspects
    return [] if starts == [masked[first].start for first, _ in _statement_spans(masked)] else suspects


def _statement_spans(tokens: list[Token]) -> list[tuple[int, int]]:
    """(first, last) token indexes of each non-empty statement."""
    spans: list[tuple[int, int]] = []
    first = 0
    for i, token in enumerate(tokens + [None]):  # type: ignore[operator]
        if token is None or token.token_type == TokenType.SEMICOLON:
            if i > first:
                spans.append((first, i - 1))
            first = i + 1
    return spans


_RELATION_BEFORE = {TokenType.FROM, TokenType.JOIN, TokenType.COMMA}
_NAME_PART = {TokenType.VAR, TokenType.IDENTIFIER}


def _stream_parens(d: Dialect, body: str) -> str:
    """``body`` with each ``STREAM <name>`` relation (after FROM, JOIN or a comma) written
    ``STREAM(<name>)``, the form sqlglot parses (Spark 4.1 takes both): '(' takes the place
    of the first blank after STREAM, and ')' that of the first blank after the name, when
    there is one, so that what follows keeps its line and column.

    >>> _stream_parens(Dialect.get_or_raise("spark"), "SELECT a FROM STREAM kplex.s WHERE a > 0")
    'SELECT a FROM STREAM(kplex.s)WHERE a > 0'
    """
    try:
        tokens = d.tokenize(body)
    except TokenError:
        return body
    edits: list[tuple[int, int, str]] = []  # (start, end, text): body[start:end] becomes text
    for i in range(1, len(tokens) - 1):
        stream, name = tokens[i], tokens[i + 1]
        if (tokens[i - 1].token_type not in _RELATION_BEFORE or stream.text.upper() != "STREAM"
                or name.token_type not in _NAME_PART):
            continue
        last = i + 1
        while (last + 2 < len(tokens) and tokens[last + 1].token_type == TokenType.DOT
               and tokens[last + 2].token_type in _NAME_PART):
            last += 2
        gap = stream.end + 1
        edits.append((gap, gap + 1, "(") if body[gap] in " \t" else (gap, gap, "("))
        after = tokens[last].end + 1
        edits.append((after, after + 1, ")") if after < len(body) and body[after] in " \t" else (after, after, ")"))
    for start, end, text in reversed(edits):
        body = body[:start] + text + body[end:]
    return body


def _parse(d: Dialect, body: str) -> tuple[exp.Expression | None, tuple[int, str] | None]:
    """The statement's expression, or None and (offset in body, message)."""
    try:
        expressions = [e for e in d.parse(_stream_parens(d, body)) if e is not None]
    except ParseError as error:
        return None, _parse_problem(body, error)
    if len(expressions) != 1:  # cannot happen for a span without semicolons
        return None, (0, "syntax error: expected one statement")
    return expressions[0], None


def _parse_problem(body: str, error: ParseError) -> tuple[int, str]:
    details = error.errors[0] if error.errors else {}
    description = _TOKEN_REPR.sub(_token_text, str(details.get("description") or error))
    description = description.split("\n")[0]
    line, column = details.get("line"), details.get("col")
    highlight = str(details.get("highlight") or "")
    if not line or not column:
        return 0, f"syntax error: {description}"
    # sqlglot points at the end of the offending token; report its start.
    line_start = 0
    for _ in range(int(line) - 1):
        line_start = body.find("\n", line_start) + 1
    end = line_start + int(column)
    if "end of statement" in description:  # the statement stops too early
        return end, f"syntax error: {description} after '{highlight}'"
    offset = max(line_start, end - max(len(highlight), 1))
    near = f" near '{highlight}'" if highlight and highlight not in description else ""
    return offset, f"syntax error: {description}{near}"


def _token_text(match: re.Match[str]) -> str:
    kind, text = match.groups()
    return "end of statement" if kind in {"SENTINEL", "SEMICOLON"} else f"'{text}'"


def _token_diagnostic(text: str, error: TokenError) -> Diagnostic:
    """Unterminated strings, identifiers and comments: where they start."""
    cause = str(error.__cause__ or error)
    match = re.match(r"Missing (\S+) from \d+:(\d+)", cause)
    if match:
        offset = int(match.group(2))
        quote = match.group(1)
        return Diagnostic(ERROR, 0, *_position(text, offset), f"syntax error: unterminated {quote} (no closing {quote})")
    offset = text.rfind("/*")
    if offset >= 0 and "*/" not in text[offset:]:
        return Diagnostic(ERROR, 0, *_position(text, offset), "syntax error: unterminated comment (no closing */)")
    return Diagnostic(ERROR, 0, 1, 1, f"syntax error: {cause}")
