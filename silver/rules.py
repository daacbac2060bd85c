"""System-created rules and rule sets, compiled to Spark Columns.

A system-created rule (global, schema or table; DML or DDL) is kept as structured
data, shown to the user with the condition text Oracle's DBMS_STREAMS_ADM generates,
and compiled to a Spark Column over the change-record columns. Rule sets follow
Table 5-1 of the rules reference: no rule set differs from an empty one, and the
negative set is evaluated first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakestreams.config import ClientSpec, RuleSpec
from lakestreams.errors import RuleError

CONTROL_COMMANDS = ("COMMIT", "ROLLBACK")


def _q(value: str) -> str:
    """An Oracle string literal (names are validated identifiers; quote doubling is belt and braces)."""
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class Rule:
    """One system-created rule: what it matches, its name and its Oracle condition."""

    name: str
    kind: str  # DML | DDL
    spec: RuleSpec

    @property
    def condition(self) -> str:
        """The rule condition as DBMS_STREAMS_ADM would print it."""
        s, v = self.spec, ":dml" if self.kind == "DML" else ":ddl"
        parts: list[str] = []
        if s.level == "SCHEMA":
            if self.kind == "DML":
                parts.append(f"({v}.get_object_owner() = {_q(s.owner)})")
            else:
                parts.append(
                    f"({v}.get_object_owner() = {_q(s.owner)} or {v}.get_base_table_owner() = {_q(s.owner)})"
                )
        elif s.level == "TABLE":
            obj = f"({v}.get_object_owner() = {_q(s.owner)} and {v}.get_object_name() = {_q(s.table)})"
            if self.kind == "DML":
                parts.append(f"({obj})")
            else:
                base = f"({v}.get_base_table_owner() = {_q(s.owner)} and {v}.get_base_table_name() = {_q(s.table)})"
                parts.append(f"({obj} or {base})")
        if not s.include_tagged_lcr:
            parts.append(f"{v}.is_null_tag() = 'Y'")
        if s.source_database:
            parts.append(f"{v}.get_source_database_name() = {_q(s.source_database)}")
        if not parts:
            return (
                f"(( {v}.get_source_database_name()>=' ' OR {v}.get_source_database_name()<=' ') )"
            )
        return "(" + " and ".join(parts) + " )"

    def column(self) -> Column:
        """The condition compiled to a Spark boolean Column (NULL counts as FALSE)."""
        s = self.spec
        is_ddl = F.col("ddl_text").isNotNull()
        is_control = F.col("command_type").isin(*CONTROL_COMMANDS) & ~is_ddl
        conds = [is_ddl if self.kind == "DDL" else (~is_ddl & ~is_control)]
        owner_is = F.col("object_owner") == F.lit(s.owner)
        if s.level == "SCHEMA":
            conds.append(owner_is | (F.col("base_table_owner") == F.lit(s.owner)) if self.kind == "DDL" else owner_is)
        elif s.level == "TABLE":
            obj = owner_is & (F.col("object_name") == F.lit(s.table))
            if self.kind == "DDL":
                obj = obj | (
                    (F.col("base_table_owner") == F.lit(s.owner)) & (F.col("base_table_name") == F.lit(s.table))
                )
            conds.append(obj)
        if not s.include_tagged_lcr:
            conds.append(F.col("tag").isNull())
        if s.source_database:
            conds.append(F.col("source_database") == F.lit(s.source_database))
        else:
            conds.append(F.col("source_database").isNotNull())
        return F.coalesce(reduce(lambda a, b: a & b, conds), F.lit(False))


@dataclass(frozen=True)
class RuleSet:
    name: str
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class Client:
    """A rules-engine client with its (possibly absent, possibly empty) rule sets."""

    streams_type: str
    name: str
    positive: RuleSet | None = None
    negative: RuleSet | None = None

    def discard_reason(self) -> Column:
        """NULL when the client performs its task for a record, else why it discards it.

        Table 5-1: an empty positive set discards everything; otherwise a TRUE negative
        rule discards; otherwise, with a positive set, some positive rule must be TRUE.
        """
        who = f"{self.streams_type} {self.name}"
        if self.positive is not None and not self.positive.rules:
            return F.lit(f"{who}: positive rule set {self.positive.name} is empty")
        out: Column = F.lit(None).cast("string")
        if self.positive is not None:
            any_pos = reduce(lambda a, b: a | b, (r.column() for r in self.positive.rules))
            out = F.when(
                ~any_pos,
                F.lit(f"{who}: no rule of positive rule set {self.positive.name} is TRUE"),
            ).otherwise(out)
        if self.negative is not None:
            for r in reversed(self.negative.rules):
                out = F.when(
                    r.column(), F.lit(f"{who}: negative rule {r.name} of {self.negative.name} is TRUE")
                ).otherwise(out)
        return out


@dataclass
class _Names:
    used: set[str] = field(default_factory=set)

    def next(self, base: str) -> str:
        n = 1
        while f"{base}{n}" in self.used:
            n += 1
        name = f"{base}{n}"
        self.used.add(name)
        return name


def build_client(spec: ClientSpec) -> Client:
    """Rules from a client spec, named as DBMS_STREAMS_ADM names them (object name + number)."""
    names = _Names()
    pos: list[Rule] = []
    neg: list[Rule] = []
    for rs in spec.rules:
        if not (rs.include_dml or rs.include_ddl):
            continue
        base = rs.table or rs.owner or spec.name.upper()
        for kind, wanted in (("DML", rs.include_dml), ("DDL", rs.include_ddl)):
            if wanted:
                (pos if rs.inclusion_rule else neg).append(Rule(names.next(base), kind, rs))
    positive = negative = None
    if pos or spec.positive_rule_set:
        positive = RuleSet(spec.positive_rule_set or f"{spec.name.upper()}_RULESET", tuple(pos))
    if neg or spec.negative_rule_set:
        negative = RuleSet(spec.negative_rule_set or f"{spec.name.upper()}_NEGATIVE_RULESET", tuple(neg))
    if positive and negative and positive.name == negative.name:
        raise RuleError(
            f"{spec.streams_type} {spec.name}: rule set {positive.name} cannot be both positive and negative"
        )
    return Client(spec.streams_type, spec.name, positive, negative)


def discard_reason(clients: list[Client]) -> Column:
    """Capture first, then apply: the first client that discards names the reason."""
    out: Column = F.lit(None).cast("string")
    for c in reversed(clients):
        out = F.coalesce(c.discard_reason(), out)
    return out
