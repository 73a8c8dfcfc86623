"""The table properties of the ``kplex`` catalog, as data, and their validation.

Every property a ``CREATE TABLE kplex.<name> TBLPROPERTIES (...)`` may carry is
one row of :data:`PROPERTIES`; :func:`validate` checks names and values.

>>> validate({"kplex.virtual_partitions": "9", "kplex.physical_partitions": "three"})
["'kplex.physical_partitions' must be an integer >= 1, got 'three'"]
>>> validate({"kplex.virtual_partition": "9", "kplex.physical_partitions": "3"})
["unknown table property 'kplex.virtual_partition'; did you mean 'kplex.virtual_partitions'?", "missing table property 'kplex.virtual_partitions' (required)"]
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Collection, Mapping

__all__ = [
    "PropertySpec",
    "PROPERTIES",
    "VIRTUAL_PARTITIONS",
    "PHYSICAL_PARTITIONS",
    "validate",
    "problem_of",
    "missing_required",
    "suggest",
    "parse_int",
]

VIRTUAL_PARTITIONS = "kplex.virtual_partitions"
PHYSICAL_PARTITIONS = "kplex.physical_partitions"
SOURCE = "kplex.source"


@dataclass(frozen=True)
class PropertySpec:
    """What one property accepts: an integer from ``minimum`` (``also`` allowed
    besides), one of ``choices``, or free text (neither)."""

    name: str
    minimum: int | None = None
    also: int | None = None
    choices: tuple[str, ...] = ()
    required: bool = False

    def problem(self, value: str) -> str | None:
        """Why ``value`` is wrong for this property, or None when it is right."""
        if self.minimum is not None:
            number = parse_int(value)
            if number is None or (number < self.minimum and number != self.also):
                extra = f" (or {self.also})" if self.also is not None else ""
                return f"'{self.name}' must be an integer >= {self.minimum}{extra}, got '{value}'"
        elif self.choices and value not in self.choices:
            options = ", ".join(f"'{c}'" for c in self.choices)
            return f"'{self.name}' must be one of {options}, got '{value}'"
        return None


PROPERTIES: dict[str, PropertySpec] = {
    spec.name: spec
    for spec in (
        PropertySpec(VIRTUAL_PARTITIONS, minimum=1, required=True),
        PropertySpec(PHYSICAL_PARTITIONS, minimum=1, required=True),
        PropertySpec("kplex.replication_factor", minimum=1, also=-1),
        PropertySpec("kplex.delivery", choices=("exactly_once", "at_least_once")),
        PropertySpec("kplex.key"),
        PropertySpec("kplex.order"),
        PropertySpec("kplex.null_key", choices=("fail", "drop")),
        PropertySpec("kplex.null_order", choices=("fail", "drop", "first")),
        PropertySpec("kplex.topic"),
        # Read-time virtual tables (a view of a source topic, nothing written).
        PropertySpec(SOURCE),
        PropertySpec("kplex.max_delay_ms", minimum=0),
        PropertySpec("kplex.late_policy", choices=("fail", "drop", "side_topic")),
        PropertySpec("kplex.late_topic"),
    )
}

#: Properties a derived topic (no ``kplex.source``) cannot do without.
REQUIRED = tuple(name for name, spec in PROPERTIES.items() if spec.required)


def parse_int(value: str) -> int | None:
    """The integer ``value`` spells in decimal, or None (``'9'`` → 9, ``'9.0'`` → None)."""
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    return int(text) if digits.isdigit() else None


def suggest(name: str) -> str | None:
    """The known property closest to a wrong ``name``, if any is close."""
    candidates = list(PROPERTIES) + [n.removeprefix("kplex.") for n in PROPERTIES]
    match = difflib.get_close_matches(name.lower(), candidates, n=1, cutoff=0.75)
    if not match:
        return None
    return match[0] if match[0].startswith("kplex.") else f"kplex.{match[0]}"


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a property of a kplex table, or None when it is one."""
    if name in PROPERTIES:
        return None
    guess = suggest(name)
    if guess:
        return f"unknown table property '{name}'; did you mean '{guess}'?"
    known = ", ".join(f"'{n}'" for n in PROPERTIES)
    return f"unknown table property '{name}' for a kplex table; known properties: {known}"


def validate(properties: Mapping[str, str], creating: bool = True) -> list[str]:
    """Every problem with a kplex table's properties, as messages (empty when fine).

    ``creating`` adds the required properties of a new derived topic; a
    read-time virtual table (one with ``kplex.source``) requires none.
    """
    problems = [p for p in (problem_of(n, v) for n, v in properties.items()) if p]
    return problems + (list(missing_required(properties).values()) if creating else [])


def problem_of(name: str, value: str) -> str | None:
    """Why the property ``name`` = ``value`` is wrong, or None when it is right."""
    spec = PROPERTIES.get(name)
    return spec.problem(value) if spec else name_problem(name)


def missing_required(names: Collection[str]) -> dict[str, str]:
    """The required properties a new derived topic lacks: name → message."""
    if SOURCE in names:
        return {}
    return {n: f"missing table property '{n}' (required)" for n in REQUIRED if n not in names}
