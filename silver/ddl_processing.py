"""A channel's DDL records through GoldenGate's processing (``silver.goldengate``), and
the one name mapping DML and DDL share.

The source dictionary takes every DDL record it can read, whatever the processing says
(two dictionaries: DESIGN.md). The target structure follows a record only when the
processing APPLIED it: an EXCLUDED record, a replicated one (IGNOREREPLICATES) or one
whose error a DDLERROR rule IGNOREs or DISCARDs leaves the target as it was; DISCARD
also puts the record in the error queue; ABEND (or no rule) stops the silver batch.

"Executing" a target statement means the target structure taking it: it fails with the
code Oracle would give (942, 955, 904, 1430, 957, 2260; PARSE, DDL) when the source
dictionary cannot take the record, and with DDL when DDLSUBST changed what the statement
does to the table (the target structure is the source structure shaped by rules, so it
cannot take another change than the source did).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from lakestreams.config import Channel, RuleSpec
from silver.ddl import DdlStatement, Physical, RenameTable, parse_ddl
from silver.evolution import OUTSIDE, DdlReading, action_for
from silver.goldengate import (
    DDL,
    DdlAbend,
    DdlExecutionError,
    DdlFailure,
    DdlRecord,
    GgDdlConfig,
    ObjectName,
    TargetDdl,
    named_in_text,
    process,
)
from silver.rules import Client
from silver.transforms import ordered

#: The code of an AdaptDDL FAIL decision, for DDLERROR rules (``DDLERROR FAIL IGNORE``).
FAIL = "FAIL"
FAIL_HINT = ("AdaptDDL fails the integration: change the channel's adapt_ddl (or add a DDLERROR rule for "
             "FAIL) and run again")


@dataclass(frozen=True)
class Processed:
    """One DDL record after processing: ``reading`` is what the dictionary takes (its
    target decision IGNORE when the target does not follow); ``outcome`` the GoldenGate
    outcome (None without processing); ``discard`` the error-queue reason of a DISCARDED
    record."""

    reading: DdlReading
    scope: str | None = None
    outcome: str | None = None
    target_ddl: tuple[str, ...] = ()
    discard: str | None = None


def _column_extras(columns) -> tuple:
    """What the dictionary's column equality leaves out (a changed default or virtual flag
    is no change of a table's layout) but a CREATE still does: each column's default and
    whether it is virtual. (An ALTER's column specs compare them already.)"""
    return tuple((c.name, c.default, c.virtual) for c in columns)


def _change(stmt: DdlStatement) -> tuple:
    """What a statement does to a table's structure: its names and physical clauses
    (tablespace, storage) left out; defaults and virtual columns in."""
    table = stmt.table and (stmt.table.columns, stmt.table.constraints, _column_extras(stmt.table.columns))
    actions = tuple(a for a in stmt.actions if not isinstance(a, (RenameTable, Physical)))
    if stmt.kind in ("CREATE UNIQUE INDEX", "ALTER INDEX"):  # index names follow MAPDERIVED: not the key
        actions = tuple(replace(a, name=None) for a in actions)
    return stmt.kind, stmt.object_type, actions, table


def process_ddl(
    reading: DdlReading, text: str, tag: str | None, owner: str | None, config: GgDdlConfig | None,
    number_policy: str = "decimal", integrate_schema: str | None = None,
    rename: Callable[[str, str], tuple[str, str]] | None = None,
) -> Processed:
    """``reading`` (``read_ddl`` of the record as captured) through ``config``'s steps.
    Raises ``silver.goldengate.DdlAbend`` when a DDLERROR rule (or none) says ABEND.
    The targets it was applied to follow the reading; where the record has several (MAPs)
    and was not applied to some, those are named in the revisions' ``excluded`` and, for
    a record that empties the table, in ``truncates_excluded`` (with
    ``integrate_schema``, the AdaptDDL IntegrateSchema of the record's owner, as rows'
    targets are named); where it was applied to none, no target follows. ``rename`` (owner,
    table → owner, table: ``rule_renamed``) names the record's table as rule-based renames
    name its rows, before any MAP sees it.

    An AdaptDDL FAIL (the channel's last table dropped, OnEnrollBreak or
    OnAddColumnWithDefault FAIL_INTEG_JOB) is a failure of the target's statement, code
    FAIL: without DDL processing it stops the silver batch, as HVR's job fails; with it,
    DDLERROR rules decide (ABEND by default, IGNORE or DISCARD by a rule)."""
    if config is None:
        if reading.decision == "FAIL":
            raise DdlAbend(f"{FAIL}: {reading.reason}; {FAIL_HINT}", DdlFailure(FAIL, reading.reason),
                           DdlRecord(text, tag or None, owner))
        return Processed(reading)

    # Read once for every target; a record read_ddl could not read is an ERROR reading.
    source = None if reading.decision == "ERROR" else parse_ddl(text, number_policy)

    def execute(target: TargetDdl) -> None:
        if source is None:
            raise DdlExecutionError(reading.code or DDL, reading.reason)
        if reading.decision == "FAIL":
            raise DdlExecutionError(FAIL, f"{reading.reason}; {FAIL_HINT}")
        stmt = target.statement
        if stmt is not None and stmt.name is not None and target.name is not None:
            # _change leaves names out (a MAP changes them): the name must still be the target's.
            acts_on = ObjectName(stmt.owner or target.name.owner, stmt.name)
            if acts_on != target.name:
                raise DdlExecutionError(DDL, f"DDLSUBST made the statement act on {acts_on}, not on its target "
                                             f"{target.name}")
        if target.statement is not None and _change(target.statement) != _change(source):
            raise DdlExecutionError(DDL, "DDLSUBST changed what the statement does to the table; the target "
                                         "follows the source dictionary and cannot take another change")

    record = DdlRecord(text, tag or None, owner)
    if rename is not None and source is not None and source.name is not None:
        # Rule-based renames first (as rows'), then the MAPs: the table's name is replaced
        # where it is written, the rest stays as captured.
        base = (source.owner or owner or "", source.name)
        to = rename(*base)
        named = named_in_text(text, 0, ObjectName(*to)) if to != base else None
        if named is not None:
            record = DdlRecord(named[0], tag or None, to[0])
    out = process(record, config, execute, number_policy=number_policy)
    why = f"GoldenGate {out.kind}: {out.reason or 'no target'}"
    discard = why if out.kind == "DISCARDED" else None
    if not any(t.kind == "APPLIED" for t in out.targets):
        return Processed(not_followed(reading, why), out.scope, out.kind, (), discard)
    # Each target takes the statement on its own (several MAPs): those it was not applied
    # to do not follow the revision; the others do.
    left = {_target_key(t.name, owner, integrate_schema): t for t in out.targets if t.kind != "APPLIED"}
    if not left:
        return Processed(reading, out.scope, out.kind, out.texts)
    names = tuple(sorted(left))
    # A new table's first structure is every target's (as ``not_followed`` keeps it).
    follows = not reading.new_table and any(rev.decision != OUTSIDE for _, rev in reading.revisions)
    if not follows and reading.truncates is None:
        return Processed(reading, out.scope, out.kind, out.texts, discard)
    revisions = tuple((k, rev if not follows or rev.decision == OUTSIDE else replace(rev, excluded=names))
                      for k, rev in reading.revisions)
    not_following = "; ".join(f"{n} does not follow ({t.kind}: {t.reason})" for n, t in sorted(left.items()))
    reading = replace(reading, revisions=revisions, reason=f"{reading.reason}; {not_following}",
                      truncates_excluded=tuple(sorted({*reading.truncates_excluded, *names}))
                      if reading.truncates is not None else ())
    return Processed(reading, out.scope, out.kind, out.texts, discard)


def _target_key(name: ObjectName | None, owner: str | None, integrate_schema: str | None) -> str:
    """A DDL target's name as ``Revision.excluded`` keeps it: the MAP's target (the
    source object where no MAP names it), then the AdaptDDL IntegrateSchema, as
    ``target_names`` names rows' targets."""
    schema = (name.owner if name is not None and name.owner else owner) or ""
    return f"{(integrate_schema or schema).upper()}.{name.name if name is not None else ''}"


def not_followed(reading: DdlReading, why: str) -> DdlReading:
    """``reading`` for a record the target does not follow (``why``: GoldenGate did not
    apply it, or the apply rules discarded it). The source dictionary still takes it; the
    target keeps its structure and rows (a new table still gets its first structure: its
    rows are replicated by the rules)."""
    revisions = tuple((k, rev if reading.new_table or rev.decision == OUTSIDE else replace(rev, decision="IGNORE"))
                      for k, rev in reading.revisions)
    return replace(reading, decision="IGNORE", reason=f"{why}; source: {reading.reason}", revisions=revisions,
                   truncates=None, truncates_excluded=(), reloads=None)


def rule_renamed(clients: Sequence[Client], source: str, owner: str, name: str) -> tuple[str, str]:
    """The name the clients' declarative renames (RENAME_TABLE, RENAME_SCHEMA) give the
    rows of a source table of ``source``: the capture's, then the apply's, in their order,
    each attached to a DML rule of the client's positive rule set that covers the table
    (global, its schema, the table or a subset of it, for that source database; a rule
    given as a condition may keep anything). A DDL record is named by it before its MAPs,
    as its rows are. The renames are read by table, not by the rule that kept the record:
    Oracle keeps a table's DDL under another rule than its DML."""
    for streams_type in ("capture", "apply"):
        client = next((c for c in clients if c.streams_type == streams_type), None)
        if client is None or not client.transformations:
            continue
        covering = {r.name for r in (client.positive.rules if client.positive else ())
                    if r.kind == "DML" and _covers(r.spec, source, owner, name)}
        for t in ordered([t for t in client.transformations if t.rule in covering]):
            if t.kind == "rename_table" and (owner, name) == (t.owner, t.table):
                owner, name = t.to_owner, t.to_table
            elif t.kind == "rename_schema" and owner == t.owner:
                owner = t.to_owner
    return owner, name


def _covers(spec: RuleSpec | None, source: str, owner: str, name: str) -> bool:
    """A rule (its request) can keep row LCRs of ``source``'s table ``owner.name``."""
    if spec is None or spec.level == "CONDITION":
        return True
    if spec.source_database is not None and spec.source_database.upper() != source.upper():
        return False
    if spec.level == "GLOBAL":
        return True
    if spec.level == "SCHEMA":
        return spec.owner == owner
    return (spec.owner, spec.table) == (owner, name)


def target_names(channel: Channel, source_owner: str, owner: str, name: str) -> list[tuple[str, str]]:
    """Where rows of a source table go. One mechanism for DML and DDL alike, in order:
    the rule-based renames (already in ``owner``/``name``), then every MAP naming that
    table (several MAPs: several targets), then the AdaptDDL IntegrateSchema of the
    action whose CaptureSchema is ``source_owner``."""
    names = [(owner, name)]
    config = channel.ddl_processing
    if config is not None:
        here = ObjectName(owner, name)
        mapped = [tuple(m.target_for(here)) for m in config.maps if m.matches(here)]
        names = mapped or names
    action = action_for(channel.adapt_actions(), source_owner)
    if action is not None and action.integrate_schema:
        names = [(action.integrate_schema.upper(), n) for _, n in names]
    return list(dict.fromkeys(names))
