"""HVR AdaptDDL: which new tables join the channel, and what each DDL does to a target.

Pure decisions (no Spark): ``AdaptDdl`` holds one AdaptDDL action's parameters;
``table_to_add`` says whether a new source table joins the channel (and under which
target schema); ``adapt`` says, for one understood DDL statement (``silver.ddl``) on a
table, what happens to its target, following the behaviour table of the reference row
by row. The source dictionary follows every DDL whatever is decided here.

Patterns are HVR's: ``*`` and ``?`` wildcards, ranges such as ``[a-f]``, and ``|`` between
alternatives (``tmp*|temp*``); table names match case-insensitively.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from lakestreams.errors import ConfigError
from silver.ddl import (
    AddColumn,
    AddConstraint,
    ColumnSpec,
    DdlStatement,
    DropColumn,
    DropConstraint,
    ModifyColumn,
    Physical,
    RenameColumn,
    RenameConstraint,
    RenameIndex,
    RenameTable,
)
from silver.dictionary import LOB_TYPES, TableDef
from silver.oracle_ddl import OracleDdl
from silver.types import ColumnType, int_params

ON_DROP_TABLE = ("KEEP", "DROP_FROM_CHANNEL_ONLY", "DROP_FROM_CHANNEL_AND_TARGET")
ON_ENROLL_BREAK = ("REFRESH", "FAIL_INTEG_JOB", "WARNING")
ON_ADD_COLUMN_WITH_DEFAULT = ("ADD_COLUMN_WITH_EMPTY_DEFAULT", "REFRESH", "FAIL_INTEG_JOB", "WARNING")
ON_PRESERVE_ALTER_TABLE_FAIL = ("CREATE_AS_SELECT", "FAIL_INTEG_JOB")  # HVR's WARNING is refused (AdaptDdl)
#: Partition operations whose rows change without row changes being captured: a refresh.
REFRESHING_PARTITION_OPS = ("TRUNCATE PARTITION", "TRUNCATE SUBPARTITION", "EXCHANGE PARTITION",
                            "EXCHANGE SUBPARTITION", "DROP PARTITION", "DROP SUBPARTITION")


def _check_pattern(pattern: str, what: str) -> None:
    if not pattern or any(not alt for alt in pattern.split("|")):
        raise ConfigError(f"{what}: {pattern!r} has an empty alternative")
    for alt in pattern.split("|"):
        if alt.count("[") != alt.count("]"):
            raise ConfigError(f"{what}: {pattern!r} has an unclosed range")


def matches(pattern: str, name: str) -> bool:
    """HVR pattern match: any ``|`` alternative with ``*``, ``?`` and ``[a-f]``, case-insensitive."""
    return any(fnmatch.fnmatchcase(name.lower(), alt.lower()) for alt in pattern.split("|"))


@dataclass(frozen=True)
class AdaptDdl:
    """One AdaptDDL action. Defaults are HVR's."""

    add_table_pattern: str | None = None
    ignore_table_pattern: str | None = None  # scoped to this action's add_table_pattern
    capture_schema: str | None = None  # not a pattern; case-insensitive
    integrate_schema: str | None = None
    on_drop_table: str = "DROP_FROM_CHANNEL_ONLY"
    keep_existing_structure: bool = False
    keep_old_rows: bool = False
    on_enroll_break: str = "REFRESH"
    on_add_column_with_default: str = "ADD_COLUMN_WITH_EMPTY_DEFAULT"
    on_preserve_alter_table_fail: str = "CREATE_AS_SELECT"

    def __post_init__(self) -> None:
        if self.on_preserve_alter_table_fail == "WARNING":
            raise ConfigError("AdaptDDL OnPreserveAlterTableFail: WARNING is not supported: the target would keep a "
                              "column type its new values may not fit, and the apply would store NULL in their place "
                              "without a trace; use CREATE_AS_SELECT (rewrite) or FAIL_INTEG_JOB (stop)")
        for value, allowed, name in (
            (self.on_drop_table, ON_DROP_TABLE, "OnDropTable"),
            (self.on_enroll_break, ON_ENROLL_BREAK, "OnEnrollBreak"),
            (self.on_add_column_with_default, ON_ADD_COLUMN_WITH_DEFAULT, "OnAddColumnWithDefault"),
            (self.on_preserve_alter_table_fail, ON_PRESERVE_ALTER_TABLE_FAIL, "OnPreserveAlterTableFail"),
        ):
            if value not in allowed:
                raise ConfigError(f"AdaptDDL {name}: {value!r} is not one of {', '.join(allowed)}")
        if self.add_table_pattern is not None:
            _check_pattern(self.add_table_pattern, "AdaptDDL AddTablePattern")
        if self.ignore_table_pattern is not None:
            _check_pattern(self.ignore_table_pattern, "AdaptDDL IgnoreTablePattern")
            if self.add_table_pattern is None:
                raise ConfigError("AdaptDDL IgnoreTablePattern only narrows an AddTablePattern of the same action")
        if self.integrate_schema is not None and self.capture_schema is None:
            raise ConfigError("AdaptDDL IntegrateSchema maps a CaptureSchema: give CaptureSchema too")


def patterns_govern(actions: tuple[AdaptDdl, ...], owner: str, current_schema: str) -> bool:
    """Whether an AddTablePattern decides which new tables of ``owner`` join the channel.
    Without one (no action of that schema has a pattern), every new table joins, as the
    channel's rules select its rows.

    >>> patterns_govern((AdaptDdl("t*", capture_schema="hr"),), "HR", "HR")
    True
    >>> patterns_govern((AdaptDdl("t*", capture_schema="hr"), AdaptDdl()), "SALES", "SALES")
    False
    """
    return any(a.add_table_pattern is not None
               and owner.lower() == (a.capture_schema if a.capture_schema is not None else current_schema).lower()
               for a in actions)


def table_to_add(actions: tuple[AdaptDdl, ...], owner: str, table: str, current_schema: str) -> tuple[str, str] | None:
    """(target owner, table) when a new source table ``owner.table`` joins the channel,
    else None. Each action's IgnoreTablePattern narrows only its own AddTablePattern; a
    table matched by several actions is added once (the first action that adds it).

    >>> acts = (AdaptDdl("t*", "tmp*|temp*"), AdaptDdl("*x"))
    >>> [n for n in ("tab_1", "tmp_x", "tmp_y") if table_to_add(acts, "HR", n, "HR")]
    ['tab_1', 'tmp_x']
    """
    for a in actions:
        if a.add_table_pattern is None:
            continue
        schema = a.capture_schema if a.capture_schema is not None else current_schema
        if owner.lower() != schema.lower():
            continue
        if not matches(a.add_table_pattern, table):
            continue
        if a.ignore_table_pattern is not None and matches(a.ignore_table_pattern, table):
            continue
        return (a.integrate_schema.upper() if a.integrate_schema else owner), table
    return None


def _shape(t: ColumnType) -> tuple[str, tuple[int | str | None, ...]]:
    """An Oracle type's family and its size parameters (None: unbounded).

    A character type's parameters are its length and what it counts (CHAR or BYTE).

    >>> from silver.types import ColumnType as C
    >>> [_shape(C(o, "")) for o in ("RAW(16)", "UROWID", "NUMBER(*,2)", "INTEGER", "NUMBER", "NUMBER(5, -2)")]
    [('RAW', (16,)), ('UROWID', ()), ('NUMBER', (38, 2)), ('NUMBER', (38, 0)), ('NUMBER', (None, None)), ('NUMBER', (5, -2))]
    >>> [_shape(C(o, "STRING", 9)) for o in ("VARCHAR2(9)", "VARCHAR2(9 CHAR)", "NVARCHAR2(9)")]
    [('CHARACTER', (9, 'BYTE')), ('CHARACTER', (9, 'CHAR')), ('CHARACTER', (9, 'CHAR'))]
    """
    upper = t.oracle.upper()
    raw = re.fullmatch(r"RAW\s*\(\s*(\d+)\s*\)", upper)
    if raw:  # sqlglot's Oracle dialect does not build RAW(n)
        return "RAW", (int(raw.group(1)),)
    try:
        dt = exp.DataType.build(t.oracle, dialect=OracleDdl)
    except sqlglot.errors.ParseError:  # ROWID, UROWID, XMLTYPE …: compared by their text
        return upper, ()
    params = int_params(dt)
    T = exp.DataType.Type
    if dt.this in (T.VARCHAR, T.NVARCHAR, T.CHAR, T.NCHAR):
        return "CHARACTER", (params[0] if params else 1, "CHAR" if t.length_unit == "characters" else "BYTE")
    if dt.this in (T.INT, T.SMALLINT) and not params:  # Oracle's INTEGER, INT, SMALLINT: NUMBER(38)
        return "NUMBER", (38, 0)
    if dt.this in (T.DECIMAL, T.BIGDECIMAL) or upper.startswith("NUMBER"):
        if not params or (params[0] is None and len(params) < 2):
            return "NUMBER", (None, None)
        scale = params[1] if len(params) > 1 and params[1] is not None else 0
        return "NUMBER", (38 if params[0] is None else params[0], scale)  # NUMBER(*,s): 38 digits
    if dt.this in (T.VARBINARY, T.BINARY):
        return "RAW", (params[0] if params else None,)
    return t.oracle.upper(), ()


def type_change(old: ColumnType, new: ColumnType) -> str:
    """SAME, WIDEN (every old value fits: ALTER in place), NARROW (same family, some old
    values may not fit) or CHANGE (another data type).

    >>> from silver.types import ColumnType as C
    >>> type_change(C("VARCHAR2(5)", "STRING", 5), C("VARCHAR2(12)", "STRING", 12))
    'WIDEN'
    >>> type_change(C("NUMBER(8, 2)", "DECIMAL(8,2)"), C("NUMBER(6, 2)", "DECIMAL(6,2)"))
    'NARROW'
    >>> type_change(C("NUMBER(5)", "INT"), C("VARCHAR2(5)", "STRING", 5))
    'CHANGE'
    >>> [type_change(C("NUMBER(5)", "INT"), C("INTEGER", "DECIMAL(38,0)")), type_change(C("INTEGER", "DECIMAL(38,0)"), C("NUMBER(5)", "INT"))]
    ['WIDEN', 'NARROW']

    A value of n characters takes up to 4 bytes each (AL32UTF8); one of n bytes has at most n characters:

    >>> [type_change(C(a, "STRING", 1), C(b, "STRING", 1)) for a, b in (("VARCHAR2(20)", "VARCHAR2(20 CHAR)"),
    ...  ("VARCHAR2(20 CHAR)", "VARCHAR2(40)"), ("VARCHAR2(20 CHAR)", "VARCHAR2(80 BYTE)"), ("VARCHAR2(20 CHAR)", "NVARCHAR2(20)"))]
    ['WIDEN', 'NARROW', 'WIDEN', 'WIDEN']
    """
    if old.oracle.upper().replace(" ", "") == new.oracle.upper().replace(" ", ""):
        return "SAME"
    (fo, po), (fn, pn) = _shape(old), _shape(new)
    if fo != fn:
        return "CHANGE"
    if fo == "NUMBER":
        if pn == (None, None):
            return "WIDEN"
        if po == (None, None):
            return "NARROW"
        (p1, s1), (p2, s2) = po, pn
        return "WIDEN" if (p2 - s2 >= p1 - s1 and s2 >= s1) else "NARROW"
    if fo == "CHARACTER":
        (a, old_unit), (b, new_unit) = po, pn
        return "WIDEN" if b >= a * (4 if (old_unit, new_unit) == ("CHAR", "BYTE") else 1) else "NARROW"
    if po and pn:
        a, b = po[0], pn[0]
        if b is None or (a is not None and b >= a):
            return "WIDEN"
        return "NARROW"
    return "CHANGE"


@dataclass(frozen=True)
class Decision:
    """What a DDL does to the target of a table in the channel.

    ``target``: IGNORE (the target is untouched), ALTER (``alters`` say what), REFRESH
    (rebuild or reload the target after ``alters``), ADD (a new table joins the channel:
    create and instantiate its target), DROP (leave the channel; ``drop_target`` says
    whether the target table goes too), TRUNCATE (a special DML) or FAIL (stop
    integrating the table until an operator acts). ``warnings``: what the log must say.
    ``reload``: a REFRESH whose rows the change history cannot give (rows changed at the
    source without row changes; a source default filling the existing rows): the target
    needs a snapshot at or above the statement's SCN."""

    target: str
    reason: str
    alters: tuple = ()
    drop_target: bool = False
    warnings: tuple[str, ...] = ()
    reload: bool = False


def adapt(
    stmt: DdlStatement, action: AdaptDdl | None, before: TableDef | None, in_channel: bool,
    last_table: bool = False, added_as: tuple[str, str] | None = None,
) -> Decision:
    """The decision for ``stmt`` on one table. ``action``: the AdaptDDL action covering
    the table (None: AdaptDDL is not defined, the target never follows); ``before``: the
    table's dictionary revision before the statement; ``in_channel``: the table is
    replicated already; ``last_table``: it is the channel's only table; ``added_as``:
    ``table_to_add``'s answer for a table not in the channel."""
    if stmt.kind == "IGNORED":
        return Decision("IGNORE", f"{stmt.object_type} statements carry no rows")
    if stmt.kind == "TRUNCATE TABLE":
        return Decision("TRUNCATE", "TRUNCATE TABLE is applied as a special DML")
    if action is None:
        return Decision("IGNORE", "no AdaptDDL action covers the table: only the source dictionary follows")
    if stmt.kind in ("CREATE TABLE", "CREATE TABLE AS SELECT"):
        if in_channel:  # dropped and created again: the target is reused, made to match
            return Decision("REFRESH", "the table is created again while in the channel: its target is refreshed")
        if added_as is None:
            return Decision("IGNORE", "no AddTablePattern adds the table")
        return Decision("ADD", f"AddTablePattern adds it as {added_as[0]}.{added_as[1]}")
    if not in_channel:
        return Decision("IGNORE", "the table is not in the channel")
    if stmt.kind == "DROP TABLE":
        return _drop(action, last_table, "DROP TABLE")
    alters: list = []
    refresh, reload, warnings, reasons = False, False, [], []
    for a in stmt.actions:
        if isinstance(a, RenameTable):
            # A DROP of the old name and a CREATE of the new one (if a pattern adds it).
            dropped = _drop(action, last_table, "RENAME TO")
            return Decision(dropped.target, dropped.reason + "; the new name joins only if an AddTablePattern adds it",
                            drop_target=dropped.drop_target, warnings=dropped.warnings)
        if isinstance(a, AddColumn):
            if a.column.default is not None and action.on_add_column_with_default != "ADD_COLUMN_WITH_EMPTY_DEFAULT":
                policy = action.on_add_column_with_default
                if policy == "FAIL_INTEG_JOB":
                    return Decision("FAIL", f"column {a.column.name} is added with a default (OnAddColumnWithDefault=FAIL_INTEG_JOB)")
                if policy == "REFRESH":
                    refresh = reload = True
                    reasons.append(f"{a.column.name} has a source default: refresh (OnAddColumnWithDefault=REFRESH), "
                                   "the existing rows' value is in no change: a snapshot reloads the target")
                else:
                    warnings.append(f"column {a.column.name} is added with a default; existing target rows hold NULL")
            alters.append(a)
        elif isinstance(a, DropColumn):
            if action.keep_existing_structure:
                reasons.append(f"{a.name} stays in the target (KeepExistingStructure)")
            else:
                alters.append(a)
        elif isinstance(a, RenameColumn):
            alters.append(a)
        elif isinstance(a, ModifyColumn):
            old = before.column(a.column.name) if before is not None else None
            change = "SAME" if old is None or a.column.type is None else type_change(old.type, a.column.type)
            if change in ("SAME", "WIDEN"):
                alters.append(a)
            elif change == "NARROW":
                if action.keep_existing_structure:
                    reasons.append(f"{a.column.name} keeps its larger type (KeepExistingStructure)")
                    if a.column.nullable is not None:
                        alters.append(ModifyColumn(ColumnSpec(a.column.name, None, a.column.nullable)))
                else:
                    alters.append(a)
                    refresh = True
                    reasons.append(f"{a.column.name} is made smaller: refresh")
            else:  # another data type: an enroll break
                if action.on_enroll_break == "FAIL_INTEG_JOB":
                    return Decision("FAIL", f"{a.column.name} changes data type (OnEnrollBreak=FAIL_INTEG_JOB)")
                alters.append(a)
                if action.on_enroll_break == "WARNING":
                    warnings.append(f"{a.column.name} changes data type; no refresh (OnEnrollBreak=WARNING)")
                else:
                    refresh = True
                    reasons.append(f"{a.column.name} changes data type: refresh")
        elif isinstance(a, (AddConstraint, DropConstraint, RenameIndex, RenameConstraint)):
            if isinstance(a, AddConstraint) and a.kind in ("FOREIGN KEY", "CHECK"):
                reasons.append(f"{a.kind} constraints are not replicated")
            else:
                alters.append(a)  # the replication key may change; the caller compares keys
        elif isinstance(a, Physical):
            verb = a.text.split(" ")[0]
            encryption = a.text.startswith(("ENCRYPT", "DECRYPT"))
            partition = next((op for op in REFRESHING_PARTITION_OPS if a.text.startswith(op)), None)
            if (encryption or partition) and action.on_enroll_break != "REFRESH":
                # An enroll break (HVR: "data type changes, partition changes etc."): the policy decides.
                what = f"{verb}: the column's encryption changes" if encryption else f"{partition} changes rows"
                if action.on_enroll_break == "FAIL_INTEG_JOB":
                    return Decision("FAIL", f"{what} (OnEnrollBreak=FAIL_INTEG_JOB)")
                reasons.append(f"{what}: no refresh (OnEnrollBreak=WARNING)")
                warnings.append("the target is not refreshed and may differ from the source"
                                if partition else "the target is not refreshed")
            elif encryption:
                # HVR refreshes a table whose column encryption changes; the values captured
                # are the clear ones, so the rows follow from the change history.
                refresh = True
                reasons.append(f"{verb}: the column's encryption changes: refresh, "
                               "its rows follow from the change history")
            elif partition:
                refresh = reload = True
                reasons.append(f"{verb} of a partition changes rows without row changes: refresh, "
                               "a snapshot reloads the target")
            else:
                reasons.append(f"{verb}: physical, not replicated")
    if before is not None and before.key_kind == "ALL COLUMNS" and any(
            (isinstance(a, DropColumn) and a.name in before.key_columns)
            or (isinstance(a, AddColumn) and a.column.type is not None and not a.column.virtual
                and not a.column.type.oracle.upper().startswith(LOB_TYPES)) for a in alters):
        # The replication key is every column: a column added or dropped changes the key.
        refresh = True
        reasons.append("the table has no key (all columns are the replication key) and gains or loses a column: "
                       "refresh, its rows follow from the change history")
    if refresh:
        return Decision("REFRESH", "; ".join(reasons), tuple(alters), warnings=tuple(warnings), reload=reload)
    if alters:
        return Decision("ALTER", "; ".join(reasons) or "the target follows", tuple(alters), warnings=tuple(warnings))
    return Decision("IGNORE", "; ".join(reasons) or "nothing to change", warnings=tuple(warnings))


def _drop(action: AdaptDdl, last_table: bool, what: str) -> Decision:
    if action.on_drop_table == "KEEP":
        return Decision("IGNORE", f"{what}: the table stays in the channel (OnDropTable=KEEP)",
                        warnings=(f"{what} of a replicated table kept in the channel",))
    if last_table:
        return Decision("FAIL", f"{what} of the channel's last table: a channel always keeps one table")
    both = action.on_drop_table == "DROP_FROM_CHANNEL_AND_TARGET"
    return Decision("DROP", f"{what}: leaves the channel (OnDropTable={action.on_drop_table})", drop_target=both)
