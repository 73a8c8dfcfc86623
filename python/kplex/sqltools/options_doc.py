"""The option reference, ``docs/options.md``, rendered from ``kplex/options.json``: every
setting with its type, what it accepts, its default, where it may be set and what it does.
The file is generated, never written by hand; a test keeps it equal to :func:`render`.

    python -m kplex.sqltools.options_doc > docs/options.md
"""
from __future__ import annotations

import json
from importlib import resources

#: Where each scope of ``set_as`` is written, as a user writes it.
SCOPES = {
    "table": "TBLPROPERTIES",
    "write": "write option",
    "read": "read option",
    "catalog": "`spark.sql.catalog.kplex.<name>`",
    "session": "session (`SET spark.<name>`)",
    "server": "server start-up (`--conf spark.<name>`)",
}


def _accepts(option: dict) -> str:
    if option["type"] == "choice":
        return " \\| ".join(f"`{c}`" for c in option["choices"])
    if "expected" in option:
        return option["expected"]
    if option["type"] in ("int", "long"):
        low = f">= {option['min']}" if "min" in option else "any"
        high = f", <= {option['max']}" if "max" in option else ""
        return f"an integer {low}{high}"
    return {"boolean": "`true` \\| `false`", "text": "text", "topic": "a topic name"}[option["type"]]


def _where(option: dict) -> str:
    where = [SCOPES[s] for s in option["set_as"]]
    if "session_key" in option:
        where = [w if not w.startswith("session") else f"session (`SET {option['session_key']}`)" for w in where]
    return ", ".join(where)


def render() -> str:
    """The Markdown of ``docs/options.md``."""
    options = json.loads(resources.files("kplex").joinpath("options.json").read_text())["options"]
    lines = [
        "# Every option",
        "",
        "Generated from [`python/kplex/options.json`](../python/kplex/options.json) by",
        "`python -m kplex.sqltools.options_doc > docs/options.md`; do not edit by hand.",
        "The JVM plugin and `kplex sql check` read the same file. Precedence: a write or read option,",
        "then the table property, then the catalog option, then the session setting, then the default.",
        "A read of a read-time table consults no session setting: its `kplex.max_delay_ms` and",
        "`kplex.late_policy` are stored with its definition when it is created (given, else as the",
        "catalog or the session sets them then, else the default), so that `kplex read` outside Spark",
        "reads it alike.",
        "",
        "Besides these, two kinds of option are not kplex's own settings: `table`, the kplex table that",
        "`spark.read`/`df.write.format(\"kplex\")` reads or writes, and any `kafka.*` setting, handed to",
        "Kafka's clients without its prefix as in Spark's Kafka connector (`kafka.bootstrap.servers` is",
        "required, as a catalog option or on the read or write; credentials:",
        "[secured-kafka.md](secured-kafka.md)). kplex reads one of them itself, listed below:",
        "`kafka.transaction.timeout.ms`.",
        "",
        "| option | what it does | accepts | default | set as |",
        "| --- | --- | --- | --- | --- |",
    ]
    for o in options:
        default = "(required)" if o.get("required") else f"`{o['default']}`" if "default" in o else "-"
        lines.append(f"| `{o['name']}` | {o['description']} | {_accepts(o)} | {default} | {_where(o)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
