"""HVR AdaptDDL decisions, row by row of the reference's behaviour table. Pure Python."""

from __future__ import annotations

import pytest

from lakestreams.errors import ConfigError
from silver.adaptddl import AdaptDdl, adapt, matches, table_to_add, type_change
from silver.ddl import AddColumn, DropColumn, ModifyColumn, RenameColumn, parse_ddl
from silver.dictionary import parse_create_table
from silver.evolution import DECLARED, OUTSIDE, Revision, read_ddl
from silver.types import ColumnType

T = parse_create_table("CREATE TABLE hr.t (id NUMBER(6) PRIMARY KEY, name VARCHAR2(12), amount NUMBER(8,2), note VARCHAR2(30))")
ON = AdaptDdl("*")


def decide(text: str, action: AdaptDdl | None = ON, in_channel: bool = True, last: bool = False, added=None):
    return adapt(parse_ddl(text), action, T, in_channel, last, added)


def test_patterns_of_the_reference():
    """AddTablePattern=t*, IgnoreTablePattern=tmp*|temp* and AddTablePattern=*x: tab_1 and
    tmp_x are added, tmp_y is not (an ignore narrows only its own action)."""
    actions = (AdaptDdl("t*", "tmp*|temp*"), AdaptDdl("*x"))
    assert [n for n in ("tab_1", "tmp_x", "tmp_y", "temp_1", "zzz") if table_to_add(actions, "HR", n, "HR")] == [
        "tab_1", "tmp_x"]
    assert matches("o?_line_*", "OR_LINE_7") and not matches("o?_line_*", "ORD_LINE_7")
    assert matches("ord_[a-f]", "ORD_C") and not matches("ord_[a-f]", "ORD_G")


def test_capture_and_integrate_schema():
    actions = (AdaptDdl("*", capture_schema="aa1", integrate_schema="bb1"),
               AdaptDdl("*", capture_schema="AA2", integrate_schema="bb2"))
    assert table_to_add(actions, "AA1", "TAB", "HR") == ("BB1", "TAB")
    assert table_to_add(actions, "aa2", "TAB", "HR") == ("BB2", "TAB")
    assert table_to_add(actions, "HR", "TAB", "HR") is None  # only the capture schemas
    assert table_to_add((AdaptDdl("*"),), "HR", "TAB", "hr") == ("HR", "TAB")  # the current schema
    assert table_to_add((AdaptDdl("*"),), "SALES", "TAB", "HR") is None


@pytest.mark.parametrize("kwargs, message", [
    ({"on_drop_table": "DELETE"}, "OnDropTable: 'DELETE' is not one of KEEP"),
    ({"add_table_pattern": "a||b"}, "empty alternative"),
    ({"add_table_pattern": "ord_[a-f"}, "unclosed range"),
    ({"ignore_table_pattern": "tmp*"}, "only narrows an AddTablePattern"),
    ({"integrate_schema": "bb"}, "give CaptureSchema too"),
    ({"on_preserve_alter_table_fail": "WARNING"}, "WARNING is not supported: the target would keep a column type"),
    ({"on_preserve_alter_table_fail": "DROP"}, "OnPreserveAlterTableFail: 'DROP' is not one of CREATE_AS_SELECT"),
])
def test_bad_actions_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        AdaptDdl(**kwargs)


def test_create_table():
    assert decide("CREATE TABLE hr.n (a NUMBER)", in_channel=False, added=("HR", "N")).target == "ADD"
    assert decide("CREATE TABLE hr.n (a NUMBER)", in_channel=False).target == "IGNORE"  # no pattern adds it
    assert decide("CREATE TABLE hr.n (a NUMBER)", action=None, in_channel=False).target == "IGNORE"
    # Drop then create: the table is still in the channel; its target is refreshed.
    assert decide("CREATE TABLE hr.t (a NUMBER)").target == "REFRESH"


@pytest.mark.parametrize("policy, target, drop_target", [
    ("KEEP", "IGNORE", False), ("DROP_FROM_CHANNEL_ONLY", "DROP", False), ("DROP_FROM_CHANNEL_AND_TARGET", "DROP", True),
])
def test_drop_table(policy, target, drop_target):
    d = decide("DROP TABLE hr.t PURGE", action=AdaptDdl("*", on_drop_table=policy))
    assert (d.target, d.drop_target) == (target, drop_target)
    if policy == "KEEP":
        assert d.warnings
    # The last table of a channel is never dropped.
    if policy != "KEEP":
        assert decide("DROP TABLE hr.t", action=AdaptDdl("*", on_drop_table=policy), last=True).target == "FAIL"


def test_add_column_with_and_without_default():
    d = decide("ALTER TABLE hr.t ADD (x NUMBER)")
    assert (d.target, [type(a) for a in d.alters]) == ("ALTER", [AddColumn])
    assert decide("ALTER TABLE hr.t ADD (x NUMBER DEFAULT 1)").target == "ALTER"  # empty default: no distinction
    assert decide("ALTER TABLE hr.t ADD (x NUMBER DEFAULT 1)",
                  AdaptDdl("*", on_add_column_with_default="REFRESH")).target == "REFRESH"
    assert decide("ALTER TABLE hr.t ADD (x NUMBER DEFAULT 1)",
                  AdaptDdl("*", on_add_column_with_default="FAIL_INTEG_JOB")).target == "FAIL"
    d = decide("ALTER TABLE hr.t ADD (x NUMBER DEFAULT 1)", AdaptDdl("*", on_add_column_with_default="WARNING"))
    assert d.target == "ALTER" and d.warnings


def test_drop_column_and_keep_existing_structure():
    assert [type(a) for a in decide("ALTER TABLE hr.t DROP COLUMN note").alters] == [DropColumn]
    d = decide("ALTER TABLE hr.t DROP COLUMN note", AdaptDdl("*", keep_existing_structure=True))
    assert (d.target, d.alters) == ("IGNORE", ()) and "KeepExistingStructure" in d.reason


def test_modify_column_bigger_smaller_and_type_change():
    assert decide("ALTER TABLE hr.t MODIFY name VARCHAR2(40)").target == "ALTER"  # bigger: ALTER, no refresh
    assert decide("ALTER TABLE hr.t MODIFY amount NUMBER(12,2)").target == "ALTER"
    assert decide("ALTER TABLE hr.t MODIFY name VARCHAR2(5)").target == "REFRESH"  # smaller: ALTER and refresh
    d = decide("ALTER TABLE hr.t MODIFY (name VARCHAR2(5) NOT NULL)", AdaptDdl("*", keep_existing_structure=True))
    assert d.target == "ALTER" and d.alters[0].column.type is None and d.alters[0].column.nullable is False
    assert decide("ALTER TABLE hr.t MODIFY amount VARCHAR2(20)").target == "REFRESH"  # NUMBER -> VARCHAR2
    assert decide("ALTER TABLE hr.t MODIFY amount VARCHAR2(20)", AdaptDdl("*", on_enroll_break="FAIL_INTEG_JOB")).target == "FAIL"
    d = decide("ALTER TABLE hr.t MODIFY amount VARCHAR2(20)", AdaptDdl("*", on_enroll_break="WARNING"))
    assert d.target == "ALTER" and d.warnings and isinstance(d.alters[0], ModifyColumn)
    assert decide("ALTER TABLE hr.t MODIFY note NULL").target == "ALTER"


@pytest.mark.parametrize("text", [
    "ALTER TABLE hr.t TRUNCATE PARTITION p1",
    "ALTER TABLE hr.t EXCHANGE PARTITION p1 WITH TABLE hr.x",
    "ALTER TABLE hr.t DROP SUBPARTITION p1",
    "ALTER TABLE hr.t MODIFY (note ENCRYPT USING 'AES256' NO SALT)",
])
def test_partition_and_encryption_changes_are_enroll_breaks(text):
    """OnEnrollBreak covers every break of the enroll information (HVR: "data type
    changes, partition changes etc."), not only type changes: FAIL_INTEG_JOB fails the
    statement, WARNING keeps the target as it is with a warning, REFRESH (the default)
    refreshes."""
    assert decide(text).target == "REFRESH"
    failed = decide(text, AdaptDdl("*", on_enroll_break="FAIL_INTEG_JOB"))
    assert failed.target == "FAIL" and "OnEnrollBreak=FAIL_INTEG_JOB" in failed.reason
    warned = decide(text, AdaptDdl("*", on_enroll_break="WARNING"))
    assert (warned.target, warned.reload, warned.alters) == ("IGNORE", False, ())
    assert warned.warnings and "no refresh (OnEnrollBreak=WARNING)" in warned.reason
    # A partition operation that changes no rows is no break, whatever the policy.
    assert decide("ALTER TABLE hr.t MERGE PARTITIONS p1, p2 INTO PARTITION p3",
                  AdaptDdl("*", on_enroll_break="FAIL_INTEG_JOB")).target == "IGNORE"


def test_rename_column_and_table():
    assert [type(a) for a in decide("ALTER TABLE hr.t RENAME COLUMN note TO remark").alters] == [RenameColumn]
    # RENAME TO is a DROP of the old name (OnDropTable) and a CREATE of the new.
    d = decide("ALTER TABLE hr.t RENAME TO t2", AdaptDdl("*", on_drop_table="DROP_FROM_CHANNEL_AND_TARGET"))
    assert (d.target, d.drop_target) == ("DROP", True)
    assert decide("RENAME t TO t2").target == "DROP"


@pytest.mark.parametrize("text, target", [
    ("TRUNCATE TABLE hr.t", "TRUNCATE"),
    ("ALTER TABLE hr.t TRUNCATE PARTITION p1", "REFRESH"),
    ("ALTER TABLE hr.t EXCHANGE PARTITION p1 WITH TABLE hr.x", "REFRESH"),
    ("ALTER TABLE hr.t MERGE PARTITIONS p1, p2 INTO PARTITION p3", "IGNORE"),
    ("ALTER TABLE hr.t SPLIT PARTITION p1 AT (5) INTO (PARTITION a, PARTITION b)", "IGNORE"),
    ("ALTER TABLE hr.t MOVE TABLESPACE users", "IGNORE"),
    # Column properties: how a column is stored or shown, not its type or values. An
    # encryption change refreshes (made from the history: the values captured are clear).
    ("ALTER TABLE hr.t MODIFY (note ENCRYPT USING 'AES256' NO SALT)", "REFRESH"),
    ("ALTER TABLE hr.t MODIFY (note DECRYPT)", "REFRESH"),
    ("ALTER TABLE hr.t MODIFY note INVISIBLE", "IGNORE"),
    # With a wider type, the encryption change still refreshes.
    ("ALTER TABLE hr.t MODIFY (note VARCHAR2(40) ENCRYPT NOT NULL)", "REFRESH"),
    ("ALTER TABLE hr.t MODIFY (note VARCHAR2(40) INVISIBLE)", "ALTER"),
    ("ALTER TABLESPACE users ADD DATAFILE 'x.dbf'", "IGNORE"),
    ("ALTER TABLE hr.t ADD CONSTRAINT fk FOREIGN KEY (id) REFERENCES hr.p (id)", "IGNORE"),
    ("ALTER TABLE hr.t ADD CONSTRAINT u UNIQUE (name)", "ALTER"),
    ("CREATE SEQUENCE hr.s", "IGNORE"),
    ("DROP SEQUENCE hr.s", "IGNORE"),
    ("CREATE OR REPLACE VIEW hr.v AS SELECT 1 FROM dual", "IGNORE"),
    ("DROP SYNONYM hr.s", "IGNORE"),
    ("DROP TRIGGER hr.trg", "IGNORE"),
    ("ALTER FUNCTION hr.f COMPILE", "IGNORE"),
    ("ALTER USER bob IDENTIFIED BY x", "IGNORE"),
    ("DROP ROLE r", "IGNORE"),
    ("DROP DIRECTORY d", "IGNORE"),
    ("ALTER INDEX hr.i REBUILD", "IGNORE"),
])
def test_other_statements_of_the_table(text, target):
    assert decide(text).target == target


def test_refreshes_the_change_history_cannot_make_need_a_snapshot():
    """A REFRESH reloads the target from a snapshot (``reload``) where rows changed at the
    source without row changes, or a source default fills the existing rows; a type change
    or a smaller type is made from the rows gold holds (their values converted)."""
    reloads = {text: (decide(text, action).target, decide(text, action).reload) for text, action in (
        ("ALTER TABLE hr.t TRUNCATE PARTITION p1", ON),
        ("ALTER TABLE hr.t EXCHANGE SUBPARTITION p1 WITH TABLE hr.x", ON),
        ("ALTER TABLE hr.t DROP PARTITION p1", ON),
        ("ALTER TABLE hr.t ADD (x NUMBER DEFAULT 1)", AdaptDdl("*", on_add_column_with_default="REFRESH")),
        ("ALTER TABLE hr.t MODIFY amount VARCHAR2(20)", ON),
        ("ALTER TABLE hr.t MODIFY name VARCHAR2(5)", ON),
        ("ALTER TABLE hr.t ADD (x NUMBER)", ON),
    )}
    assert list(reloads.values()) == [("REFRESH", True), ("REFRESH", True), ("REFRESH", True), ("REFRESH", True),
                                      ("REFRESH", False),
                                      ("REFRESH", False), ("ALTER", False)]
    # A table without a key (every column is its replication key) gaining or losing a
    # column is refreshed; its rows still follow from the history.
    keyless = parse_create_table("CREATE TABLE hr.k (a NUMBER, b VARCHAR2(5))")
    for text in ("ALTER TABLE hr.k ADD (c NUMBER)", "ALTER TABLE hr.k DROP COLUMN b"):
        d = adapt(parse_ddl(text), ON, keyless, True)
        assert (d.target, d.reload) == ("REFRESH", False) and "no key" in d.reason
    assert adapt(parse_ddl("ALTER TABLE hr.k MODIFY b VARCHAR2(9)"), ON, keyless, True).target == "ALTER"
    # A LOB is no key column: adding one leaves the key as it was; nor is a virtual column.
    assert adapt(parse_ddl("ALTER TABLE hr.k ADD (doc CLOB)"), ON, keyless, True).target == "ALTER"
    assert adapt(parse_ddl("ALTER TABLE hr.k ADD (v NUMBER AS (a * 2))"), ON, keyless, True).target == "ALTER"


def test_types_sqlglot_does_not_build_are_compared_by_their_text():
    """MODIFY of a RAW, ROWID or XMLTYPE column: RAW(16) to RAW(32) widens, to RAW(8)
    narrows; the others are the same type or another one, never an unreadable record."""
    t = parse_create_table("CREATE TABLE hr.r (id NUMBER PRIMARY KEY, r RAW(16), u UROWID, x XMLTYPE)")
    got = {text: adapt(parse_ddl(f"ALTER TABLE hr.r MODIFY ({text})"), ON, t, True).target
           for text in ("r RAW(32)", "r RAW(8)", "u UROWID", "u VARCHAR2(40)", "x XMLTYPE NOT NULL")}
    assert got == {"r RAW(32)": "ALTER", "r RAW(8)": "REFRESH", "u UROWID": "ALTER", "u VARCHAR2(40)": "REFRESH",
                   "x XMLTYPE NOT NULL": "ALTER"}


def test_the_readings_name_the_table_a_snapshot_must_reload():
    _, readings = _read_all([
        "CREATE TABLE app.tab_keep (id NUMBER PRIMARY KEY)",
        "CREATE TABLE app.tmp_z (id NUMBER PRIMARY KEY)",   # outside the channel
        "ALTER TABLE app.tmp_z RENAME TO tab_z",            # renamed in: its rows are in no change
        "ALTER TABLE app.tab_z RENAME TO tab_y",            # in the channel under both names
        "ALTER TABLE app.tab_keep TRUNCATE PARTITION p1",
        "ALTER TABLE app.tab_keep MODIFY (id VARCHAR2(10))",
        "ALTER TABLE app.tab_y RENAME TO temp_y",            # out of the channel: nothing to load
    ], PATTERNS)
    assert [r.reloads for r in readings] == [None, None, ("APP", "TAB_Z"), ("APP", "TAB_Y"), ("APP", "TAB_KEEP"), None,
                                             None]
    assert "a snapshot loads its target" in readings[2].reason


def test_without_adaptddl_the_target_never_follows():
    for text in ("ALTER TABLE hr.t ADD (x NUMBER)", "ALTER TABLE hr.t DROP COLUMN note", "DROP TABLE hr.t"):
        assert decide(text, action=None).target == "IGNORE"


@pytest.mark.parametrize("old, new, kind", [
    ("VARCHAR2(5)", "VARCHAR2(12)", "WIDEN"), ("VARCHAR2(12)", "VARCHAR2(5)", "NARROW"),
    ("NUMBER(8, 2)", "NUMBER(10, 2)", "WIDEN"), ("NUMBER(8, 2)", "NUMBER(8, 3)", "NARROW"),
    ("NUMBER(8, 2)", "NUMBER", "WIDEN"), ("NUMBER", "NUMBER(8)", "NARROW"), ("NUMBER(5)", "VARCHAR2(5)", "CHANGE"),
    ("DATE", "TIMESTAMP", "CHANGE"), ("CHAR(3)", "VARCHAR2(3)", "WIDEN"), ("NUMBER(5)", "NUMBER(5)", "SAME"),
])
def test_type_changes(old, new, kind):
    assert type_change(ColumnType(old, "x"), ColumnType(new, "x")) == kind


def _read_all(statements: list[str], actions: tuple[AdaptDdl, ...], history: dict | None = None) -> tuple[dict, list]:
    """Each statement read in turn (SCN 100, 110, …) into one source's revisions."""
    history, readings = dict(history or {}), []
    for i, text in enumerate(statements):
        reading = read_ddl(history, text, 100 + 10 * i, "APP", actions)
        for key, rev in reading.revisions:
            history[key] = [*history.get(key, []), rev]
        readings.append(reading)
    return history, readings


PATTERNS = (AdaptDdl("t*", "tmp*|temp*", capture_schema="app"),)


def test_a_table_no_add_table_pattern_adds_stays_outside_the_channel():
    history, readings = _read_all([
        "CREATE TABLE app.tmp_y (id NUMBER PRIMARY KEY)",
        "ALTER TABLE app.tmp_y ADD (note VARCHAR2(5))",
        "TRUNCATE TABLE app.tmp_y",
        "CREATE TABLE app.tab_1 (id NUMBER PRIMARY KEY)",
        "DROP TABLE app.tmp_y",
        "CREATE TABLE app.tmp_y (id NUMBER PRIMARY KEY)",
    ], PATTERNS)
    assert [(r.decision, r.truncates) for r in readings] == [
        ("IGNORE", None), ("IGNORE", None), ("IGNORE", None), ("ADD", None), ("IGNORE", None), ("IGNORE", None)]
    assert "no AddTablePattern adds APP.TMP_Y" in readings[0].reason
    # The source dictionary follows it: every revision, none the target takes.
    assert [(r.scn, r.status, r.decision) for r in history[("APP", "TMP_Y")]] == [
        (100, "TABLE", OUTSIDE), (110, "TABLE", OUTSIDE), (140, "DROPPED", OUTSIDE), (150, "TABLE", OUTSIDE)]
    assert history[("APP", "TMP_Y")][1].table.column_names == ("ID", "NOTE")
    # A table outside is no table of the channel: TAB_1 is its last.
    _, [dropped] = _read_all(["DROP TABLE app.tab_1"], PATTERNS, history)
    assert dropped.decision == "FAIL"


def test_renames_and_declarations_bring_tables_in_and_out_of_the_channel():
    declared = {("APP", "TMP_D"): [Revision(-1, parse_create_table("CREATE TABLE app.tmp_d (id NUMBER PRIMARY KEY)"),
                                            decision=DECLARED)]}
    history, readings = _read_all([
        "CREATE TABLE app.tab_keep (id NUMBER PRIMARY KEY)",  # so that no table here is the channel's last
        "CREATE TABLE app.tmp_z (id NUMBER PRIMARY KEY)",
        "ALTER TABLE app.tmp_z RENAME TO tab_z",     # joins under its new name
        "ALTER TABLE app.tab_z RENAME TO temp_z",    # and leaves (OnDropTable) for a name no pattern adds
        "CREATE TABLE app.tmp_d (id NUMBER PRIMARY KEY)",  # declared in the channel file: in the channel
        "DROP TABLE app.tmp_d",                      # leaves the channel
        "CREATE TABLE app.tmp_d (id NUMBER PRIMARY KEY)",  # new to the channel again: the patterns decide
    ], PATTERNS, declared)
    assert [r.decision for r in readings] == ["ADD", "IGNORE", "ADD", "DROP", "ADD", "DROP", "IGNORE"]
    assert [rev.decision for rev in history[("APP", "TAB_Z")]] == ["ADD", "DROP"]
    assert [rev.decision for rev in history[("APP", "TEMP_Z")]] == [OUTSIDE]
    assert [rev.decision for rev in history[("APP", "TMP_D")]] == [DECLARED, "ADD", "DROP", OUTSIDE]
    # Where no AddTablePattern covers the schema, every new table joins.
    _, [created] = _read_all(["CREATE TABLE app.tmp_q (id NUMBER PRIMARY KEY)"], (AdaptDdl(),))
    assert created.decision == "ADD"


def test_declarations_current_schema_and_an_earlier_life_decide_membership():
    # Declared in the channel file: in the channel whatever the patterns say, also when
    # created again after a DROP.
    _, readings = _read_all(["CREATE TABLE app.tab_k (id NUMBER PRIMARY KEY)",
                             "CREATE TABLE app.tmp_d (id NUMBER PRIMARY KEY)", "DROP TABLE app.tmp_d",
                             "CREATE TABLE app.tmp_d (id NUMBER PRIMARY KEY)"], PATTERNS)
    assert [r.decision for r in readings] == ["ADD", "IGNORE", "IGNORE", "IGNORE"]
    history: dict = {}
    for i, text in enumerate(["CREATE TABLE app.tab_k (id NUMBER PRIMARY KEY)",
                              "CREATE TABLE app.tmp_d (id NUMBER PRIMARY KEY)", "DROP TABLE app.tmp_d",
                              "CREATE TABLE app.tmp_d (id NUMBER PRIMARY KEY)"]):
        reading = read_ddl(history, text, 100 + i, "APP", PATTERNS, declared=frozenset({("APP", "TMP_D")}))
        for key, rev in reading.revisions:
            history[key] = [*history.get(key, []), rev]
    assert [r.decision for r in history[("APP", "TMP_D")]] == ["ADD", "DROP", "REFRESH"]
    # An AddTablePattern without CaptureSchema covers the record's current schema only.
    for current, decision in (("APP", "IGNORE"), ("HR", "ADD")):
        reading = read_ddl({}, "CREATE TABLE app.tmp_q (id NUMBER PRIMARY KEY)", 100, "APP",
                           (AdaptDdl("t*", "tmp*"),), current_schema=current)
        assert reading.decision == decision, current
    # A table that left the channel, stayed out, and is added again is emptied: its target
    # holds its earlier life's rows (OnDropTable=DROP_FROM_CHANNEL_ONLY kept them).
    once_in = {("APP", "TMP_E"): [Revision(100, parse_create_table("CREATE TABLE app.tmp_e (id NUMBER PRIMARY KEY)"),
                                           decision="ADD")]}
    history, readings = _read_all(["CREATE TABLE app.tab_k (id NUMBER PRIMARY KEY)", "DROP TABLE app.tmp_e",
                                   "CREATE TABLE app.tmp_e (id NUMBER PRIMARY KEY)", "DROP TABLE app.tmp_e"],
                                  PATTERNS, once_in)
    assert [r.decision for r in readings] == ["ADD", "DROP", "IGNORE", "IGNORE"]
    _, [back] = _read_all(["CREATE TABLE app.tmp_e (id NUMBER PRIMARY KEY)"], (AdaptDdl("t*|tmp_e"),), history)
    assert (back.decision, back.truncates) == ("REFRESH", ("APP", "TMP_E"))


def test_a_target_dropped_with_its_table_stays_dropped_when_the_table_comes_back_outside():
    from gold.plan import TargetPlan
    from gold.structure import dropped_targets
    from silver.evolution import DROPS_TARGET

    t = parse_create_table("CREATE TABLE app.tab_g (id NUMBER PRIMARY KEY)")
    target = TargetPlan("app__tab_g", "APP", "TAB_G", t, "plan__app__tab_g", (("DBS1", "APP", "TAB_G"),))
    revs = [Revision(100, t), Revision(110, t, status="DROPPED", decision=DROPS_TARGET)]
    assert dropped_targets({("DBS1", "APP", "TAB_G"): revs}, [target]) == [target]
    back_outside = [*revs, Revision(120, t, decision=OUTSIDE)]
    assert dropped_targets({("DBS1", "APP", "TAB_G"): back_outside}, [target]) == [target]
    back_in = [*revs, Revision(120, t, decision="ADD")]
    assert dropped_targets({("DBS1", "APP", "TAB_G"): back_in}, [target]) == []
