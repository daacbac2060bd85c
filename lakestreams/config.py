"""Typed channel configuration, loaded from YAML and validated on load.

A channel file says where change records land, how their transactions are known
to be complete, which rules the capture and apply clients use, and where every
table lives. Every error names the key, the bad value and what is accepted.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lakestreams.errors import ConfigError, ReplicationError

#: Unquoted Oracle/Spark identifier we accept for owners, tables, columns and names.
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_$#]{0,127}")  # always used with fullmatch
#: What IDENTIFIER takes, in words, for the messages that refuse a name.
IDENTIFIER_RULE = "a letter, then letters, digits, _, $ or #; at most 128 characters"
#: Global database name: dot-separated identifiers (DBS1.EXAMPLE.COM).
GLOBAL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*(\.[A-Za-z][A-Za-z0-9_$#]*)*")  # with fullmatch
#: The same for Java regexes (``rlike``), where ``$`` would also match before a final newline.
GLOBAL_NAME_JAVA = "^" + GLOBAL_NAME.pattern + "\\z"

LANDING_FORMATS = ("native", "debezium", "goldengate")
TRANSACTION_MODES = ("commit_records", "whole_file")
NUMBER_POLICIES = ("decimal", "double", "string")
CLIENT_TYPES = ("capture", "apply")


def check_identifier(value: Any, where: str) -> str:
    """Return ``value`` if it is a plain identifier, else raise ConfigError naming ``where``."""
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
        raise ConfigError(
            f"{where}: {value!r} is not a valid identifier ({IDENTIFIER_RULE})"
        )
    return value


def check_global_name(value: Any, where: str) -> str:
    """Upper-case a global database name after checking its form."""
    if not isinstance(value, str) or not GLOBAL_NAME.fullmatch(value):
        raise ConfigError(
            f"{where}: {value!r} is not a global database name (e.g. DBS1.EXAMPLE.COM)"
        )
    return value.upper()


def split_table_name(value: Any, where: str) -> tuple[str, str]:
    """``'hr.regions'`` → ``('HR', 'REGIONS')``; both parts must be identifiers."""
    if not isinstance(value, str) or value.count(".") != 1:
        raise ConfigError(f"{where}: {value!r} is not an owner.table name (e.g. hr.regions)")
    owner, table = value.split(".")
    return (
        check_identifier(owner, where).upper(),
        check_identifier(table, where).upper(),
    )


def _take(data: Any, where: str, allowed: dict[str, Any]) -> dict[str, Any]:
    """Check a mapping's keys against ``allowed`` (key → default) and fill defaults."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; accepted keys: {', '.join(sorted(allowed))}"
        )
    out = dict(allowed)
    out.update(data)
    missing = [k for k, v in out.items() if v is _REQUIRED]
    if missing:
        raise ConfigError(f"{where}: missing required key {missing[0]!r}")
    return out


_REQUIRED = object()


def _choice(value: Any, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(choices)}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {value!r} is not true or false")
    return value


@dataclass(frozen=True)
class Storage:
    """Where tables, checkpoints and dbt's working copy live."""

    warehouse: Path
    state: Path
    catalog: str | None = None
    schema: str = "lakestreams"

    def schema_name(self, layer: str) -> str:
        """The schema (database) of a layer, e.g. ``lakestreams_silver``."""
        return f"{self.schema}_{layer}"

    def table(self, layer: str, name: str) -> str:
        """Quoted table name, two-part locally, three-part with a catalog.

        Every part is an identifier checked on load (catalog, schema) or a name of our own
        making from dictionary names that passed ``SAFE_NAME``: no backtick can occur.
        """
        parts = [self.catalog] if self.catalog else []
        parts += [self.schema_name(layer), name]
        return ".".join(f"`{p}`" for p in parts)


@dataclass(frozen=True)
class Landing:
    """One landing folder: its format and how transaction completeness is known. In a
    ``snapshot`` folder every transaction is a snapshot: the rows (INSERT records) of its
    tables as of its commit SCN, which replace the target and instantiate it there."""

    name: str
    path: Path
    format: str = "native"
    transactions: str = "commit_records"
    snapshot: bool = False
    #: The source's global name, for formats whose records do not carry it (Debezium, GoldenGate).
    source_database: str | None = None


@dataclass(frozen=True)
class RuleSpec:
    """A rule request: what DBMS_STREAMS_ADM.ADD_*_RULES takes, or a raw rule condition.

    ``level`` is GLOBAL, SCHEMA or TABLE (system-created, optionally with an
    ``and_condition`` over ``:lcr``), SUBSET (``ADD_SUBSET_RULES``: three DML rules from
    ``dml_condition``) or CONDITION (a rule condition in Oracle syntax, verbatim).
    """

    level: str
    owner: str | None = None
    table: str | None = None
    include_dml: bool = True
    include_ddl: bool = False
    include_tagged_lcr: bool = False
    source_database: str | None = None
    inclusion_rule: bool = True
    and_condition: str | None = None
    dml_condition: str | None = None
    condition: str | None = None
    rule_name: str | None = None


#: Declarative rule-based transformations, in the order they run within one step number.
TRANSFORM_KINDS = ("delete_column", "rename_column", "add_column", "rename_table", "rename_schema")
VALUE_TYPES = ("NEW", "OLD", "*")


@dataclass(frozen=True)
class TransformSpec:
    """A rule-based transformation attached to a rule of the client's positive rule set.

    Declarative kinds follow DBMS_STREAMS_ADM (RENAME_SCHEMA, RENAME_TABLE, ADD_COLUMN,
    RENAME_COLUMN, DELETE_COLUMN); ``custom`` names a transformation registered in Python
    (``lakestreams.transforms.register``). Lower ``step_number`` runs first; within a step,
    declarative kinds run in ``TRANSFORM_KINDS`` order and custom ones last.
    """

    rule: str
    kind: str
    owner: str | None = None
    table: str | None = None
    column: str | None = None
    to_owner: str | None = None
    to_table: str | None = None
    to_column: str | None = None
    column_type: str | None = None
    value: Any = None
    expression: str | None = None
    value_type: str = "*"
    function: str | None = None
    step_number: int = 0


@dataclass(frozen=True)
class ClientSpec:
    """A rules-engine client (capture or apply) and its rule sets."""

    streams_type: str
    name: str
    positive_rule_set: str | None = None
    negative_rule_set: str | None = None
    rules: tuple[RuleSpec, ...] = ()
    transformations: tuple[TransformSpec, ...] = ()


@dataclass(frozen=True)
class InstantiationSpec:
    """An instantiation SCN for a table, a schema (``table`` None) or a whole source
    database (``owner`` and ``table`` None), and for a table optionally its ignore SCN:
    the floor below which its changes cannot be applied (set by an export/import)."""

    source_database: str
    owner: str | None
    table: str | None
    scn: int | None
    ignore_scn: int | None = None

    @property
    def level(self) -> str:
        return "GLOBAL" if self.owner is None else "SCHEMA" if self.table is None else "TABLE"

    @property
    def key(self) -> tuple[str, str, str | None, str | None]:
        return (self.source_database, self.level, self.owner, self.table)

    def describe(self) -> str:
        what = {"GLOBAL": "every table", "SCHEMA": f"schema {self.owner}", "TABLE": f"{self.owner}.{self.table}"}
        return f"{what[self.level]} from {self.source_database}"


def check_scn(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{where}: {value!r} is not a non-negative integer SCN")
    return value


def check_instantiation(
    specs: Sequence[InstantiationSpec], wheres: Sequence[str] | None = None
) -> tuple[InstantiationSpec, ...]:
    """One setting per object and level; no table's instantiation SCN, from whichever level
    is most specific, below its ignore SCN (those changes cannot be applied). ``wheres``
    names each setting's place in the channel file, for the error."""
    seen: dict = {}
    for n, s in enumerate(specs):
        if s.key in seen:
            where = wheres[n] if wheres else "instantiation"
            raise ConfigError(f"{where}: {s.describe()} is given an instantiation SCN twice")
        seen[s.key] = s
    for s in specs:
        if s.ignore_scn is None:
            continue
        for level, owner, table in (("TABLE", s.owner, s.table), ("SCHEMA", s.owner, None), ("GLOBAL", None, None)):
            chosen = seen.get((s.source_database, level, owner, table))
            if chosen is not None and chosen.scn is not None:
                if chosen.scn < s.ignore_scn:
                    raise ConfigError(
                        f"instantiation: the instantiation SCN {chosen.scn} of {chosen.describe()} is below the "
                        f"ignore SCN {s.ignore_scn} of {s.owner}.{s.table}: changes below the ignore SCN cannot be "
                        "applied (set the instantiation SCN at or above it)"
                    )
                break
    return tuple(specs)


@dataclass(frozen=True)
class TableSpec:
    """A source table defined in the channel file rather than by a CREATE TABLE record."""

    source_database: str
    ddl: str


@dataclass(frozen=True)
class KeySpec:
    """A substitute key of a target table (SET_KEY_COLUMNS): used instead of the primary
    key to find rows; its columns may hold NULLs, so rows are matched null-safe."""

    owner: str
    table: str
    columns: tuple[str, ...]


def check_key_columns(value: Any, where: str) -> tuple[str, ...]:
    """``['a', 'b']`` or ``'a, b'`` → ``('A', 'B')``: identifiers, at least one, no repeats."""
    items = [p.strip() for p in value.split(",")] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        raise ConfigError(f"{where}: expected a list of column names (or one comma-separated string)")
    cols = tuple(check_identifier(c, where).upper() for c in items)
    if len(set(cols)) != len(cols):
        raise ConfigError(f"{where}: a column appears twice in {', '.join(cols)}")
    return cols


CONFLICT_METHODS = ("OVERWRITE", "DISCARD", "MAXIMUM", "MINIMUM")
COMPARE_OPERATIONS = ("UPDATE", "DELETE", "*")


@dataclass(frozen=True)
class ConflictHandlerSpec:
    """A prebuilt update conflict handler (SET_UPDATE_CONFLICT_HANDLER) of a target table:
    when the old values of an UPDATE differ from the row in a column of ``columns``,
    OVERWRITE applies the record's values of the list, DISCARD keeps the row's, MAXIMUM
    (MINIMUM) applies them only if the record's value of ``resolution_column`` is greater
    (smaller) than the row's."""

    owner: str
    table: str
    method: str
    resolution_column: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class CompareSpec:
    """COMPARE_OLD_VALUES: whether old values of non-key ``columns`` (``('*',)``: all of
    them) are compared with the row for ``operation`` (UPDATE, DELETE or *). Later
    settings win over earlier ones for the same column and operation."""

    owner: str
    table: str
    columns: tuple[str, ...]
    operation: str
    compare: bool


def check_conflict_handlers(handlers: Sequence[ConflictHandlerSpec], wheres: Sequence[str]) -> tuple[ConflictHandlerSpec, ...]:
    """A column is in at most one column list of a table; each handler's resolution column
    is in its list."""
    seen: dict[tuple[str, str, str], str] = {}
    for h, where in zip(handlers, wheres, strict=True):
        if h.method not in CONFLICT_METHODS:
            raise ConfigError(f"{where}.method: {h.method!r} is not one of {', '.join(CONFLICT_METHODS)}")
        if h.resolution_column not in h.columns:
            raise ConfigError(
                f"{where}.resolution_column: {h.resolution_column} is not in the column list ({', '.join(h.columns)})"
            )
        for c in h.columns:
            other = seen.get((h.owner, h.table, c))
            if other is not None:
                raise ConfigError(
                    f"{where}: column {c} of {h.owner}.{h.table} already has an update conflict handler ({other})"
                )
            seen[(h.owner, h.table, c)] = where
    return tuple(handlers)


def conflict_handler(data: dict[str, Any], where: str) -> ConflictHandlerSpec:
    """One handler from ``{table, method, columns, resolution_column}`` (YAML or API)."""
    d = _take(data, where, {"table": _REQUIRED, "method": _REQUIRED, "columns": _REQUIRED, "resolution_column": None})
    owner, table = split_table_name(d["table"], f"{where}.table")
    method = str(d["method"]).upper()
    _choice(method, f"{where}.method", CONFLICT_METHODS)
    columns = check_key_columns(d["columns"], f"{where}.columns")
    res = d["resolution_column"]
    if res is None and method in ("MAXIMUM", "MINIMUM"):
        raise ConfigError(f"{where}.resolution_column: {method} compares a resolution column; name one of {', '.join(columns)}")
    resolution = columns[0] if res is None else check_identifier(res, f"{where}.resolution_column").upper()
    return ConflictHandlerSpec(owner, table, method, resolution, columns)


def compare_setting(data: dict[str, Any], where: str) -> CompareSpec:
    """One COMPARE_OLD_VALUES setting from ``{table, columns, operation, compare}``."""
    d = _take(data, where, {"table": _REQUIRED, "columns": _REQUIRED, "operation": "UPDATE", "compare": False})
    owner, table = split_table_name(d["table"], f"{where}.table")
    cols = d["columns"]
    columns = ("*",) if cols == "*" or cols == ["*"] else check_key_columns(cols, f"{where}.columns")
    operation = _choice(str(d["operation"]).upper(), f"{where}.operation", COMPARE_OPERATIONS)
    return CompareSpec(owner, table, columns, operation, _bool(d["compare"], f"{where}.compare"))


HISTORY_KINDS = ("scd2", "timekey")


@dataclass(frozen=True)
class TargetSpec:
    """What a target table keeps besides its replica: a history (``scd2``: one version per
    transaction with valid-from/valid-to SCNs; ``timekey``: an append-only log of every
    applied change with its operation and SCN, as HVR's TimeKey) and whether a DELETE
    only marks the replica's row (``soft_delete``: ``_is_deleted`` true)."""

    owner: str
    table: str
    history: str | None = None
    soft_delete: bool = False


def target_spec(item: Any, where: str) -> TargetSpec:
    d = _take(item, where, {"table": _REQUIRED, "history": None, "soft_delete": False})
    owner, table = split_table_name(d["table"], f"{where}.table")
    history = None if d["history"] is None else _choice(d["history"], f"{where}.history", HISTORY_KINDS)
    soft = _bool(d["soft_delete"], f"{where}.soft_delete")
    if history is None and not soft:
        raise ConfigError(f"{where}: give history ({', '.join(HISTORY_KINDS)}) or soft_delete: true")
    return TargetSpec(owner, table, history, soft)


def check_targets(specs: Sequence[TargetSpec], wheres: Sequence[str]) -> tuple[TargetSpec, ...]:
    seen = set()
    for s, where in zip(specs, wheres, strict=True):
        if (s.owner, s.table) in seen:
            raise ConfigError(f"{where}: {s.owner}.{s.table} is given target options twice")
        seen.add((s.owner, s.table))
    return tuple(specs)


#: Operations a DML handler is set for (LOB_UPDATE records are UPDATEs of LOB columns).
HANDLER_OPERATIONS = ("INSERT", "UPDATE", "DELETE", "LOB_UPDATE")


#: Operations a SQL handler may turn a change into.
SQL_HANDLER_COMMANDS = ("INSERT", "UPDATE", "DELETE")


@dataclass(frozen=True)
class HandlerSql:
    """A handler written as SQL expressions in the rule-condition language (``:dml``),
    applied set-wise to the changes it gets:

    - ``consume_when``: a condition; a change it holds for is consumed (nothing applied);
    - ``raise_when``: a condition; a change it holds for fails its transaction (as a
      handler raising an exception does);
    - ``command_type``: the change is applied as this operation;
    - ``set``: new values, column → value expression over the change.
    """

    consume_when: str | None = None
    raise_when: str | None = None
    command_type: str | None = None
    set: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DmlHandlerSpec:
    """A DML or error handler (DBMS_APPLY_ADM.SET_DML_HANDLER, ``error_handler`` TRUE or
    FALSE) of a target table and operation: a function registered with
    ``silver.handlers.register_dml_handler`` (``handler``) or SQL expressions (``sql``).
    A DML handler gets every change of the operation; an error handler only those that
    failed (a value that does not convert, a conflict no update conflict handler
    resolved, a missing row, a taken key), with the error."""

    owner: str
    table: str
    operation: str
    handler: str | None = None
    error_handler: bool = False
    sql: HandlerSql | None = None

    @property
    def kind(self) -> str:
        return "error handler" if self.error_handler else "DML handler"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.handler or 'SQL'} of {self.owner}.{self.table} {self.operation}"


def handler_sql(item: Any, where: str) -> HandlerSql:
    d = _take(item, where, {"consume_when": None, "raise_when": None, "command_type": None, "set": {}})
    for key in ("consume_when", "raise_when"):
        if d[key] is not None and not isinstance(d[key], str):
            raise ConfigError(f"{where}.{key}: expected a condition (text)")
    cmd = d["command_type"].upper() if isinstance(d["command_type"], str) else d["command_type"]
    if cmd is not None:
        _choice(cmd, f"{where}.command_type", SQL_HANDLER_COMMANDS)
    if not isinstance(d["set"], dict) or not all(isinstance(v, str) for v in d["set"].values()):
        raise ConfigError(f"{where}.set: expected a mapping column -> value expression (text)")
    cols = [check_identifier(c, f"{where}.set").upper() for c in d["set"]]
    if len(set(cols)) != len(cols):
        raise ConfigError(f"{where}.set: a column is set twice")
    sql = HandlerSql(d["consume_when"], d["raise_when"], cmd, tuple(zip(cols, d["set"].values(), strict=True)))
    if sql == HandlerSql():
        raise ConfigError(f"{where}: a SQL handler needs consume_when, raise_when, command_type or set")
    return sql


def dml_handler_spec(item: Any, where: str) -> DmlHandlerSpec:
    d = _take(item, where, {"table": _REQUIRED, "operation": _REQUIRED, "handler": None, "sql": None,
                            "error_handler": False})
    owner, table = split_table_name(d["table"], f"{where}.table")
    op = d["operation"].upper() if isinstance(d["operation"], str) else d["operation"]
    if (d["handler"] is None) == (d["sql"] is None):
        raise ConfigError(f"{where}: give either handler (a registered function) or sql (expressions)")
    return DmlHandlerSpec(
        owner, table, _choice(op, f"{where}.operation", HANDLER_OPERATIONS),
        None if d["handler"] is None else check_identifier(d["handler"], f"{where}.handler"),
        _bool(d["error_handler"], f"{where}.error_handler"),
        None if d["sql"] is None else handler_sql(d["sql"], f"{where}.sql"),
    )


def check_dml_handlers(specs: Sequence[DmlHandlerSpec], wheres: Sequence[str]) -> tuple[DmlHandlerSpec, ...]:
    """One handler per table and operation: a DML handler and an error handler for the
    same operation cannot both be set."""
    seen: dict[tuple[str, str, str], DmlHandlerSpec] = {}
    for s, where in zip(specs, wheres, strict=True):
        other = seen.get((s.owner, s.table, s.operation))
        if other is not None:
            raise ConfigError(f"{where}: {s.owner}.{s.table} has a{'n' if other.error_handler else ''} "
                              f"{other.kind} for {s.operation} already")
        seen[(s.owner, s.table, s.operation)] = s
    return tuple(specs)


@dataclass(frozen=True)
class TypePolicy:
    """How Oracle types without a stated precision map to Spark."""

    number_without_precision: str = "decimal"


@dataclass(frozen=True)
class Channel:
    """A whole channel: the declarative side of the Python API in ``lakestreams.api``."""

    name: str
    storage: Storage
    landing: tuple[Landing, ...]
    clients: tuple[ClientSpec, ...] = ()
    instantiation: tuple[InstantiationSpec, ...] = ()
    keys: tuple[KeySpec, ...] = ()
    conflict_handlers: tuple[ConflictHandlerSpec, ...] = ()
    compare_old_values: tuple[CompareSpec, ...] = ()
    targets: tuple[TargetSpec, ...] = ()
    dml_handlers: tuple[DmlHandlerSpec, ...] = ()
    types: TypePolicy = field(default_factory=TypePolicy)
    tables: tuple[TableSpec, ...] = ()
    transformation_modules: tuple[str, ...] = ()
    #: AdaptDDL actions (``silver.adaptddl.AdaptDdl``). None: one action with HVR's defaults,
    #: so every replicated target follows its source's DDL; ``()``: targets never follow
    #: (the source dictionary always does).
    adapt_ddl: tuple | None = None
    #: GoldenGate DDL processing (``silver.goldengate.GgDdlConfig``): scope, MAP, DDL
    #: INCLUDE/EXCLUDE, DDLSUBST, DDLERROR. None: every DDL record is read as captured.
    ddl_processing: Any = None
    source_path: Path | None = None
    #: Gold tables with Delta column mapping and type widening (renames, drops and widening
    #: in place). False (``gold: {column_mapping: false}``): gold stays on the basic Delta
    #: protocol (reader 1, writer 2) for other readers; such changes rewrite the table.
    gold_column_mapping: bool = True

    def adapt_actions(self) -> tuple:
        from silver.adaptddl import AdaptDdl

        return (AdaptDdl(),) if self.adapt_ddl is None else self.adapt_ddl

    def target_options(self, owner: str, table: str) -> TargetSpec:
        """The options of a target table (none: a replica only)."""
        for t in self.targets:
            if (t.owner, t.table) == (owner, table):
                return t
        return TargetSpec(owner, table)

    def client(self, streams_type: str) -> ClientSpec | None:
        for c in self.clients:
            if c.streams_type == streams_type:
                return c
        return None

    def replace(self, **changes: Any) -> Channel:
        return dataclasses.replace(self, **changes)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: expected non-empty condition text")
    return value


def _rule(data: Any, where: str) -> RuleSpec:
    d = _take(
        data,
        where,
        {
            "global": False,
            "schema": None,
            "table": None,
            "subset": None,
            "condition": None,
            "name": None,
            "and_condition": None,
            "include_dml": True,
            "include_ddl": False,
            "include_tagged_lcr": False,
            "source_database": None,
            "inclusion_rule": True,
        },
    )
    inclusion = _bool(d["inclusion_rule"], f"{where}.inclusion_rule")
    if d["condition"] is not None:
        others = [k for k in ("global", "schema", "table", "subset", "and_condition", "source_database")
                  if d[k] not in (None, False)]
        if others:
            raise ConfigError(f"{where}: a raw rule has only condition, name and inclusion_rule; remove {others[0]!r}")
        name = d["name"]
        return RuleSpec(
            level="CONDITION",
            condition=_text(d["condition"], f"{where}.condition"),
            rule_name=None if name is None else check_identifier(name, f"{where}.name").upper(),
            inclusion_rule=inclusion,
        )
    if d["name"] is not None:
        raise ConfigError(f"{where}.name: only raw rules (condition:) are named by hand; system-created rules are named for you")
    levels = [k for k in ("global", "schema", "table") if d[k] not in (None, False)]
    if len(levels) != 1:
        raise ConfigError(
            f"{where}: give exactly one of global: true, schema: NAME, table: OWNER.NAME, or condition: TEXT"
        )
    owner = table = None
    if levels[0] == "schema":
        owner = check_identifier(d["schema"], f"{where}.schema").upper()
    elif levels[0] == "table":
        owner, table = split_table_name(d["table"], f"{where}.table")
    elif d["global"] is not True:
        raise ConfigError(f"{where}.global: {d['global']!r} is not true")
    src = d["source_database"]
    level = levels[0].upper()
    dml_condition = None
    if d["subset"] is not None:
        if level != "TABLE":
            raise ConfigError(f"{where}.subset: subset rules are for one table; give table: OWNER.NAME")
        if not inclusion:
            raise ConfigError(
                f"{where}.subset: subset rules go in the positive rule set only (inclusion_rule: true); "
                "row migration is not performed on discarded records"
            )
        if d["and_condition"] is not None or d["include_ddl"] is True:
            raise ConfigError(f"{where}: subset rules take neither and_condition nor include_ddl")
        level, dml_condition = "SUBSET", _text(d["subset"], f"{where}.subset")
    return RuleSpec(
        level=level,
        owner=owner,
        table=table,
        include_dml=True if level == "SUBSET" else _bool(d["include_dml"], f"{where}.include_dml"),
        include_ddl=False if level == "SUBSET" else _bool(d["include_ddl"], f"{where}.include_ddl"),
        include_tagged_lcr=_bool(d["include_tagged_lcr"], f"{where}.include_tagged_lcr"),
        source_database=None if src is None else check_global_name(src, f"{where}.source_database"),
        inclusion_rule=inclusion,
        and_condition=None if d["and_condition"] is None else _text(d["and_condition"], f"{where}.and_condition"),
        dml_condition=dml_condition,
    )


_TRANSFORM_KEYS: dict[str, dict[str, Any]] = {
    "rename_schema": {"from": _REQUIRED, "to": _REQUIRED},
    "rename_table": {"from": _REQUIRED, "to": _REQUIRED},
    "add_column": {"table": _REQUIRED, "column": _REQUIRED, "type": _REQUIRED, "value": None,
                   "expression": None, "value_type": "NEW"},
    "rename_column": {"table": _REQUIRED, "from": _REQUIRED, "to": _REQUIRED, "value_type": "*"},
    "delete_column": {"table": _REQUIRED, "column": _REQUIRED, "value_type": "*"},
}


def _transformation(data: Any, where: str) -> TransformSpec:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping")
    kinds = [k for k in (*_TRANSFORM_KEYS, "custom") if k in data]
    if len(kinds) != 1:
        raise ConfigError(f"{where}: give exactly one of {', '.join((*_TRANSFORM_KEYS, 'custom'))}")
    kind = kinds[0]
    d = _take(data, where, {"rule": _REQUIRED, kind: _REQUIRED, "step_number": 0})
    rule = check_identifier(d["rule"], f"{where}.rule").upper()
    step_number = d["step_number"]
    if not isinstance(step_number, int) or isinstance(step_number, bool) or step_number < 0:
        raise ConfigError(f"{where}.step_number: {step_number!r} is not a non-negative integer")
    w = f"{where}.{kind}"
    if kind == "custom":
        return TransformSpec(rule, "custom", function=check_identifier(d[kind], w), step_number=step_number)
    a = _take(d[kind], w, _TRANSFORM_KEYS[kind])
    if kind == "rename_schema":
        return TransformSpec(rule, kind, owner=check_identifier(a["from"], f"{w}.from").upper(),
                             to_owner=check_identifier(a["to"], f"{w}.to").upper(), step_number=step_number)
    if kind == "rename_table":
        owner, table = split_table_name(a["from"], f"{w}.from")
        to_owner, to_table = split_table_name(a["to"], f"{w}.to")
        return TransformSpec(rule, kind, owner=owner, table=table, to_owner=to_owner, to_table=to_table,
                             step_number=step_number)
    owner, table = split_table_name(a["table"], f"{w}.table")
    value_type = _choice(str(a["value_type"]).upper(), f"{w}.value_type", VALUE_TYPES)
    if kind == "rename_column":
        return TransformSpec(rule, kind, owner=owner, table=table,
                             column=check_identifier(a["from"], f"{w}.from").upper(),
                             to_column=check_identifier(a["to"], f"{w}.to").upper(),
                             value_type=value_type, step_number=step_number)
    if kind == "delete_column":
        return TransformSpec(rule, kind, owner=owner, table=table,
                             column=check_identifier(a["column"], f"{w}.column").upper(),
                             value_type=value_type, step_number=step_number)
    if a["value"] is not None and a["expression"] is not None:
        raise ConfigError(f"{w}: give value or expression, not both")
    if not isinstance(a["type"], str):
        raise ConfigError(f"{w}.type: expected an Oracle type such as VARCHAR2(30) or NUMBER(10)")
    value = a["value"]
    if value is not None and not isinstance(value, (str, int, float, bool)):
        raise ConfigError(f"{w}.value: {value!r} is not a string, number or boolean")
    return TransformSpec(rule, kind, owner=owner, table=table,
                         column=check_identifier(a["column"], f"{w}.column").upper(),
                         column_type=a["type"], value=value,
                         expression=None if a["expression"] is None else _text(a["expression"], f"{w}.expression"),
                         value_type=value_type, step_number=step_number)


def _client(streams_type: str, data: Any, where: str) -> ClientSpec:
    d = _take(
        data,
        where,
        {"name": streams_type, "positive_rule_set": None, "negative_rule_set": None, "rules": [],
         "transformations": []},
    )
    if not isinstance(d["rules"], list):
        raise ConfigError(f"{where}.rules: expected a list of rules")
    if not isinstance(d["transformations"], list):
        raise ConfigError(f"{where}.transformations: expected a list of transformations")
    for key in ("positive_rule_set", "negative_rule_set"):
        if d[key] is not None:
            check_identifier(d[key], f"{where}.{key}")
    return ClientSpec(
        streams_type=streams_type,
        name=check_identifier(d["name"], f"{where}.name"),
        positive_rule_set=None if d["positive_rule_set"] is None else d["positive_rule_set"].upper(),
        negative_rule_set=None if d["negative_rule_set"] is None else d["negative_rule_set"].upper(),
        rules=tuple(_rule(r, f"{where}.rules[{i}]") for i, r in enumerate(d["rules"])),
        transformations=tuple(
            _transformation(t, f"{where}.transformations[{i}]") for i, t in enumerate(d["transformations"])
        ),
    )


def channel_from_dict(data: Any, base_dir: Path, source_path: Path | None = None) -> Channel:
    """Build and validate a Channel from parsed YAML; relative paths are from ``base_dir``."""
    d = _take(
        data,
        "channel",
        {
            "name": _REQUIRED,
            "storage": {},
            "landing": _REQUIRED,
            "capture": None,
            "apply": None,
            "instantiation": [],
            "types": {},
            "tables": [],
            "keys": [],
            "update_conflict_handlers": [],
            "compare_old_values": [],
            "targets": [],
            "dml_handlers": [],
            "transformation_modules": [],
            "adapt_ddl": None,
            "ddl_processing": None,
            "gold": {},
        },
    )
    name = check_identifier(d["name"], "channel.name")
    s = _take(
        d["storage"],
        "storage",
        {"warehouse": ".lakestreams/warehouse", "state": ".lakestreams/state", "catalog": None, "schema": "lakestreams"},
    )
    catalog = s["catalog"]
    if catalog is not None:
        check_identifier(catalog, "storage.catalog")
    storage = Storage(
        warehouse=(base_dir / str(s["warehouse"])).resolve(),
        state=(base_dir / str(s["state"])).resolve(),
        catalog=catalog,
        schema=check_identifier(s["schema"], "storage.schema"),
    )
    if not isinstance(d["landing"], list) or not d["landing"]:
        raise ConfigError("landing: expected a non-empty list of landing folders")
    landings = []
    for i, item in enumerate(d["landing"]):
        where = f"landing[{i}]"
        ld = _take(item, where, {"name": _REQUIRED, "path": _REQUIRED, "format": "native", "transactions": None,
                                     "snapshot": False, "source_database": None})
        if not isinstance(ld["snapshot"], bool):
            raise ConfigError(f"{where}.snapshot: expected true or false, found {ld['snapshot']!r}")
        fmt = _choice(ld["format"], f"{where}.format", LANDING_FORMATS)
        # Debezium completes a transaction by its END event; GoldenGate JSON has no commit
        # record, so its transactions must lie whole in one file. Native folders choose.
        default = "whole_file" if fmt == "goldengate" else "commit_records"
        txn = _choice(ld["transactions"] or default, f"{where}.transactions", TRANSACTION_MODES)
        if fmt != "native" and txn != default:
            raise ConfigError(f"{where}.transactions: a {fmt} landing folder is {default} (found {txn!r})")
        sdb = ld["source_database"]
        if fmt == "native" and sdb is not None:
            raise ConfigError(f"{where}.source_database: native records name their source database; "
                              "this option is for debezium and goldengate folders")
        if fmt != "native":
            if sdb is None:
                raise ConfigError(f"{where}.source_database: a {fmt} landing folder needs the global name of its "
                                  "source database (its records do not carry it)")
            sdb = check_global_name(sdb, f"{where}.source_database")
        landings.append(
            Landing(
                name=check_identifier(ld["name"], f"{where}.name"),
                path=(base_dir / str(ld["path"])).resolve(),
                format=fmt,
                transactions=txn,
                snapshot=ld["snapshot"],
                source_database=sdb,
            )
        )
    if len({ld.name for ld in landings}) != len(landings):
        raise ConfigError("landing: landing names must be unique")
    clients = tuple(
        _client(t, d[t], t) for t in CLIENT_TYPES if d[t] is not None
    )
    inst = []
    if not isinstance(d["instantiation"], list):
        raise ConfigError("instantiation: expected a list")
    for i, item in enumerate(d["instantiation"]):
        where = f"instantiation[{i}]"
        it = _take(item, where, {"table": None, "schema": None, "global": False, "source_database": _REQUIRED,
                                 "scn": None, "ignore_scn": None})
        levels = [k for k in ("table", "schema", "global") if it[k] not in (None, False)]
        if len(levels) != 1:
            raise ConfigError(f"{where}: give exactly one of table, schema or global: true")
        src = check_global_name(it["source_database"], f"{where}.source_database")
        owner = table = None
        if levels[0] == "table":
            owner, table = split_table_name(it["table"], f"{where}.table")
        elif levels[0] == "schema":
            owner = check_identifier(it["schema"], f"{where}.schema").upper()
        elif it["global"] is not True:
            raise ConfigError(f"{where}.global: expected true, got {it['global']!r}")
        scn = None if it["scn"] is None else check_scn(it["scn"], f"{where}.scn")
        ignore = None if it["ignore_scn"] is None else check_scn(it["ignore_scn"], f"{where}.ignore_scn")
        if ignore is not None and levels[0] != "table":
            raise ConfigError(f"{where}.ignore_scn: an ignore SCN belongs to a table, not a {levels[0]}")
        if scn is None and ignore is None:
            raise ConfigError(f"{where}: give scn (and, for a table, optionally ignore_scn)")
        inst.append(InstantiationSpec(src, owner, table, scn, ignore))
    check_instantiation(inst, [f"instantiation[{i}]" for i in range(len(inst))])
    t = _take(d["types"], "types", {"number_without_precision": "decimal"})
    types = TypePolicy(
        number_without_precision=_choice(
            t["number_without_precision"], "types.number_without_precision", NUMBER_POLICIES
        )
    )
    from silver.dictionary import parse_create_table  # the dictionary's own parser checks the DDL

    if not isinstance(d["tables"], list):
        raise ConfigError("tables: expected a list")
    tables = []
    for i, item in enumerate(d["tables"]):
        where = f"tables[{i}]"
        td = _take(item, where, {"source_database": _REQUIRED, "ddl": _REQUIRED})
        if not isinstance(td["ddl"], str):
            raise ConfigError(f"{where}.ddl: expected the CREATE TABLE text")
        try:
            parse_create_table(td["ddl"], types.number_without_precision)
        except ReplicationError as e:
            raise ConfigError(f"{where}.ddl: {e}") from e
        tables.append(TableSpec(check_global_name(td["source_database"], f"{where}.source_database"), td["ddl"]))
    if not isinstance(d["keys"], list):
        raise ConfigError("keys: expected a list")
    keys: list[KeySpec] = []
    for i, item in enumerate(d["keys"]):
        where = f"keys[{i}]"
        kd = _take(item, where, {"table": _REQUIRED, "columns": _REQUIRED})
        owner, table = split_table_name(kd["table"], f"{where}.table")
        if any((k.owner, k.table) == (owner, table) for k in keys):
            raise ConfigError(f"{where}: {owner}.{table} is given a substitute key twice")
        keys.append(KeySpec(owner, table, check_key_columns(kd["columns"], f"{where}.columns")))
    for key in ("update_conflict_handlers", "compare_old_values", "targets", "dml_handlers"):
        if not isinstance(d[key], list):
            raise ConfigError(f"{key}: expected a list")
    handler_wheres = [f"update_conflict_handlers[{i}]" for i in range(len(d["update_conflict_handlers"]))]
    handlers = check_conflict_handlers(
        [conflict_handler(h, w) for h, w in zip(d["update_conflict_handlers"], handler_wheres, strict=True)],
        handler_wheres,
    )
    compares = tuple(compare_setting(c, f"compare_old_values[{i}]") for i, c in enumerate(d["compare_old_values"]))
    target_wheres = [f"targets[{i}]" for i in range(len(d["targets"]))]
    targets = check_targets([target_spec(t, w) for t, w in zip(d["targets"], target_wheres, strict=True)], target_wheres)
    handler_wheres = [f"dml_handlers[{i}]" for i in range(len(d["dml_handlers"]))]
    dml_handlers = check_dml_handlers(
        [dml_handler_spec(h, w) for h, w in zip(d["dml_handlers"], handler_wheres, strict=True)], handler_wheres)
    modules = d["transformation_modules"]
    if not isinstance(modules, list) or not all(
        isinstance(m, str) and all(IDENTIFIER.fullmatch(p) for p in m.split(".")) for m in modules
    ):
        raise ConfigError("transformation_modules: expected a list of Python module names (e.g. mypkg.transforms)")
    channel = Channel(
        name=name,
        adapt_ddl=adapt_ddl_actions(d["adapt_ddl"]),
        ddl_processing=ddl_processing_config(d["ddl_processing"]),
        tables=tuple(tables),
        transformation_modules=tuple(modules),
        storage=storage,
        landing=tuple(landings),
        clients=clients,
        instantiation=tuple(inst),
        keys=tuple(keys),
        conflict_handlers=handlers,
        compare_old_values=compares,
        targets=targets,
        dml_handlers=dml_handlers,
        types=types,
        source_path=source_path,
        gold_column_mapping=_bool(_take(d["gold"], "gold", {"column_mapping": True})["column_mapping"],
                                  "gold.column_mapping"),
    )
    check_rules(channel)
    return channel


ADAPT_DDL_KEYS = {
    "add_table_pattern": None, "ignore_table_pattern": None, "capture_schema": None, "integrate_schema": None,
    "on_drop_table": "DROP_FROM_CHANNEL_ONLY", "keep_existing_structure": False, "keep_old_rows": False,
    "on_enroll_break": "REFRESH", "on_add_column_with_default": "ADD_COLUMN_WITH_EMPTY_DEFAULT",
    "on_preserve_alter_table_fail": "CREATE_AS_SELECT",
}


def adapt_ddl_actions(value: Any) -> tuple | None:
    """The channel file's ``adapt_ddl`` list (HVR's parameters in snake case) as AdaptDdl
    actions; absent: None (the default action)."""
    from silver.adaptddl import AdaptDdl

    if value is None:
        return None
    if not isinstance(value, list):
        raise ConfigError("adapt_ddl: expected a list of AdaptDDL actions ([] : targets never follow DDL)")
    out = []
    for i, item in enumerate(value):
        where = f"adapt_ddl[{i}]"
        a = _take(item, where, ADAPT_DDL_KEYS)
        for k in ("add_table_pattern", "ignore_table_pattern", "capture_schema", "integrate_schema"):
            if a[k] is not None and not isinstance(a[k], str):
                raise ConfigError(f"{where}.{k}: expected text")
        for k in ("capture_schema", "integrate_schema"):
            if a[k] is not None:
                check_identifier(a[k], f"{where}.{k}")
        for k in ("keep_existing_structure", "keep_old_rows"):
            a[k] = _bool(a[k], f"{where}.{k}")
        try:
            out.append(AdaptDdl(**a))
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from e
    return tuple(out)


def ddl_processing_config(value: Any):
    """The channel file's ``ddl_processing``: GoldenGate parameter text under ``params``, or
    the same parameters as YAML (``ddl``, ``maps``, ``ddlsubst``, ``ddlerror``,
    ``ddloptions``); both give the same ``silver.goldengate.GgDdlConfig``. Absent: None."""
    from silver.gg_params import config_from_yaml, parse_params

    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError("ddl_processing: expected a mapping (params: GoldenGate parameter text, or ddl/maps/"
                          "ddlsubst/ddlerror/ddloptions)")
    try:
        if "params" in value:
            if len(value) != 1 or not isinstance(value["params"], str):
                raise ConfigError("give params (GoldenGate parameter text) alone, or the YAML keys without it")
            return parse_params(value["params"])
        return config_from_yaml(value)
    except ConfigError as e:
        raise ConfigError(f"ddl_processing: {e}") from e


def check_rules(channel: Channel) -> list:
    """Build every rule once so a bad condition or transformation fails on load; returns
    the built clients (``silver.rules.Client``)."""
    from silver.handlers import check_handlers
    from silver.rules import build_clients
    from silver.transforms import import_modules

    import_modules(channel.transformation_modules)
    check_handlers(channel.dml_handlers)
    try:
        return build_clients(channel, channel_column_types(channel))
    except ReplicationError as e:
        raise ConfigError(str(e)) from e


def channel_column_types(channel: Channel):
    """(owner, table) → {column: Oracle base type} for tables declared in the channel file."""
    from silver.dictionary import parse_create_table

    out: dict[tuple[str, str], dict[str, str]] = {}
    for spec in channel.tables:
        t = parse_create_table(spec.ddl, channel.types.number_without_precision)
        out.setdefault((t.owner, t.name), {c.name: c.type.oracle.split("(")[0].upper() for c in t.columns})
    return out


def with_storage(
    channel: Channel, catalog: str | None = None, schema: str | None = None, state: str | None = None,
    prefix: str = "",
) -> Channel:
    """``channel`` with the storage a deployment names: the CLI's ``--catalog``,
    ``--schema`` and ``--state`` (``prefix`` "--"), a notebook's widgets. An empty catalog
    or schema (None too) keeps the channel file's; a state folder, once given, must be named."""
    storage = channel.storage
    if catalog:
        storage = dataclasses.replace(storage, catalog=check_identifier(catalog, f"{prefix}catalog"))
    if schema:
        storage = dataclasses.replace(storage, schema=check_identifier(schema, f"{prefix}schema"))
    if state is not None:
        # The bronze checkpoints, the run lock and dbt's files: a deployment keeps them on
        # storage that outlives its runs (a volume), not next to the synced channel file.
        if not state.strip():
            raise ConfigError(f"{prefix}state: give a folder")
        storage = dataclasses.replace(storage, state=Path(state).resolve())
    return channel.replace(storage=storage)


def load_channel(path: str | Path) -> Channel:
    """Load a channel YAML file; errors name the file, the line, the key and what is accepted."""
    p = Path(path).resolve()
    try:
        text = p.read_text()
        lines = key_lines(text)
        data = yaml.safe_load(text)
    except FileNotFoundError as e:
        raise ConfigError(f"channel file {p} does not exist") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from e
    except ConfigError as e:
        raise ConfigError(f"{p}, {e}") from e
    try:
        return channel_from_dict(data, p.parent, p)
    except ConfigError as e:
        line = error_line(str(e), lines)
        raise ConfigError(f"{p}, line {line}: {e}" if line else f"{p}: {e}") from e


#: The leading key path of a ConfigError's text: ``landing[0].snapshot``, ``apply.rules[2]``.
_ERROR_PATH = re.compile(r"[A-Za-z_][\w]*(?:\[\d+\])*(?:\.[A-Za-z_][\w]*(?:\[\d+\])*)*")
_UNKNOWN_KEY = re.compile(r"unknown key '([^']*)'")


def key_lines(text: str) -> dict[str, int]:
    """Each key path of a YAML document (``storage``, ``landing[0].path``) → the line (from
    1) where its key, or its list item, starts. A key written twice in one mapping, which
    YAML loaders silently resolve to the last value, is refused with both lines."""
    out: dict[str, int] = {}
    walked: set[int] = set()

    def walk(node: yaml.Node, path: str) -> None:
        if id(node) in walked:  # an alias: its node was walked where its anchor stands
            return
        walked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                name, line = str(key.value), key.start_mark.line + 1
                if (key.tag, name) in seen:  # 1 and '1' are two keys
                    raise ConfigError(f"line {line}: key {name!r} is given twice in one mapping "
                                      f"(first at line {seen[key.tag, name]}); YAML would keep only the last")
                seen[key.tag, name] = line
                sub = f"{path}.{name}" if path else name
                out[sub] = line
                walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                out[f"{path}[{i}]"] = item.start_mark.line + 1
                walk(item, f"{path}[{i}]")

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        out[""] = root.start_mark.line + 1
        walk(root, "")
    return out


def error_line(message: str, lines: dict[str, int]) -> int | None:
    """The line of the deepest key a ConfigError's text names (its leading ``a.b[0]: …``
    parts; ``channel`` is the file's top level). An unknown key is found on its own line."""
    parts = []
    rest = message
    while (m := _ERROR_PATH.match(rest)) and rest[m.end():m.end() + 2] == ": ":
        parts.append(m.group())
        rest = rest[m.end() + 2:]
    path = ".".join(parts)
    top = path == "channel" or path.startswith("channel.")
    path = path.removeprefix("channel").lstrip(".")
    if unknown := _UNKNOWN_KEY.match(rest):
        path = f"{path}.{unknown.group(1)}" if path else unknown.group(1)
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    # Only a message about the file's top level is placed at its first line; one that names
    # no key of the file (a table, a DDLERROR rule) gets no line rather than a wrong one.
    return lines.get("") if top else None
