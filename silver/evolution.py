"""Dictionary revisions from DDL records, the target structure they give, and how a Delta
table follows.

Every DDL record of the source makes (at most) one new revision of a table's dictionary
entry, valid from the record's commit SCN (``Revision``). ``read_ddl`` does that for one
record, whatever the rules decide, and asks the AdaptDDL policy (``silver.adaptddl``)
what the target does; ``target_structures`` folds those decisions into the structure the
target has at each revision (HVR's KeepExistingStructure keeps dropped columns and never
shrinks a type). DML is read with the revision in force at its SCN: DDL is a barrier.

A Delta table (a silver change table or a gold table) follows a new structure with
metadata only where Delta can: renames through column mapping, new columns, type
widening; ``column_changes`` says which. A type Delta cannot change in place rewrites the
table. All pure but ``follow_structure``, which runs the few DDL statements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import reduce

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakestreams.delta_io import allow_timestamp_ntz, overwrite
from lakestreams.errors import DdlError
from lakestreams.faults import kill_point
from silver.adaptddl import AdaptDdl, Decision, adapt, patterns_govern, table_to_add, type_change
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
    RenameTable,
    evolve,
    parse_ddl,
)
from silver.dictionary import SAFE_NAME, ColumnDef, TableDef

#: Decisions after which the target takes the source's new structure.
FOLLOWING = ("ALTER", "REFRESH", "ADD")
#: The decision of a table's first revision when the channel file declares it.
DECLARED = "DECLARED"
#: The decision of a dropped table's revision when its target goes too
#: (OnDropTable=DROP_FROM_CHANNEL_AND_TARGET): the gold tables are dropped.
DROPS_TARGET = "DROP TARGET"
#: The decision of every revision of a table outside the channel: created (or renamed to
#: a name) that no AddTablePattern adds. The source dictionary follows it; its changes
#: are discarded (counted) and it has no target.
OUTSIDE = "NOT IN CHANNEL"
#: Why a table renamed into the channel needs a snapshot: its rows are in no change.
RENAMED_IN = ": its rows from before the rename are in no change, a snapshot loads its target"
#: Table property of a Delta table: the SCN of the revision its structure follows.
STRUCTURE_PROPERTY = "lakestreams.structure_scn"


@dataclass(frozen=True)
class Revision:
    """A source table's structure from ``scn`` on. ``renames``: (new, previous name)."""

    scn: int
    table: TableDef
    status: str = "TABLE"  # TABLE | DROPPED
    renames: tuple[tuple[str, str], ...] = ()
    decision: str = "ADD"
    keep_structure: bool = False
    #: Targets ("OWNER.NAME") the record's DDL processing did not apply to while it applied
    #: to another of the table's (several MAPs): they do not follow this revision.
    excluded: tuple[str, ...] = ()


def target_key(target: tuple[str, str]) -> str:
    """A target (owner, name) as DDL processing names the targets it left out ("OWNER.NAME":
    ``Revision.excluded``, the DDL log's ``truncates_excluded``)."""
    return f"{target[0]}.{target[1]}"


def for_target(revisions: list[Revision], target: tuple[str, str]) -> list[Revision]:
    """``revisions`` as target ``target`` (owner, name) follows them: a revision whose DDL
    processing left it out (``Revision.excluded``) is one it does not follow (IGNORE; a
    DROP TABLE that would drop the target drops the table from the channel only)."""
    name = target_key(target)
    if not any(name in r.excluded for r in revisions):
        return revisions
    # A DROP TABLE left out of the target takes the table out of the channel (the source
    # has no table now) but keeps the target's gold tables.
    kept = {DROPS_TARGET: "DROP"}
    return [replace(r, decision="IGNORE" if r.decision in FOLLOWING else kept.get(r.decision, r.decision))
            if name in r.excluded else r for r in revisions]


@dataclass(frozen=True)
class DdlReading:
    """What one DDL record was understood as, and what it did."""

    statement: str  # CREATE TABLE, ALTER TABLE, …, IGNORED VIEW, or ERROR
    decision: str  # the target's: IGNORE, ALTER, REFRESH, ADD, DROP, TRUNCATE, FAIL, or ERROR
    reason: str
    revisions: tuple[tuple[tuple[str, str], Revision], ...] = ()  # ((owner, table), revision)
    truncates: tuple[str, str] | None = None  # the table whose rows it removes, if any
    #: Targets ("OWNER.NAME") whose rows the TRUNCATE of ``truncates`` leaves (several MAPs:
    #: the record's DDL processing applied it to another target only).
    truncates_excluded: tuple[str, ...] = ()
    code: str | None = None  # an ERROR's code: Oracle's error number, PARSE, or DDL
    new_table: bool = False  # a CREATE TABLE of a table the dictionary never held (or declared only)
    outside: bool = False  # of a table outside the channel (no AddTablePattern added it): no target, no processing
    #: The table whose target the change history cannot give rows for from this SCN on: it
    #: needs a snapshot at or above it (a REFRESH with ``reload``; a table renamed into the channel).
    reloads: tuple[str, str] | None = None


def action_for(actions: tuple[AdaptDdl, ...], owner: str) -> AdaptDdl | None:
    """The AdaptDDL action covering tables of ``owner``: the first whose CaptureSchema is
    that owner (case-insensitive) or that has none."""
    for a in actions:
        if a.capture_schema is None or a.capture_schema.lower() == owner.lower():
            return a
    return None


def in_channel(revisions: list[Revision]) -> bool:
    """The table is at the source now and in the channel (the channel's last table is
    counted among these)."""
    return bool(revisions) and revisions[-1].status == "TABLE" and revisions[-1].decision != OUTSIDE


def channel_life(revisions: list[Revision]) -> list[Revision]:
    """The revisions of a table while it was in the channel: what its target knew."""
    return [r for r in revisions if r.decision != OUTSIDE]


def _latest(history: dict, key: tuple[str, str]) -> Revision | None:
    revs = history.get(key)
    return revs[-1] if revs else None


def read_ddl(
    history: dict[tuple[str, str], list[Revision]], text: str, scn: int, default_owner: str | None,
    actions: tuple[AdaptDdl, ...], number_policy: str = "decimal", elsewhere: bool = False,
    current_schema: str | None = None, declared: frozenset[tuple[str, str]] = frozenset(),
) -> DdlReading:
    """One DDL record of one source database against its tables' revisions (``history``,
    (owner, table) → revisions by SCN; not modified). A record that cannot be read, or
    that names a table the dictionary does not hold, is an ERROR reading with the reason.
    ``elsewhere``: the channel holds tables of other source databases too (so this one's
    last table is not the channel's)."""
    try:
        stmt = parse_ddl(text, number_policy)
    except DdlError as e:
        return DdlReading("ERROR", "ERROR", str(e), code="PARSE")

    def read(s: DdlStatement) -> DdlReading:
        return _read_statement(history, s, scn, default_owner, actions, elsewhere, current_schema, declared)

    if stmt.kind == "DBMS_REDEFINITION":
        return _read_redefinition(history, stmt, scn, default_owner, read)
    return read(stmt)


def _read_redefinition(history: dict[tuple[str, str], list[Revision]], stmt: DdlStatement, scn: int,
                       default_owner: str | None, read: Callable[[DdlStatement], DdlReading]) -> DdlReading:
    """FINISH_REDEF_TABLE: the table takes its interim table's structure, which the
    dictionary holds from the interim's CREATE TABLE (HVR re-inspects the table). A
    redefinition of storage only (partitioning, compression, tablespace, LOB storage)
    leaves columns, types and key as they were: nothing for the target to do. One that
    changes them is read as the ALTER TABLE making the same changes (a column renamed
    is a column dropped and one added), decided as that ALTER TABLE would be. The interim
    table takes the table's old structure."""
    redef = stmt.actions[0]
    key, interim_key = (stmt.owner or default_owner, stmt.name), (redef.owner, redef.name)
    live, interim = _latest(history, key), _latest(history, interim_key)
    for k, rev in ((key, live), (interim_key, interim)):
        if rev is None or rev.status != "TABLE":
            return DdlReading(stmt.kind, "ERROR", f"{k[0]}.{k[1]} is not in the source dictionary (its CREATE TABLE "
                              "record was not seen): the redefinition cannot be followed", code="942")
    label = f"{key[0]}.{key[1]} redefined with interim table {interim_key[0]}.{interim_key[1]}"
    changes = () if redef.partition else structure_changes(live.table, interim.table)
    alter = DdlStatement("ALTER TABLE", "TABLE", key[0], key[1], changes or (Physical(stmt.kind),))
    reading = read(alter)
    swapped = replace(live.table, owner=interim_key[0], name=interim_key[1])
    if reading.decision == "ERROR" or swapped == interim.table:
        return replace(reading, statement=stmt.kind, reason=f"{label}: {reading.reason}")
    interim_rev = replace(interim, scn=scn, table=swapped, renames=(),
                          decision=interim.decision if interim.decision == OUTSIDE else "IGNORE")
    return replace(reading, statement=stmt.kind, reason=f"{label}: {reading.reason}",
                   revisions=(*reading.revisions, (interim_key, interim_rev)))


def structure_changes(before: TableDef, after: TableDef) -> tuple:
    """The ALTER TABLE actions that give ``before`` the column names, data types and keys of
    ``after`` (what HVR's repository holds of a table; column order, NULL-ness, defaults
    and virtual columns aside). Keys are compared by kind and columns; an ``after``
    without any (an interim table, whose constraints COPY_TABLE_DEPENDENTS copies from the
    table) keeps ``before``'s."""
    old, new = {c.name: c for c in before.columns}, {c.name: c for c in after.columns}
    old_keys = {(k, cols): n for n, k, cols in before.constraints}
    new_keys = {(k, cols): n for n, k, cols in after.constraints} if after.constraints else old_keys
    drops = [DropConstraint(kind="PRIMARY KEY") if k == "PRIMARY KEY" else DropConstraint(kind="UNIQUE", columns=cols)
             if k == "UNIQUE" else DropConstraint(name=n, kind="INDEX")
             for (k, cols), n in old_keys.items() if (k, cols) not in new_keys]
    drops += [DropColumn(n) for n in old if n not in new]
    adds = [AddColumn(ColumnSpec(c.name, c.type, c.nullable, c.default, c.virtual)) for c in after.columns
            if c.name not in old]
    retyped = [ModifyColumn(ColumnSpec(c.name, c.type)) for c in after.columns
               if c.name in old and c.type != old[c.name].type]
    keys = [AddConstraint(k, cols, n) for (k, cols), n in new_keys.items() if (k, cols) not in old_keys]
    return (*drops, *adds, *retyped, *keys)


def _read_statement(
    history: dict[tuple[str, str], list[Revision]], stmt: DdlStatement, scn: int, default_owner: str | None,
    actions: tuple[AdaptDdl, ...], elsewhere: bool, current_schema: str | None, declared: frozenset[tuple[str, str]],
) -> DdlReading:
    """``read_ddl`` of the statement a record was parsed into."""
    if stmt.kind == "IGNORED":
        return DdlReading(f"IGNORED {stmt.object_type}", "IGNORE", f"{stmt.object_type} statements carry no rows")
    if stmt.kind in ("DROP INDEX", "ALTER INDEX"):
        found = _index_table(history, stmt.owner or default_owner, stmt.name)
        if found is None:
            return DdlReading("IGNORED INDEX", "IGNORE", f"index {stmt.name} is no unique key of a table "
                              "in the dictionary: indexes carry no rows")
        holder, stored = found
        if stmt.kind == "DROP INDEX":
            act = DropConstraint(name=stored, kind="INDEX")
        else:  # renamed within its schema
            new = _index_key_name(stmt.owner or default_owner, holder[0], stmt.actions[0].name)
            act = replace(stmt.actions[0], old=stored, name=new)
        stmt = replace(stmt, owner=holder[0], name=holder[1], actions=(act,))
    if stmt.kind == "CREATE UNIQUE INDEX" and stmt.owner is None and current_schema:
        # The record's owner is the index's; an unqualified table is the current schema's.
        stmt = replace(stmt, owner=current_schema.upper())
    owner = stmt.owner or default_owner
    if stmt.kind == "CREATE UNIQUE INDEX":
        act = stmt.actions[0]
        stmt = replace(stmt, actions=(replace(act, name=_index_key_name(act.index_owner or default_owner, owner, act.name)),))
    if owner is None:
        return DdlReading("ERROR", "ERROR", f"{stmt.kind} {stmt.name} names no owner and the record has no schema",
                          code="DDL")
    key = (owner, stmt.name)
    before = _latest(history, key)
    live = before if before is not None and before.status == "TABLE" else None
    live_tables = [k for k, revs in history.items() if in_channel(revs)]
    action = action_for(actions, owner)
    last = live is not None and live_tables == [key] and not elsewhere

    schema = current_schema or owner  # the record's current schema: AddTablePattern's without CaptureSchema

    def decide(s: DdlStatement, prior: Revision | None, in_channel: bool) -> Decision:
        added = table_to_add(actions, owner, s.name, schema) if s.name else None
        if action is None and added is None and prior is None and s.kind.startswith("CREATE"):
            # A table new to the dictionary always gets a first target structure.
            return Decision("ADD", "a new table: its first structure")
        return adapt(s, action, prior.table if prior else None, in_channel, last, added)

    def left_out(name: str) -> str | None:
        """Why a table ``owner.name`` new to the channel stays out of it, or None. A table
        the channel file declares is in the channel."""
        if (owner, name) in declared or not patterns_govern(actions, owner, schema) \
                or table_to_add(actions, owner, name, schema) is not None:
            return None
        return f"no AddTablePattern adds {owner}.{name}: it is not in the channel, its changes are discarded"

    if stmt.kind == "CREATE TABLE":
        replaces_declaration = live is not None and live.decision == DECLARED
        if replaces_declaration:  # the record replaces the declaration, which put the table in the channel
            before = live = None
        if live is not None:
            return DdlReading(stmt.kind, "ERROR", f"{owner}.{stmt.name} exists already (no DROP TABLE before)",
                              code="955")
        table = replace(stmt.table, owner=owner) if stmt.table.owner != owner else stmt.table
        # New to the channel: never seen, outside it before, or dropped from it (OnDropTable).
        joining = before is None or before.decision in (OUTSIDE, "DROP", DROPS_TARGET)
        out = None if replaces_declaration or not joining else left_out(stmt.name)
        if out is not None:
            rev = Revision(scn, table, decision=OUTSIDE, keep_structure=_keep(action))
            return DdlReading(stmt.kind, "IGNORE", out, ((key, rev),), new_table=before is None, outside=True)
        if before is not None and before.decision == OUTSIDE:
            # What the target knew of the table: its life before it left the channel, if any.
            before = _latest({key: channel_life(history.get(key, []))}, key)
        d = decide(stmt, None, before is not None)
        if before is None and d.target == "IGNORE":
            d = Decision("ADD", f"a new table: its first structure ({d.reason})")
        rev = Revision(scn, table, decision=d.target, keep_structure=_keep(action))
        # Created again after a DROP: the new table is empty, so is its target from here on,
        # unless KeepOldRows keeps the rows the target had (a target dropped with its table
        # kept none).
        keeps = bool(action and action.keep_old_rows)
        empties = before is not None and not (keeps and before.decision != DROPS_TARGET)
        why = _why(d) + ("; the target keeps its old rows (KeepOldRows)" if before is not None and not empties else "")
        # A target the DROP TARGET was left out of (several MAPs) kept its table: under
        # KeepOldRows it keeps the rows too.
        kept = before.excluded if empties and keeps else ()
        if kept:
            why += f"; {', '.join(kept)} kept its table at the DROP and keeps its old rows (KeepOldRows)"
        return DdlReading(stmt.kind, d.target, why, ((key, rev),), key if empties else None, truncates_excluded=kept,
                          new_table=before is None)
    if stmt.kind == "CREATE TABLE AS SELECT":
        return DdlReading(stmt.kind, "ERROR", f"CREATE TABLE {owner}.{stmt.name} AS SELECT does not state its columns: "
                          "land its CREATE TABLE form or declare it in the channel file's tables", code="DDL")
    if live is None:
        gone = " (it was dropped)" if before is not None else ""
        if stmt.kind == "CREATE UNIQUE INDEX":
            return DdlReading("IGNORED UNIQUE INDEX", "IGNORE", f"{owner}.{stmt.name} is not in the source dictionary"
                              f"{gone}: the index is no key of a replicated table")
        return DdlReading(stmt.kind, "ERROR", f"{owner}.{stmt.name} is not in the source dictionary{gone}",
                          code="942")
    outside = live.decision == OUTSIDE
    not_in = f"{owner}.{stmt.name} is not in the channel (no AddTablePattern added it): only the source dictionary follows"
    if stmt.kind in ("TRUNCATE TABLE", "DROP TABLE"):
        if outside:
            revs = () if stmt.kind == "TRUNCATE TABLE" else ((key, replace(live, scn=scn, status="DROPPED", renames=())),)
            return DdlReading(stmt.kind, "IGNORE", not_in, revs, outside=True)
        d = decide(stmt, live, True)
        if stmt.kind == "TRUNCATE TABLE":
            return DdlReading(stmt.kind, d.target, _why(d), truncates=key)
        rev = replace(live, scn=scn, status="DROPPED", renames=(), decision=_dropped(d))
        return DdlReading(stmt.kind, d.target, _why(d), ((key, rev),))
    try:
        table = evolve(live.table, stmt)  # first: a statement the table cannot take is an error
    except DdlError as e:
        return DdlReading(stmt.kind, "ERROR", str(e), code=e.code or "DDL")
    renames = tuple((a.new, a.old) for a in stmt.actions if isinstance(a, RenameColumn))
    if any(isinstance(a, RenameTable) for a in stmt.actions):
        new_key = (table.owner, table.name)
        taken = _latest(history, new_key)
        if taken is not None and taken.status == "TABLE":
            return DdlReading(stmt.kind, "ERROR", f"{new_key[0]}.{new_key[1]} exists already", code="955")
        # A DROP of the old name and a CREATE of the new one, which joins the channel only
        # if an AddTablePattern adds it (where patterns decide).
        out = left_out(table.name)
        created = Revision(scn, table, decision=OUTSIDE if out else "ADD", keep_structure=_keep(action))
        if outside:
            dropped = replace(live, scn=scn, status="DROPPED", renames=())
            reason = not_in + (f"; the new name: {out}" if out else f"; the new name {new_key[0]}.{new_key[1]} joins "
                               f"the channel (AddTablePattern){RENAMED_IN}")
            return DdlReading("RENAME TABLE", "IGNORE" if out else "ADD", reason, ((key, dropped), (new_key, created)),
                              outside=bool(out), reloads=None if out else new_key)
        d = decide(stmt, live, True)
        dropped = replace(live, scn=scn, status="DROPPED", renames=(), decision=_dropped(d))
        then = f"; the new name: {out}" if out else f"; the rows continue as {new_key[0]}.{new_key[1]}{RENAMED_IN}"
        return DdlReading("RENAME TABLE", d.target, _why(d) + then, ((key, dropped), (new_key, created)),
                          reloads=None if out else new_key)
    if outside:
        if table == live.table and not renames and table.constraints == live.table.constraints:
            return DdlReading(stmt.kind, "IGNORE", not_in + "; the table's structure is unchanged", outside=True)
        return DdlReading(stmt.kind, "IGNORE", not_in,
                          ((key, Revision(scn, table, renames=renames, decision=OUTSIDE)),), outside=True)
    d = decide(stmt, live, True)
    if table == live.table and not renames and table.constraints == live.table.constraints and all(
            c.default == o.default for c, o in zip(table.columns, live.table.columns, strict=True)):
        return DdlReading(stmt.kind, d.target, _why(d) + "; the table's structure is unchanged",
                          reloads=key if d.reload else None)
    rev = Revision(scn, table, renames=renames, decision=d.target, keep_structure=_keep(action))
    return DdlReading(stmt.kind, d.target, _why(d), ((key, rev),), reloads=key if d.reload else None)


def _index_key_name(index_owner: str | None, table_owner: str | None, index: str) -> str:
    """The name a unique index's key is kept under: the index's, or ``schema.index`` for an
    index in another schema than its table's (``_index_table`` finds it by either)."""
    return f"{index_owner}.{index}" if index_owner and table_owner and index_owner != table_owner else index


def _index_table(history: dict[tuple[str, str], list[Revision]], owner: str | None, index: str,
                 ) -> tuple[tuple[str, str], str] | None:
    """The table (at the source now) holding the unique key of index ``owner.index``, and
    the key's name there: the index's name in its table's schema, ``owner.index`` in
    another's."""
    qualified = f"{owner}.{index}"
    holders = sorted((t, n) for t, revs in history.items() if revs and revs[-1].status == "TABLE"
                     for n, k, _ in revs[-1].table.constraints
                     if k == "UNIQUE INDEX" and ((t[0] == owner and n == index) or n == qualified))
    return holders[0] if holders else None


def _dropped(d: Decision) -> str:
    """A dropped table's revision decision: DROP TARGET when its target goes too."""
    return DROPS_TARGET if d.target == "DROP" and d.drop_target else d.target


def _keep(action: AdaptDdl | None) -> bool:
    return bool(action and action.keep_existing_structure)


def _why(d: Decision) -> str:
    return d.reason + "".join(f"; warning: {w}" for w in d.warnings)


def forward(renames: tuple[tuple[str, str], ...], name: str) -> str:
    """``name`` in a revision → its name in the next one."""
    for new, old in renames:
        if old == name:
            return new
    return name


def target_renames(revisions: list[Revision]) -> list[tuple[tuple[tuple[str, str], ...], ...]]:
    """Per revision, the renames its target makes there, one group ((new, previous name),
    …) per source revision, in order: its own where the target follows it; none where it
    does not (the target keeps its names); and where the target follows again, those of
    the revisions it did not follow since, then its own (it takes the source's names
    then). A dropped table's pending renames end with it.

    >>> rn = lambda scn, d, *r: Revision(scn, None, renames=r, decision=d)
    >>> target_renames([rn(1, "ADD"), rn(2, "IGNORE", ("B", "A")), rn(3, "IGNORE", ("C", "B")), rn(4, "ALTER")])
    [(), (), (), ((('B', 'A'),), (('C', 'B'),))]
    """
    out: list[tuple[tuple[tuple[str, str], ...], ...]] = []
    pending: list[tuple[tuple[str, str], ...]] = []
    for i, r in enumerate(revisions):
        if r.status == "DROPPED":
            pending = []
        if i == 0 or r.decision not in FOLLOWING:
            out.append(())
            if i > 0 and r.renames:
                pending.append(r.renames)
            continue
        out.append(tuple(g for g in (*pending, r.renames) if g))
        pending = []
    return out


def renamed_since(revisions: list[Revision], scn: int, name: str) -> str:
    """A target column's name after the revisions above ``scn``: the renames its target
    made there (``target_renames``) applied in order."""
    for r, groups in zip(revisions, target_renames(revisions), strict=True):
        if r.scn > scn:
            for g in groups:
                name = forward(g, name)
    return name


def target_structures(revisions: list[Revision]) -> list[TableDef]:
    """The target's structure at each revision: the source's when the decision follows it
    (keeping dropped columns and larger types under KeepExistingStructure), else the
    previous target's (names follow no rename then; the next revision it follows makes
    those renames too: ``target_renames``)."""
    out: list[TableDef] = []
    for r, groups in zip(revisions, target_renames(revisions), strict=True):
        prev = out[-1] if out else None
        if prev is None:
            out.append(r.table)
        elif r.decision not in FOLLOWING:
            out.append(prev)
        elif not r.keep_structure:
            out.append(r.table)
        else:
            out.append(_kept(prev, r, groups))
    return out


def _kept(prev: TableDef, r: Revision, groups: tuple[tuple[tuple[str, str], ...], ...]) -> TableDef:
    cols = list(r.table.columns)
    names = {c.name for c in cols}
    for c in prev.columns:
        n = c.name
        for g in groups:
            n = forward(g, n)
        if n not in names:  # dropped at the source: stays in the target; inserts give it its default, or NULL
            cols.append(replace(c, name=n, nullable=True))
            continue
        i = next(i for i, x in enumerate(cols) if x.name == n)
        if type_change(c.type, cols[i].type) == "NARROW":
            cols[i] = replace(cols[i], type=c.type)
    return replace(r.table, columns=tuple(cols))


# --- how a Delta table follows a structure -------------------------------------------

_INTEGRAL = {"TINYINT": 1, "SMALLINT": 2, "INT": 3, "BIGINT": 4}


def _decimal(t: str) -> tuple[int, int] | None:
    t = t.upper().replace(" ", "")
    if t.startswith("DECIMAL(") and t.endswith(")"):
        p, s = t[8:-1].split(",")
        return int(p), int(s)
    return None


def spark_change(old: str, new: str) -> str:
    """SAME; WIDEN (Delta type widening changes it in place); KEEP (``new`` is narrower and
    fits in ``old``: history keeps the larger type); REWRITE (another type).

    >>> [spark_change(a, b) for a, b in (("INT", "BIGINT"), ("BIGINT", "INT"), ("DECIMAL(8,2)", "STRING"))]
    ['WIDEN', 'KEEP', 'REWRITE']
    >>> [spark_change(a, "DOUBLE") for a in ("INT", "BIGINT")]
    ['WIDEN', 'REWRITE']
    """
    o, n = old.upper().replace(" ", ""), new.upper().replace(" ", "")
    if o == n:
        return "SAME"
    if o in _INTEGRAL and n in _INTEGRAL:
        return "WIDEN" if _INTEGRAL[n] > _INTEGRAL[o] else "KEEP"
    od, nd = _decimal(o), _decimal(n)
    if o in _INTEGRAL and nd is not None:
        digits = {1: 3, 2: 5, 3: 10, 4: 20}[_INTEGRAL[o]]
        return "WIDEN" if nd[0] - nd[1] >= digits else "REWRITE"
    if o in _INTEGRAL and n == "DOUBLE":
        # Delta widens byte, short and int to double; a long may not fit a double exactly.
        return "WIDEN" if _INTEGRAL[o] < _INTEGRAL["BIGINT"] else "REWRITE"
    if od is not None and nd is not None:
        if nd[0] - nd[1] >= od[0] - od[1] and nd[1] >= od[1]:
            return "WIDEN"
        if od[0] - od[1] >= nd[0] - nd[1] and od[1] >= nd[1]:
            return "KEEP"
        return "REWRITE"
    if o == "FLOAT" and n == "DOUBLE":
        return "WIDEN"
    if o == "DATE" and n == "TIMESTAMP_NTZ":
        return "WIDEN"
    if od is not None and n in _INTEGRAL and od[1] == 0:
        return "KEEP" if od[0] >= {1: 3, 2: 5, 3: 10, 4: 19}[_INTEGRAL[n]] else "REWRITE"
    return "REWRITE"


@dataclass(frozen=True)
class ColumnChanges:
    """What makes a table's value columns (``current``: name → Spark type) those of
    ``wanted``: renames first, then added columns, widened types, types kept larger, types
    that need a rewrite, and (``drop``) columns to remove."""

    renames: tuple[tuple[str, str], ...] = ()  # (old, new)
    added: tuple[ColumnDef, ...] = ()
    widened: tuple[tuple[str, str], ...] = ()  # (column, new Spark type)
    rewritten: tuple[tuple[str, str], ...] = ()
    dropped: tuple[str, ...] = ()
    table_dropped: bool = False  # the whole table (its source table dropped with its target)
    #: Columns dropped before the renames: dropped at the source, then their name taken
    #: by a rename (DROP COLUMN x, RENAME COLUMN y TO x).
    dropped_first: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.renames or self.added or self.widened or self.rewritten or self.dropped or self.table_dropped
                    or self.dropped_first)

    def describe(self) -> str:
        """What was done, as ``lakestreams evolve`` and the gold DDL log say it."""
        if self.table_dropped:
            return "dropped with its source table (OnDropTable=DROP_FROM_CHANNEL_AND_TARGET)"
        what = [f"dropped {col}" for col in self.dropped_first]
        what += [f"renamed {old} to {new}" for old, new in self.renames]
        what += [f"added {col.name} {col.type.spark}" for col in self.added]
        what += [f"widened {col} to {t}" for col, t in self.widened]
        what += [f"rewrote {col} as {t}" for col, t in self.rewritten]
        what += [f"dropped {col}" for col in self.dropped]
        return "; ".join(what)


def column_changes(
    current: dict[str, str], wanted: TableDef, renames: list[tuple[str, str]], drop: bool = False
) -> ColumnChanges:
    """``renames``: (old, new) in order, those the table may not have made yet (one whose
    old name is gone and new name present was made: a re-run makes nothing twice).
    ``drop``: remove columns ``wanted`` does not have (gold); silver keeps them."""
    cur = dict(current)
    done: list[tuple[str, str]] = []
    first: list[str] = []
    for old, new in renames:
        if drop and old in cur and new in cur and old not in wanted.column_names and new not in first:
            # ``new`` is a column dropped at the source before ``old`` took its name (the
            # rename was not made: ``old`` is gone from the source). It goes first.
            first.append(new)
            del cur[new]
        if old in cur and new not in cur:
            cur = {(new if k == old else k): v for k, v in cur.items()}
            done.append((old, new))
    added, widened, rewritten = [], [], []
    for c in wanted.columns:
        if c.name not in cur:
            added.append(c)
            continue
        change = spark_change(cur[c.name], c.type.spark)
        if change == "WIDEN":
            widened.append((c.name, c.type.spark))
        elif change == "REWRITE" or (change == "KEEP" and drop):
            rewritten.append((c.name, c.type.spark))
    dropped = tuple(n for n in cur if drop and n not in wanted.column_names)
    return ColumnChanges(tuple(done), tuple(added), tuple(widened), tuple(rewritten), dropped, dropped_first=tuple(first))


def _q(name: str) -> str:
    if not SAFE_NAME.fullmatch(name):  # names come from the dictionary, checked there
        raise DdlError(f"column name {name!r} is refused")
    return f"`{name}`"


def table_properties(spark: SparkSession, table: str) -> dict[str, str]:
    # A table's properties (a dozen rows of metadata), not its data.
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def structure_scn(spark: SparkSession, table: str, props: dict[str, str] | None = None) -> int:
    """The revision SCN a Delta table's structure follows (-1: not recorded)."""
    value = (props if props is not None else table_properties(spark, table)).get(STRUCTURE_PROPERTY)
    return int(value) if value is not None and value.lstrip("-").isdigit() else -1


def mark_structure(spark: SparkSession, table: str, scn: int) -> None:
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{STRUCTURE_PROPERTY}' = '{int(scn)}')")


def _renamed_and_dropped(df: DataFrame, changes: ColumnChanges) -> DataFrame:
    """``df`` (a table's top-level columns) with ``changes``' renames made and dropped
    columns left out: the rewrite of a table without column mapping."""
    names = {f: renamed_through(changes.renames, f) for f in df.columns if f not in changes.dropped_first}
    return df.select(*[F.col(f"`{f}`").alias(n) for f, n in names.items() if n not in changes.dropped])


def alter_statements(table: str, changes: ColumnChanges, fields: tuple[str, ...] = ("",)) -> list[str]:
    """The ALTER TABLE statements for ``changes`` on a table whose value columns are
    top-level (``fields`` = ("",)) or fields of structs (``("_old.", "_new.")``). Rewrites
    are not among them (``rewrite``)."""
    out = []
    if changes.dropped_first:
        out.append(f"ALTER TABLE {table} DROP COLUMNS ({', '.join(_q(n) for n in changes.dropped_first)})")
    for old, new in changes.renames:
        out += [f"ALTER TABLE {table} RENAME COLUMN {f}{_q(old)} TO {_q(new)}" for f in fields]
    if changes.added:
        cols = ", ".join(f"{f}{_q(c.name)} {c.type.spark}" for c in changes.added for f in fields)
        out.append(f"ALTER TABLE {table} ADD COLUMNS ({cols})")
    for name, spark_type in changes.widened:
        out += [f"ALTER TABLE {table} ALTER COLUMN {f}{_q(name)} TYPE {spark_type}" for f in fields]
    if changes.dropped:
        out.append(f"ALTER TABLE {table} DROP COLUMNS ({', '.join(_q(n) for n in changes.dropped)})")
    return out


def value_types(schema: StructType, struct: str | None) -> dict[str, str]:
    """Name → Spark SQL type of a table's value columns: the fields of ``struct``, or the
    top-level columns not starting with ``_`` (lakestreams' own)."""
    fields = schema[struct].dataType.fields if struct else [f for f in schema.fields if not f.name.startswith("_")]
    return {f.name: f.dataType.simpleString().upper() for f in fields}


def rewrite_casts(schema: StructType, changes: ColumnChanges, struct_fields: tuple[str, ...]) -> list:
    """Select list that casts the rewritten columns (top-level or inside ``struct_fields``)."""
    types = dict(changes.rewritten)
    cols = []
    for f in schema.fields:
        if f.name in struct_fields:
            inner = [
                (F.col(f"{f.name}.{_q(x.name)}").cast(types[x.name]) if x.name in types
                 else F.col(f"{f.name}.{_q(x.name)}")).alias(x.name)
                for x in f.dataType.fields
            ]
            cols.append(F.when(F.col(f.name).isNotNull(), F.struct(*inner)).alias(f.name))
        elif f.name in types:
            cols.append(F.col(_q(f.name)).cast(types[f.name]).alias(f.name))
        else:
            cols.append(F.col(f.name))  # lakestreams' own columns and untouched values
    return cols


def _not_converting(table: str, changes: ColumnChanges) -> DdlError:
    what = ", ".join(f"{n} to {t}" for n, t in changes.rewritten)
    return DdlError(f"{table}: some values do not convert ({what}); the table needs a refresh from a snapshot")


def unconverted(schema: StructType, changes: ColumnChanges, struct_fields: tuple[str, ...]):
    """A condition true on a row where a rewritten value does not convert (non-NULL in,
    NULL out): dbt turns ANSI mode off, so a failed cast would be silent."""
    cond = F.lit(False)
    for name, t in changes.rewritten:
        for col in ([f"{s}.{_q(name)}" for s in struct_fields] or [_q(name)]):
            cond = cond | (F.col(col).isNotNull() & F.expr(f"try_cast({col} AS {t})").isNull())
    return cond


def renames_since(revisions: list[Revision], scn: int) -> list[tuple[str, str]]:
    """(old, new) of the renames the target made at the revisions above ``scn``
    (``target_renames``), in order."""
    return [(old, new) for r, groups in zip(revisions, target_renames(revisions), strict=True) if r.scn > scn
            for g in groups for new, old in g]


def renamed_through(renames: Sequence[tuple[str, str]], name: str) -> str:
    """``name`` after ``renames`` ((old, new), in order): A→B then B→C makes A C; a swap
    through a third name swaps.

    >>> renamed_through([("A", "T"), ("B", "A"), ("T", "B")], "A"), renamed_through([("A", "B"), ("B", "C")], "A")
    ('B', 'C')
    """
    for old, new in renames:
        if name == old:
            name = new
    return name


def renamed_names(names: Column, renames: list[tuple[str, str]]) -> Column:
    """A presence list (sorted names) with ``renames`` ((old, new), in order) applied."""
    def one(x: Column) -> Column:
        for old, new in renames:
            x = F.when(x == F.lit(old), F.lit(new)).otherwise(x)
        return x
    return F.array_sort(F.transform(names, one))


def follow_structure(
    spark: SparkSession, table: str, wanted: TableDef, revisions: list[Revision], app_id: str,
    struct_fields: tuple[str, ...] = (), drop: bool = False, on_alter_fail: str = "CREATE_AS_SELECT",
    done: Callable[[ColumnChanges, int], None] | None = None,
) -> ColumnChanges:
    """Make the Delta table ``table`` (a Storage.table name) hold ``wanted``'s columns:
    renames (column mapping), new columns, widened types in place, then one rewrite for
    the types Delta cannot change (a value that does not convert stops it with an error),
    and (``drop``) columns ``wanted`` lacks are dropped. ``struct_fields``: the structs
    holding the value columns (a change table's ``_old``/``_new``), else top-level columns
    not starting with ``_``. The table records the revision it follows, so a re-run (or a
    table that follows already) changes nothing. Metadata work but for a rewrite.

    A table on the basic Delta protocol (no column mapping: a channel's gold with
    ``gold.column_mapping: false``) takes new columns in place; renames, drops and
    widening rewrite it, together with any other type change.

    ``on_alter_fail``: AdaptDDL OnPreserveAlterTableFail, what a change ALTER TABLE cannot
    make in place does: CREATE_AS_SELECT rewrites the table as selected from itself;
    FAIL_INTEG_JOB raises before anything changes, naming the table and what it needs
    (unless a REFRESH decision since rebuilds the table anyway).

    ``done``: called with what is to change and the revision SCN the table is to follow,
    once nothing but a kill can stop the changes (the policy allows them, every value
    converts) and before the first of them; a re-run after a kill calls it again with what
    is left to do (the callee keys its record by revision, so the first one holds). Top-level
    columns only (gold tables)."""
    if len(revisions) < 2:  # one structure ever: the table was made with it (no metadata read)
        return ColumnChanges()
    last = revisions[-1].scn
    props = table_properties(spark, table)
    since = structure_scn(spark, table, props)
    if since >= last:
        return ColumnChanges()
    schema = spark.table(table.replace("`", "")).schema
    # A table made after the source table was dropped (and created again) never had the
    # names of its earlier life: their renames are not its own.
    dropped = [i for i, r in enumerate(revisions) if r.status == "DROPPED"]
    renames = renames_since(revisions[dropped[-1] + 1:] if dropped else revisions, since)
    # Worked out per struct from the table as it is: a run killed between the _old and the
    # _new statement of a rename left the two structs apart, and its re-run makes the rest.
    per_struct = {f: column_changes(value_types(schema, f), wanted, renames, drop) for f in (struct_fields or (None,))}
    changes = per_struct[struct_fields[-1] if struct_fields else None]
    # Without column mapping only new columns are metadata; renames, drops and widening
    # join the rewrite (renamed and dropped by its select, widened by its casts).
    basic = not struct_fields and props.get("delta.columnMapping.mode", "none") == "none" and bool(
        changes.renames or changes.dropped or changes.widened or changes.dropped_first)
    if basic:
        changes = replace(changes, rewritten=changes.rewritten + changes.widened, widened=())
        per_struct = {None: ColumnChanges(added=changes.added)}
    # A REFRESH decision since (a type change under OnEnrollBreak=REFRESH, a smaller type)
    # rebuilds the table anyway: the policy governs what was to be an ALTER.
    refreshing = any(r.decision == "REFRESH" and r.scn > since for r in revisions)
    if (changes.rewritten or basic) and on_alter_fail == "FAIL_INTEG_JOB" and not refreshing:
        what = [f"{n} to {t}" for n, t in changes.rewritten]
        if basic:  # without column mapping, renames and drops need the rewrite too
            what += [f"rename {o} to {n}" for o, n in changes.renames] + [f"drop {n}" for n in changes.dropped + changes.dropped_first]
        raise DdlError(f"{table}: ALTER TABLE cannot make {', '.join(what)} in place, and OnPreserveAlterTableFail="
                       "FAIL_INTEG_JOB stops the apply here; to go on, set on_preserve_alter_table_fail: "
                       "CREATE_AS_SELECT (the table is rewritten as selected from itself)")
    # The values a rewrite meets are checked once: before anything changes when ``done``
    # is told first (renames made on the frame, as the ALTERs below make them), else
    # right before the rewrite.
    checked = False
    if done is not None and changes:
        if changes.rewritten and not struct_fields:
            ahead = _renamed_and_dropped(spark.table(table.replace("`", "")), changes)
            if ahead.where(unconverted(ahead.schema, changes, ())).limit(1).count():  # 0 or 1
                raise _not_converting(table, changes)
            checked = True
        done(changes, last)
    if any(c.type.spark == "TIMESTAMP_NTZ" for ch in per_struct.values() for c in ch.added) or any(
            t == "TIMESTAMP_NTZ" for ch in per_struct.values() for _, t in ch.widened + ch.rewritten):
        allow_timestamp_ntz(spark, table)
    for f, ch in per_struct.items():
        for statement in alter_statements(table, ch, (f"{f}.",) if f else ("",)):
            spark.sql(statement)  # names checked (SAFE_NAME), types from the type table
            kill_point("ddl.alter")
    present = [p for p in ("_old_present", "_new_present") if p in schema.fieldNames()]
    if renames and present:
        # Presence lists of earlier rows name columns as they were called then.
        olds = F.array(*[F.lit(o) for o, _ in renames])
        cond = reduce(lambda a, b: a | b, [F.arrays_overlap(F.col(p), olds) for p in present])
        DeltaTable.forName(spark, table.replace("`", "")).update(
            cond, {p: renamed_names(F.col(p), renames) for p in present})
    if changes.rewritten or basic:
        current = spark.table(table.replace("`", ""))
        if basic:
            current = _renamed_and_dropped(current, changes)
        if not checked and current.where(unconverted(current.schema, changes, struct_fields)).limit(1).count():
            raise _not_converting(table, changes)
        # Keyed by the revision: a re-run after the rewrite committed does not rewrite again.
        overwrite(current.select(*rewrite_casts(current.schema, changes, struct_fields)), table,
                  f"{app_id}.rewrite", last)
    mark_structure(spark, table, last)
    return changes
