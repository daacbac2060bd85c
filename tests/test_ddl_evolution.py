"""DDL records change the source dictionary and, by the AdaptDDL decision, the target:
records in, change tables, gold tables and the DDL log out. DDL is a barrier: rows
before and after a DDL in one batch are each read with their own revision."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

import pytest
from conftest import make_channel, queued, table_versions, write_lines
from records import Txn

from gold import structure
from gold.snapshot import pending_refreshes
from lakestreams.audit import run_audit
from lakestreams.config import Channel
from lakestreams.delta_io import table_names
from lakestreams.pipeline import evolve_gold, format_ddl_log, format_evolution, run_pipeline
from silver.changes import change_table_name
from silver.evolution import structure_scn

SRC = "DBS1.EXAMPLE.COM"
EMP_DDL = ("CREATE TABLE hr.emp (id NUMBER(4) NOT NULL, name VARCHAR2(10), code NUMBER(5), "
           "CONSTRAINT emp_pk PRIMARY KEY (id))")


def ddl(txid: str, scn: int, text: str, verb: str = "ALTER TABLE", name: str = "EMP", owner: str = "HR") -> list[dict]:
    t = Txn(txid, scn).ddl(text, owner=owner, name=name)
    t.records[0]["command_type"] = verb
    return t.commit()


def ins(txid: str, scn: int, row: dict, table: str = "EMP", owner: str = "HR") -> list[dict]:
    return Txn(txid, scn).row("INSERT", table, new=row, owner=owner).commit()


def upd(txid: str, scn: int, key: int, new: dict, table: str = "EMP") -> list[dict]:
    return Txn(txid, scn).row("UPDATE", table, old={"ID": key}, new=new).commit()


def first_run(spark, ch, code: int = 7) -> None:
    """HR.EMP created, one row (ID 1, ann, ``code``) inserted, applied to gold."""
    write_lines(ch, "src", "f1.jsonl", Scenario("EMP").created(code))
    run_pipeline(spark, ch)


def gold(spark, ch, table: str = "hr__emp") -> dict:
    df = spark.table(ch.storage.table("gold", table).replace("`", ""))
    values = sorted(c for c in df.columns if not c.startswith("_"))
    return {"columns": values, "rows": {tuple(r[c] for c in values) for r in df.collect()}}


def gold_type(spark, ch, column: str, table: str = "hr__emp") -> str:
    return spark.table(ch.storage.table("gold", table).replace("`", "")).schema[column].dataType.simpleString()


def change_fields(spark, ch, name: str = "EMP") -> dict[str, str]:
    t = ch.storage.table("silver", change_table_name(SRC, "HR", name)).replace("`", "")
    return {f.name: f.dataType.simpleString() for f in spark.table(t).schema["_new"].dataType.fields}


def ddl_log(spark, ch, *names: str) -> list[tuple]:
    """The DDL log in SCN order: of the objects ``names``, or all of it."""
    log = spark.table(ch.storage.table("silver", "ddl_log").replace("`", ""))
    if names:
        log = log.where(log["object_name"].isin(*names))
    return [(r["commit_scn"], r["statement"], r["decision"]) for r in log.orderBy("commit_scn").collect()]


# --- one channel, a table per scenario ----------------------------------------------------
# Each scenario below has a table of its own (transaction ids start with its name), so the
# whole module costs three pipeline runs: the first landing (each table created and loaded,
# and two scenarios whole), the second (the DDL under test with rows on both sides), and a
# re-run that must change nothing. Scenarios that need a channel of their own (its only
# table; a policy) keep one.


class Scenario:
    """A table ``<owner>.<name>`` created as EMP is, and its records."""

    def __init__(self, name: str, owner: str = "HR"):
        self.name, self.owner = name, owner
        self.gold_table = f"{owner.lower()}__{name.lower()}"

    def ddl(self, txid: str, scn: int, text: str, verb: str = "ALTER TABLE") -> list[dict]:
        text = text.replace("hr.emp", f"{self.owner.lower()}.{self.name.lower()}")
        return ddl(f"{self.name}.{txid}", scn, text, verb, self.name, self.owner)

    def ins(self, txid: str, scn: int, row: dict) -> list[dict]:
        return ins(f"{self.name}.{txid}", scn, row, self.name, self.owner)

    def upd(self, txid: str, scn: int, key: int, new: dict) -> list[dict]:
        return upd(f"{self.name}.{txid}", scn, key, new, self.name)

    def created(self, code: int = 7) -> list[dict]:
        """The table created and one row (ID 1, ann, ``code``) inserted."""
        return [*self.ddl("d1", 100, EMP_DDL, "CREATE TABLE"), *self.ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": code})]


ADDED, RENAMED, WIDENED, RETYPED, DROPPED, TRUNCATED, REMADE = (
    Scenario(n) for n in ("ADDED", "RENAMED", "WIDENED", "RETYPED", "DROPPED", "TRUNCATED", "REMADE"))
#: Created, loaded and dropped within one landing (HVR's "CREATE TABLE followed quickly by
#: DROP TABLE"): both statements are processed one by one, as HVR does once it has seen the
#: CREATE; HR's OnDropTable keeps the target, with what was applied before the DROP.
FLEETING = Scenario("FLEETING")
#: HVR's rows for statements the target does not follow (physical, secondary index, foreign
#: key, tablespace, sequence, trigger, procedure, function, user, role, directory, synonym,
#: view), rows on both sides.
QUIET = Scenario("QUIET")
QUIET_DDL = [
    ("ALTER TABLE hr.quiet MOVE TABLESPACE users2 ONLINE", "ALTER TABLE", "QUIET"),
    ("ALTER TABLE hr.quiet SPLIT PARTITION p1 AT (100) INTO (PARTITION p1a, PARTITION p1b)", "ALTER TABLE", "QUIET"),
    ("ALTER TABLE hr.quiet MERGE PARTITIONS p1a, p1b INTO PARTITION p1", "ALTER TABLE", "QUIET"),
    ("ALTER INDEX hr.quiet_pk REBUILD ONLINE", "ALTER INDEX", "QUIET_PK"),
    ("CREATE INDEX hr.quiet_ix ON hr.quiet (name)", "CREATE INDEX", "QUIET_IX"),
    ("ALTER TABLE hr.quiet ADD CONSTRAINT quiet_fk FOREIGN KEY (code) REFERENCES hr.emp (id)", "ALTER TABLE", "QUIET"),
    ("ALTER TABLESPACE users2 ADD DATAFILE 'users2_02.dbf' SIZE 10M", "ALTER TABLESPACE", "USERS2"),
    ("CREATE SEQUENCE hr.quiet_seq START WITH 1 INCREMENT BY 1", "CREATE SEQUENCE", "QUIET_SEQ"),
    ("DROP SEQUENCE hr.quiet_seq", "DROP SEQUENCE", "QUIET_SEQ"),
    ("CREATE OR REPLACE TRIGGER hr.quiet_trg BEFORE INSERT ON hr.quiet FOR EACH ROW BEGIN NULL; END;",
     "CREATE TRIGGER", "QUIET_TRG"),
    ("CREATE OR REPLACE PROCEDURE hr.quiet_proc AS BEGIN NULL; END;", "CREATE PROCEDURE", "QUIET_PROC"),
    ("CREATE USER quiet_user IDENTIFIED BY secret", "CREATE USER", "QUIET_USER"),
    ("CREATE SYNONYM hr.quiet_syn FOR hr.quiet", "CREATE SYNONYM", "QUIET_SYN"),
    ("CREATE OR REPLACE VIEW hr.quiet_v AS SELECT id FROM hr.quiet", "CREATE VIEW", "QUIET_V"),
    ("DROP VIEW hr.quiet_v", "DROP VIEW", "QUIET_V"),
    ("DROP SYNONYM hr.quiet_syn", "DROP SYNONYM", "QUIET_SYN"),
    ("DROP TRIGGER hr.quiet_trg", "DROP TRIGGER", "QUIET_TRG"),
    ("DROP PROCEDURE hr.quiet_proc", "DROP PROCEDURE", "QUIET_PROC"),
    ("CREATE OR REPLACE FUNCTION hr.quiet_fn RETURN NUMBER AS BEGIN RETURN 1; END;", "CREATE FUNCTION", "QUIET_FN"),
    ("ALTER FUNCTION hr.quiet_fn COMPILE", "ALTER FUNCTION", "QUIET_FN"),
    ("DROP FUNCTION hr.quiet_fn", "DROP FUNCTION", "QUIET_FN"),
    ("ALTER USER quiet_user QUOTA 10M ON users2", "ALTER USER", "QUIET_USER"),
    ("DROP USER quiet_user CASCADE", "DROP USER", "QUIET_USER"),
    ("CREATE ROLE quiet_role", "CREATE ROLE", "QUIET_ROLE"),
    ("ALTER ROLE quiet_role NOT IDENTIFIED", "ALTER ROLE", "QUIET_ROLE"),
    ("DROP ROLE quiet_role", "DROP ROLE", "QUIET_ROLE"),
    ("CREATE OR REPLACE DIRECTORY quiet_dir AS '/tmp/quiet'", "CREATE DIRECTORY", "QUIET_DIR"),
    ("DROP DIRECTORY quiet_dir", "DROP DIRECTORY", "QUIET_DIR"),
]
#: HVR's dbms_redefinition rows: REDEFINED's interim table has a column more and a wider
#: one (read as the ALTER TABLE that makes them: the target follows); STORED's differs in
#: storage only (nothing to follow), then an ALTER TABLE is followed on its own.
REDEFINED, STORED = Scenario("REDEFINED"), Scenario("STORED")
REDEFINED_INT = ("CREATE TABLE hr.redefined_int (id NUMBER(4) NOT NULL, name VARCHAR2(40), code NUMBER(5), "
                 "note VARCHAR2(20), CONSTRAINT redefined_int_pk PRIMARY KEY (id)) PARTITION BY HASH (id) PARTITIONS 4")
STORED_INT = ("CREATE TABLE hr.stored_int (id NUMBER(4) NOT NULL, name VARCHAR2(10), code NUMBER(5), "
              "CONSTRAINT stored_int_pk PRIMARY KEY (id)) COMPRESS TABLESPACE users2")
#: The primary key moves to another column: rows are found by the new key from its SCN.
KEYED = Scenario("KEYED")
#: A column made smaller (ALTER, then a refresh), and one encrypted (a refresh: the values
#: captured are the clear ones), rows on both sides.
SHRUNK, ENCRYPTED = Scenario("SHRUNK"), Scenario("ENCRYPTED")
#: SALES tables leave with their targets (OnDropTable=DROP_FROM_CHANNEL_AND_TARGET); HR's
#: stay in the target, and a table created again keeps its old rows there (KeepOldRows).
GONE = Scenario("GONE", "SALES")
#: APP's new tables join the channel only if an AddTablePattern adds them (the reference's
#: example: t* but not tmp*|temp*, and *x): TAB_1 and TMP_X do, TMP_Y never does, TMP_Z
#: does once renamed TAB_Z, TAB_OUT leaves it when renamed TMP_OUT.
TAB_1, TMP_X, TMP_Y, TMP_Z, TAB_Z, TAB_OUT, TMP_OUT = (
    Scenario(n, "APP") for n in ("TAB_1", "TMP_X", "TMP_Y", "TMP_Z", "TAB_Z", "TAB_OUT", "TMP_OUT"))
ADAPT_DDL = [{"capture_schema": "APP", "add_table_pattern": "t*", "ignore_table_pattern": "tmp*|temp*"},
             {"capture_schema": "APP", "add_table_pattern": "*x"},
             {"capture_schema": "SALES", "on_drop_table": "DROP_FROM_CHANNEL_AND_TARGET"}, {"keep_old_rows": True}]
#: The apply takes every table's rows and DDL, but a negative rule discards HR.RULED's DDL:
#: its target keeps its structure (its source dictionary does not).
RULED = Scenario("RULED")
APPLY = {"rules": [{"schema": "hr", "include_ddl": True}, {"schema": "sales", "include_ddl": True},
                   {"schema": "app", "include_ddl": True},
                   {"table": "hr.ruled", "include_dml": False, "include_ddl": True, "inclusion_rule": False}]}

FIRST_LANDING = [
    *ADDED.created(),
    # EMAIL before the ADD: the dictionary in force does not know it.
    *ADDED.ins("t2", 125, {"ID": 9, "NAME": "early", "EMAIL": "x@y"}),
    *ADDED.ddl("d2", 130, "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"),
    *ADDED.ins("t3", 140, {"ID": 2, "NAME": "bob", "EMAIL": "bob@x"}),
    *ADDED.upd("t4", 150, 1, {"ID": 1, "EMAIL": "ann@x"}),
    *TRUNCATED.created(),
    *TRUNCATED.ddl("d2", 130, "TRUNCATE TABLE hr.emp", "TRUNCATE TABLE"),
    *TRUNCATED.ins("t2", 140, {"ID": 2, "NAME": "bob", "CODE": 8}),
    *ddl("TRUNCATED.d3", 150, "CREATE OR REPLACE VIEW hr.truncated_v AS SELECT id FROM hr.truncated", "CREATE VIEW",
         "TRUNCATED_V"),
    *TRUNCATED.ddl("d4", 160, "ALTER TABLE hr.emp MODIFY (nosuch NUMBER)"),
    *RENAMED.created(), *WIDENED.created(), *RETYPED.created(42), *DROPPED.created(), *REMADE.created(),
    *GONE.created(), *RULED.created(),
    *FLEETING.created(), *FLEETING.ddl("d2", 130, "DROP TABLE hr.emp", "DROP TABLE"),
    *QUIET.created(), *KEYED.created(), *SHRUNK.created(), *ENCRYPTED.created(),
    *REDEFINED.created(), *STORED.created(),
    *TAB_1.created(), *TMP_X.created(), *TMP_Y.created(), *TMP_Z.created(), *TAB_OUT.created(),
]
SECOND_LANDING = [
    *QUIET.upd("t2", 200, 1, {"ID": 1, "NAME": "before"}),
    *[rec for i, (text, verb, name) in enumerate(QUIET_DDL)
      for rec in ddl(f"QUIET.d{i + 2}", 210 + i, text, verb, name)],
    *QUIET.upd("t3", 300, 1, {"ID": 1, "CODE": 9}),
    *REDEFINED.upd("t2", 190, 1, {"ID": 1, "NAME": "anne"}),
    *ddl("REDEFINED.d2", 195, REDEFINED_INT, "CREATE TABLE", "REDEFINED_INT"),
    *ddl("REDEFINED.d3", 200, "BEGIN DBMS_REDEFINITION.FINISH_REDEF_TABLE(uname => 'HR', orig_table => 'REDEFINED', "
                              "int_table => 'REDEFINED_INT'); END;", "EXECUTE PROCEDURE", "REDEFINED"),
    *REDEFINED.ins("t3", 210, {"ID": 2, "NAME": "a name longer than ten", "CODE": 8, "NOTE": "new"}),
    *STORED.upd("t2", 190, 1, {"ID": 1, "NAME": "anne"}),
    *ddl("STORED.d2", 195, STORED_INT, "CREATE TABLE", "STORED_INT"),
    *ddl("STORED.d3", 200, "EXEC DBMS_REDEFINITION.FINISH_REDEF_TABLE('HR', 'STORED', 'STORED_INT')",
         "EXECUTE PROCEDURE", "STORED"),
    *STORED.ddl("d4", 205, "ALTER TABLE hr.emp ADD (note VARCHAR2(20))"),
    *STORED.ins("t3", 220, {"ID": 2, "NAME": "bob", "CODE": 8, "NOTE": "n"}),
    *KEYED.ddl("d2", 200, "ALTER TABLE hr.emp DROP PRIMARY KEY"),
    *KEYED.ddl("d3", 210, "ALTER TABLE hr.emp ADD CONSTRAINT keyed_pk2 PRIMARY KEY (code)"),
    # Found by its new key (CODE 7); an ID that is no longer a key may repeat.
    *Txn("KEYED.t2", 220).row("UPDATE", "KEYED", old={"CODE": 7}, new={"NAME": "by code"}).commit(),
    *KEYED.ins("t3", 230, {"ID": 1, "NAME": "same id", "CODE": 8}),
    *SHRUNK.upd("t2", 190, 1, {"ID": 1, "NAME": "anne"}),
    *SHRUNK.ddl("d2", 200, "ALTER TABLE hr.emp MODIFY (name VARCHAR2(5))"),
    *SHRUNK.ins("t3", 210, {"ID": 2, "NAME": "bob", "CODE": 8}),
    *ENCRYPTED.ddl("d2", 200, "ALTER TABLE hr.emp MODIFY (name ENCRYPT USING 'AES256' NO SALT)"),
    *ENCRYPTED.upd("t2", 210, 1, {"ID": 1, "NAME": "clear"}),
    *RENAMED.upd("t2", 200, 1, {"ID": 1, "NAME": "anna"}),
    *RENAMED.ddl("d2", 210, "ALTER TABLE hr.emp RENAME COLUMN name TO full_name"),
    *RENAMED.ins("t3", 220, {"ID": 2, "FULL_NAME": "bob", "CODE": 8}),
    *RENAMED.upd("t4", 230, 1, {"ID": 1, "CODE": 9}),
    *WIDENED.ddl("d2", 200, "ALTER TABLE hr.emp MODIFY (name VARCHAR2(40), code NUMBER(12))"),
    *WIDENED.ins("t2", 210, {"ID": 2, "NAME": "a name longer than ten", "CODE": 123456789012}),
    *RETYPED.ddl("d2", 200, "ALTER TABLE hr.emp MODIFY (code VARCHAR2(10))"),
    *RETYPED.ins("t2", 210, {"ID": 2, "NAME": "bob", "CODE": "A7"}),
    *DROPPED.ddl("d2", 200, "ALTER TABLE hr.emp DROP COLUMN code"),
    *DROPPED.ins("t2", 210, {"ID": 2, "NAME": "bob"}),
    # The target goes with the table; the plan's change from before the DROP does not bring it back.
    *GONE.ins("t2", 190, {"ID": 2, "NAME": "bob", "CODE": 8}),
    *GONE.ddl("d2", 200, "DROP TABLE hr.emp PURGE", "DROP TABLE"),
    *REMADE.ddl("d2", 200, "DROP TABLE hr.emp", "DROP TABLE"),
    # Created again with defaults: an INSERT that does not carry a column takes its default.
    *REMADE.ddl("d3", 210, "CREATE TABLE hr.emp (id NUMBER(4) PRIMARY KEY, name VARCHAR2(10) DEFAULT 'n/a', "
                           "code NUMBER(5) DEFAULT 5, hired DATE DEFAULT SYSDATE)", "CREATE TABLE"),
    *REMADE.ins("t2", 220, {"ID": 2, "NAME": "bob", "HIRED": "2024-05-01T00:00:00"}),
    *REMADE.ins("t3", 230, {"ID": 3, "NAME": None}),
    # The new table inserts a key the kept old row holds: a uniqueness conflict (ORA-00001).
    *REMADE.ins("t4", 240, {"ID": 1, "NAME": "again"}),
    *RULED.ddl("d2", 200, "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"),
    *RULED.ins("t2", 210, {"ID": 2, "NAME": "bob", "EMAIL": "bob@x"}),
    *TMP_Y.ddl("d2", 200, "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"),
    *TMP_Y.ins("t2", 210, {"ID": 2, "NAME": "bob", "EMAIL": "bob@x"}),
    *TMP_Z.ins("t2", 190, {"ID": 2, "NAME": "bob", "CODE": 8}),
    *TMP_Z.ddl("d2", 200, "ALTER TABLE hr.emp RENAME TO tab_z"),
    *TAB_Z.ins("t3", 210, {"ID": 3, "NAME": "cy", "CODE": 1}),
    *TAB_OUT.ddl("d2", 200, "ALTER TABLE hr.emp RENAME TO tmp_out"),
    *TMP_OUT.ins("t3", 210, {"ID": 3, "NAME": "cy", "CODE": 1}),
]


@dataclass
class Evolved:
    channel: Channel
    widened_version: int  # the gold table's version after the first landing
    versions: dict[str, int]  # every table's version after the second landing
    versions_rerun: dict[str, int]  # and after the run again
    evolution: str  # what the DDL step before gold reported after the second landing
    again: str  # and once gold had run
    before_gold: object  # the audit between the first landing's silver and gold


@pytest.fixture(scope="module")
def evolved(spark, tmp_path_factory) -> Evolved:
    ch = make_channel(tmp_path_factory.mktemp("evolution"), adapt_ddl=ADAPT_DDL, apply=APPLY)
    write_lines(ch, "src", "f1.jsonl", FIRST_LANDING)
    run_pipeline(spark, ch, ("bronze", "silver"))
    # Between silver and gold: TRUNCATED's TRUNCATE TABLE waits as a change of its table,
    # but the record is counted once (as DDL).
    before_gold = run_audit(spark, ch)
    run_pipeline(spark, ch, ("gold",))
    widened = ch.storage.table("gold", WIDENED.gold_table).replace("`", "")
    widened_version = spark.sql(f"DESCRIBE HISTORY {widened} LIMIT 1").first()["version"]
    write_lines(ch, "src", "f2.jsonl", SECOND_LANDING)
    # As the bundle's job runs it: bronze and silver, the DDL step (`lakestreams evolve`), gold.
    run_pipeline(spark, ch, ("bronze", "silver"))
    evolution = format_evolution(evolve_gold(spark, ch))
    run_pipeline(spark, ch, ("gold",))
    again = format_evolution(evolve_gold(spark, ch))
    versions = table_versions(spark, ch)
    run_pipeline(spark, ch)
    return Evolved(ch, widened_version, versions, table_versions(spark, ch), evolution, again, before_gold)


def test_column_added_mid_batch_reads_each_row_with_its_revision(spark, evolved):
    ch, t = evolved.channel, ADDED
    assert gold(spark, ch, t.gold_table) == {
        "columns": ["CODE", "EMAIL", "ID", "NAME"],
        "rows": {(7, "ann@x", 1, "ann"), (None, "bob@x", 2, "bob")},
    }
    assert "EMAIL" in change_fields(spark, ch, t.name)
    assert "column(s) not in the source dictionary of HR.ADDED: EMAIL" in queued(spark, ch)["ADDED.t2"]
    assert ddl_log(spark, ch, t.name) == [(100, "CREATE TABLE", "ADD"), (130, "ALTER TABLE", "ALTER")]


def test_the_ddl_step_before_gold_gives_each_table_its_ddl(spark, evolved):
    # Silver recorded the second landing's DDL; gold takes it before the plan reads it.
    lines = evolved.evolution.splitlines()
    # What it did is logged once per gold table and revision, and the DDL log shows it
    # under the record whose revision it followed.
    ch = evolved.channel
    applied = spark.table(ch.storage.table("gold", "ddl_applied").replace("`", "")).collect()
    assert sorted(f"gold {r['gold_table']}: {r['done']}" for r in applied) == lines
    assert {(r["gold_table"], r["revision_scn"]) for r in applied} >= {("hr__renamed", 210), ("sales__gone", 200)}
    shown = format_ddl_log(spark, ch, ("HR", "RENAMED"))
    # Under the record that made the revision, and only there (REMADE's and KEYED's records
    # made revisions at the same SCN, of their own tables).
    done = [line for line in shown.splitlines() if line.startswith("    done: ")]
    assert done == ["    done: gold hr__renamed: renamed NAME to FULL_NAME"], shown
    assert shown.index("RENAME COLUMN name TO full_name\n") < shown.index(done[0])
    assert [line.split(":")[0] for line in lines] == [
        "gold hr__dropped", "gold hr__redefined", "gold hr__remade", "gold hr__renamed", "gold hr__retyped",
        "gold hr__stored", "gold hr__widened", "gold sales__gone"], lines
    assert lines[0] == "gold hr__dropped: dropped CODE", lines
    assert lines[1] == "gold hr__redefined: added NOTE STRING", lines
    assert lines[2] == "gold hr__remade: added HIRED TIMESTAMP_NTZ", lines
    assert lines[3] == "gold hr__renamed: renamed NAME to FULL_NAME", lines
    assert lines[5] == "gold hr__stored: added NOTE STRING", lines
    assert lines[6].endswith("widened CODE to BIGINT"), lines
    assert lines[7] == "gold sales__gone: dropped with its source table (OnDropTable=DROP_FROM_CHANNEL_AND_TARGET)"
    assert evolved.again == "gold tables hold their targets' columns: no DDL to apply"


def test_a_run_again_changes_no_table(evolved):
    assert evolved.versions_rerun == evolved.versions


def test_rename_with_rows_on_both_sides_renames_in_place(spark, evolved):
    ch, t = evolved.channel, RENAMED
    assert gold(spark, ch, t.gold_table) == {"columns": ["CODE", "FULL_NAME", "ID"], "rows": {(8, "bob", 2), (9, "anna", 1)}}
    fields = change_fields(spark, ch, t.name)
    assert "FULL_NAME" in fields and "NAME" not in fields
    # The history written before the rename names the column by its new name too.
    changes = ch.storage.table("silver", change_table_name(SRC, "HR", t.name)).replace("`", "")
    first = spark.table(changes).where("_transaction_id = 'RENAMED.t1'").first()
    assert first["_new"]["FULL_NAME"] == "ann" and "FULL_NAME" in first["_new_present"]
    assert structure_scn(spark, ch.storage.table("gold", t.gold_table)) == 210


def test_widening_varchar2_and_number_is_in_place(spark, evolved):
    ch, t = evolved.channel, WIDENED
    assert gold(spark, ch, t.gold_table)["rows"] == {(7, 1, "ann"), (123456789012, 2, "a name longer than ten")}
    assert gold_type(spark, ch, "CODE", t.gold_table) == "bigint"
    assert change_fields(spark, ch, t.name)["CODE"] == "bigint"
    # In place: no rewrite of the gold table (metadata commits, then the apply's MERGE).
    gold_table = ch.storage.table("gold", t.gold_table).replace("`", "")
    history = spark.sql(f"DESCRIBE HISTORY {gold_table}").where(f"version > {evolved.widened_version}")
    ops = [r["operation"] for r in history.collect()]
    assert ops and "CREATE OR REPLACE TABLE AS SELECT" not in ops and "WRITE" not in ops
    assert ddl_log(spark, ch, t.name)[-1] == (200, "ALTER TABLE", "ALTER")


def test_number_to_varchar2_refreshes_the_target(spark, evolved):
    ch, t = evolved.channel, RETYPED
    assert gold(spark, ch, t.gold_table)["rows"] == {("42", 1, "ann"), ("A7", 2, "bob")}
    assert gold_type(spark, ch, "CODE", t.gold_table) == "string"
    assert change_fields(spark, ch, t.name)["CODE"] == "string"
    assert ddl_log(spark, ch, t.name)[-1] == (200, "ALTER TABLE", "REFRESH")


def test_dropped_column_stays_in_silver_and_leaves_gold(spark, evolved):
    ch, t = evolved.channel, DROPPED
    assert gold(spark, ch, t.gold_table) == {"columns": ["ID", "NAME"], "rows": {(1, "ann"), (2, "bob")}}
    assert "CODE" in change_fields(spark, ch, t.name)  # silver keeps history


def test_truncate_table_ddl_is_a_special_dml_and_ignored_objects_are_logged(spark, evolved):
    ch, t = evolved.channel, TRUNCATED
    assert evolved.before_gold.ok, evolved.before_gold.problems
    assert gold(spark, ch, t.gold_table)["rows"] == {(8, 2, "bob")}
    assert ddl_log(spark, ch, t.name, "TRUNCATED_V")[1:] == [
        (130, "TRUNCATE TABLE", "TRUNCATE"), (150, "IGNORED VIEW", "IGNORE"), (160, "ALTER TABLE", "ERROR")]


def test_statements_the_target_does_not_follow_leave_it_as_it_is(spark, evolved):
    ch = evolved.channel
    log = spark.table(ch.storage.table("silver", "ddl_log").replace("`", "")).where(
        "transaction_id LIKE 'QUIET.%' AND commit_scn > 100")
    decided = {r["ddl_text"]: (r["decision"], r["revision_scn"]) for r in log.collect()}
    assert set(decided) == {text for text, _, _ in QUIET_DDL}
    # Ignored: no revision of the table, nothing done to the target.
    assert set(decided.values()) == {("IGNORE", None)}, decided
    assert gold(spark, ch, QUIET.gold_table) == {"columns": ["CODE", "ID", "NAME"], "rows": {(9, 1, "before")}}


def test_dbms_redefinition_is_followed_as_the_structure_it_changes(spark, evolved):
    ch = evolved.channel
    # Columns, types or key changed: read as the ALTER TABLE making the change, the target follows.
    assert ddl_log(spark, ch, REDEFINED.name)[1:] == [(200, "DBMS_REDEFINITION", "ALTER")]
    assert gold(spark, ch, REDEFINED.gold_table) == {
        "columns": ["CODE", "ID", "NAME", "NOTE"], "rows": {(7, 1, "anne", None), (8, 2, "a name longer than ten", "new")}}
    # Storage only: nothing to follow (no revision); the ALTER TABLE after it is followed on its own.
    log = spark.table(ch.storage.table("silver", "ddl_log").replace("`", "")).where("transaction_id = 'STORED.d3'")
    assert [(r["decision"], r["revision_scn"]) for r in log.collect()] == [("IGNORE", None)]
    assert ddl_log(spark, ch, STORED.name)[1:] == [(200, "DBMS_REDEFINITION", "IGNORE"), (205, "ALTER TABLE", "ALTER")]
    assert gold(spark, ch, STORED.gold_table) == {
        "columns": ["CODE", "ID", "NAME", "NOTE"], "rows": {(7, 1, "anne", None), (8, 2, "bob", "n")}}


def test_a_new_primary_key_finds_rows_by_its_columns(spark, evolved):
    ch = evolved.channel
    assert [x[1:] for x in ddl_log(spark, ch, KEYED.name)[1:]] == [("ALTER TABLE", "ALTER"), ("ALTER TABLE", "ALTER")]
    assert gold(spark, ch, KEYED.gold_table)["rows"] == {(7, 1, "by code"), (8, 1, "same id")}


def test_a_smaller_or_encrypted_column_refreshes_the_target_from_what_it_holds(spark, evolved):
    ch = evolved.channel
    assert ddl_log(spark, ch, SHRUNK.name)[-1] == (200, "ALTER TABLE", "REFRESH")
    assert gold(spark, ch, SHRUNK.gold_table)["rows"] == {(7, 1, "anne"), (8, 2, "bob")}
    assert ddl_log(spark, ch, ENCRYPTED.name)[-1] == (200, "ALTER TABLE", "REFRESH")
    assert gold(spark, ch, ENCRYPTED.gold_table)["rows"] == {(7, 1, "clear")}


def test_a_table_created_and_dropped_in_one_landing_is_processed_statement_by_statement(spark, evolved):
    ch = evolved.channel
    assert ddl_log(spark, ch, FLEETING.name) == [(100, "CREATE TABLE", "ADD"), (130, "DROP TABLE", "DROP")]
    # Its target was made by the CREATE, took the insert before the DROP, and stays.
    assert gold(spark, ch, FLEETING.gold_table)["rows"] == {(7, 1, "ann")}


def test_a_table_dropped_with_its_target_leaves_gold_and_one_created_again_keeps_its_rows(spark, evolved):
    ch = evolved.channel
    # SALES.GONE: OnDropTable=DROP_FROM_CHANNEL_AND_TARGET; its change from before the DROP
    # (applied in the same plan) did not bring the table back.
    assert not spark.catalog.tableExists(ch.storage.table("gold", GONE.gold_table).replace("`", ""))
    assert ddl_log(spark, ch, GONE.name)[-1] == (200, "DROP TABLE", "DROP")
    # HR.REMADE dropped and created again: KeepOldRows keeps ann; the new column is added.
    # Inserts take the defaults of what they do not carry (SYSDATE: the commit time); a
    # NULL they carry stays NULL, and the row kept from before takes nothing.
    assert gold(spark, ch, REMADE.gold_table) == {
        "columns": ["CODE", "HIRED", "ID", "NAME"],
        "rows": {(7, None, 1, "ann"), (5, datetime(2024, 5, 1), 2, "bob"), (5, datetime(2024, 1, 1, 0, 3, 50), 3, None)},
    }
    assert ddl_log(spark, ch, REMADE.name)[1:] == [(200, "DROP TABLE", "DROP"), (210, "CREATE TABLE", "REFRESH")]


def test_ddl_the_apply_rules_discard_changes_the_source_dictionary_only(spark, evolved):
    ch = evolved.channel
    # HVR's way with a column the target does not take: its values are not replicated.
    assert gold(spark, ch, RULED.gold_table) == {"columns": ["CODE", "ID", "NAME"],
                                                 "rows": {(7, 1, "ann"), (None, 2, "bob")}}
    log = spark.table(ch.storage.table("silver", "ddl_log").replace("`", "")).where("object_name = 'RULED'")
    last = log.orderBy("commit_scn").collect()[-1]
    assert (last["commit_scn"], last["decision"]) == (200, "IGNORE")
    assert last["reason"].startswith("discarded by the rules: ") and "HR.RULED" in last["outcome"], last
    # The source dictionary took it: its revision at SCN 200 has EMAIL.
    dictionary = spark.table(ch.storage.table("silver", "dictionary").replace("`", ""))
    assert dictionary.where("table_name = 'RULED' AND revision_scn = 200").count() == 1


def test_add_table_pattern_decides_which_new_tables_join_the_channel(spark, evolved):
    ch = evolved.channel
    made = table_names(spark, ch.storage, "gold")
    assert {TAB_1.gold_table, TMP_X.gold_table, TAB_Z.gold_table, TAB_OUT.gold_table} <= made
    assert not {TMP_Y.gold_table, TMP_Z.gold_table, TMP_OUT.gold_table} & made
    # TAB_Z holds what came after the rename only; TAB_OUT what came before it.
    assert gold(spark, ch, TAB_Z.gold_table)["rows"] == {(1, 3, "cy")}
    assert gold(spark, ch, TAB_OUT.gold_table)["rows"] == {(7, 1, "ann")}
    assert ddl_log(spark, ch, TMP_Y.name) == [(100, "CREATE TABLE", "IGNORE"), (200, "ALTER TABLE", "IGNORE")]
    assert ddl_log(spark, ch, TMP_Z.name) == [(100, "CREATE TABLE", "IGNORE"), (200, "RENAME TABLE", "ADD")]
    assert ddl_log(spark, ch, TAB_OUT.name) == [(100, "CREATE TABLE", "ADD"), (200, "RENAME TABLE", "DROP")]
    # TAB_Z's rows from before the rename are in no change: it waits for a snapshot.
    waiting = pending_refreshes(spark, ch, spark.table(ch.storage.table("silver", "instantiation").replace("`", "")))
    assert [(r["table_name"], r["since_scn"]) for r in waiting.collect()] == [("TAB_Z", 200)]
    # The source dictionary follows a table outside the channel all the same.
    dictionary = spark.table(ch.storage.table("silver", "dictionary").replace("`", ""))
    [revision] = dictionary.where("table_name = 'TMP_Y' AND revision_scn = 200").collect()
    assert revision["target_decision"] == "NOT IN CHANNEL" and "EMAIL" in [c["name"] for c in revision["columns"]]
    # Their changes are discarded, each with its reason, and counted.
    outcomes = spark.table(ch.storage.table("silver", "outcomes").replace("`", "")).where(
        "stage = 'silver' AND bucket = 'discarded' AND owner = 'APP'")
    assert {(r["transaction_id"], r["reason"]) for r in outcomes.collect()} == {
        (f"{t}.{n}", f"APP.{s} is not in the channel: no AdaptDDL AddTablePattern added it")
        for t, n, s in (("TMP_Y", "t1", "TMP_Y"), ("TMP_Y", "t2", "TMP_Y"), ("TMP_Z", "t1", "TMP_Z"),
                        ("TMP_Z", "t2", "TMP_Z"), ("TMP_OUT", "t3", "TMP_OUT"))}
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems


def test_the_error_queue_holds_only_what_the_scenarios_send_there(spark, evolved):
    q = queued(spark, evolved.channel)
    assert set(q) == {"ADDED.t2", "REMADE.t4"}
    assert "ORA-00001" in q["REMADE.t4"], q


def test_gold_on_the_basic_protocol_rewrites_for_renames_drops_and_widening(spark, tmp_path, monkeypatch):
    # Past any size, looked at on every plan: a basic-protocol replica still never takes
    # deletion vectors.
    monkeypatch.setenv("LAKESTREAMS_GOLD_DELETION_VECTOR_BYTES", "1")
    monkeypatch.setattr(structure, "DELETION_VECTOR_CHECK_EVERY", 1)
    ch = make_channel(tmp_path, gold={"column_mapping": False})
    write_lines(ch, "src", "f1.jsonl", [
        *ddl("d1", 100, EMP_DDL.replace("code NUMBER(5),", "code NUMBER(5), note VARCHAR2(5),"), "CREATE TABLE"),
        *ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": 7, "NOTE": "n"}),
    ])
    run_pipeline(spark, ch)
    write_lines(ch, "src", "f2.jsonl", [
        *upd("t2", 200, 1, {"ID": 1, "CODE": 8}),
        *ddl("d2", 210, "ALTER TABLE hr.emp RENAME COLUMN name TO nm"),
        *ddl("d2b", 215, "ALTER TABLE hr.emp RENAME COLUMN nm TO full_name"),  # one rewrite: both renames
        *ddl("d3", 220, "ALTER TABLE hr.emp DROP COLUMN note"),
        *ddl("d4", 230, "ALTER TABLE hr.emp MODIFY (code NUMBER(12))"),
        *ddl("d5", 240, "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"),
        *ins("t3", 250, {"ID": 2, "FULL_NAME": "bob", "CODE": 123456789012, "EMAIL": "bob@x"}),
    ])
    run_pipeline(spark, ch)
    assert gold(spark, ch) == {"columns": ["CODE", "EMAIL", "FULL_NAME", "ID"],
                               "rows": {(8, None, "ann", 1), (123456789012, "bob@x", "bob", 2)}}
    assert gold_type(spark, ch, "CODE") == "bigint"
    table = ch.storage.table("gold", "hr__emp").replace("`", "")
    detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
    # Readers that know only Delta's first protocol read it: no column mapping, no widening.
    assert (detail["minReaderVersion"], detail["minWriterVersion"]) == (1, 2)
    assert "delta.columnMapping.mode" not in detail["properties"]
    ops = [r["operation"] for r in spark.sql(f"DESCRIBE HISTORY {table}").collect()]
    assert "CREATE OR REPLACE TABLE AS SELECT" in ops or "WRITE" in ops, ops  # the rewrite
    # Silver keeps column mapping: its change table renamed in place and kept NOTE.
    assert {"FULL_NAME", "NOTE", "EMAIL"} <= set(change_fields(spark, ch))


@pytest.mark.extended  # covered in the core: test_adaptddl decides KeepExistingStructure; the DROP COLUMN path runs in the core
def test_keep_existing_structure_keeps_dropped_columns_in_gold(spark, tmp_path):
    ch = make_channel(tmp_path, adapt_ddl=[{"keep_existing_structure": True}])
    write_lines(ch, "src", "f1.jsonl", [
        *ddl("d1", 100, EMP_DDL.replace("code NUMBER(5)", "code NUMBER(5) DEFAULT 3, note VARCHAR2(5)"), "CREATE TABLE"),
        *ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": 7, "NOTE": "a"}),
        *ddl("d2", 200, "ALTER TABLE hr.emp DROP (code, note)"),
        *ins("t2", 210, {"ID": 2, "NAME": "bob"}),
    ])
    run_pipeline(spark, ch)
    # The kept columns are the target's extra columns: an insert gives them their default, or NULL.
    assert gold(spark, ch) == {"columns": ["CODE", "ID", "NAME", "NOTE"],
                               "rows": {(3, 2, "bob", None), (7, 1, "ann", "a")}}


@pytest.mark.extended  # covered in the core: test_adaptddl decides DROP TABLE and CREATE TABLE of a known table (REFRESH); the shared channel drops and creates a table again
def test_drop_and_create_again_between_runs_empties_the_target(spark, tmp_path):
    # A second table: AdaptDDL never drops a channel's last table (a FAIL stops the batch).
    ch = make_channel(tmp_path, tables=[{"source_database": SRC, "ddl": "CREATE TABLE hr.other (id NUMBER(4) PRIMARY KEY)"}])
    write_lines(ch, "src", "f1.jsonl", [
        *ddl("d1", 100, EMP_DDL, "CREATE TABLE"),
        *ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": 7}),
        *ins("t2", 130, {"ID": 2, "NAME": "bob", "CODE": 8}),
    ])
    run_pipeline(spark, ch)
    write_lines(ch, "src", "f2.jsonl", [
        *ddl("d2", 300, "DROP TABLE hr.emp PURGE", "DROP TABLE"),
        *ins("t3", 309, {"ID": 5, "NAME": "gone"}),  # at SCN 300, the DROP's: no table
        *ddl("d3", 310, "CREATE TABLE hr.emp (id NUMBER(4) PRIMARY KEY, name VARCHAR2(10), "
                        "code NUMBER(5), hired DATE)", "CREATE TABLE"),
        *ins("t4", 320, {"ID": 3, "NAME": "cy", "HIRED": "2024-05-01T00:00:00"}),
    ])
    run_pipeline(spark, ch)
    g = gold(spark, ch)
    assert g["columns"] == ["CODE", "HIRED", "ID", "NAME"]
    assert [r[2] for r in g["rows"]] == [3]  # one row: the table created again is empty
    assert "was dropped at SCN 300" in queued(spark, ch)["t3"]
    assert [x[1:] for x in ddl_log(spark, ch)[1:]] == [("DROP TABLE", "DROP"), ("CREATE TABLE", "REFRESH")]


@pytest.mark.extended  # covered in the core: test_ddl_processing maps a FAIL to a stopped batch; the run again after a stop is the fault suite's
def test_an_adaptddl_fail_stops_silver_until_the_channel_is_changed(spark, tmp_path):
    import dataclasses

    from silver.adaptddl import AdaptDdl
    from silver.goldengate import DdlAbend

    ch = make_channel(tmp_path)
    write_lines(ch, "src", "f1.jsonl", [
        *ddl("d1", 100, EMP_DDL, "CREATE TABLE"),
        *ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": 7}),
        *ddl("d2", 200, "DROP TABLE hr.emp", "DROP TABLE"),
    ])
    with pytest.raises(DdlAbend, match=r"stops silver batch 1: FAIL: DROP TABLE of the channel's last table"):
        run_pipeline(spark, ch, ("bronze", "silver"))
    # The channel keeps a dropped table (OnDropTable=KEEP): the same batch goes through.
    kept = dataclasses.replace(ch, adapt_ddl=(AdaptDdl(on_drop_table="KEEP"),))
    run_pipeline(spark, kept)
    assert gold(spark, kept)["rows"] == {(7, 1, "ann")}
    assert ddl_log(spark, kept)[-1] == (200, "DROP TABLE", "IGNORE")


@pytest.mark.extended  # covered in the core: the core truncates a table in a batch with its rows
def test_truncate_table_alone_in_a_batch_empties_gold(spark, tmp_path):
    ch = make_channel(tmp_path)
    first_run(spark, ch)
    # A batch with the TRUNCATE and no row of the table: gold is emptied all the same.
    write_lines(ch, "src", "f2.jsonl", ddl("d2", 200, "TRUNCATE TABLE hr.emp", "TRUNCATE TABLE"))
    run_pipeline(spark, ch)
    assert gold(spark, ch)["rows"] == set()
    assert ddl_log(spark, ch)[-1] == (200, "TRUNCATE TABLE", "TRUNCATE")
    write_lines(ch, "src", "f3.jsonl", ins("t3", 210, {"ID": 2, "NAME": "bob", "CODE": 8}))
    run_pipeline(spark, ch)
    assert gold(spark, ch)["rows"] == {(8, 2, "bob")}


def test_a_rename_half_made_by_a_killed_run_is_finished_by_the_next(spark, tmp_path):
    """A run killed between the _old and the _new statement of a rename (fault point
    ddl.alter) leaves the two structs apart; the re-run renames only what is left."""
    from lakestreams.spark import ensure_schemas
    from silver.dictionary import parse_create_table
    from silver.evolution import Revision
    from silver.run import create_change_table

    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    before = parse_create_table(EMP_DDL)
    after = parse_create_table(EMP_DDL.replace("name VARCHAR2(10)", "full_name VARCHAR2(10)"))
    revs = [Revision(100, before), Revision(210, after, renames=(("FULL_NAME", "NAME"),))]
    table = create_change_table(spark, ch, "emp_changes", before, revs[:1])
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN _old.`NAME` TO `FULL_NAME`")  # what the killed run did
    create_change_table(spark, ch, "emp_changes", after, revs)
    schema = spark.table(table.replace("`", "")).schema
    assert [[f.name for f in schema[s].dataType.fields] for s in ("_old", "_new")] == [["ID", "FULL_NAME", "CODE"]] * 2
    assert structure_scn(spark, table) == 210


def test_a_table_made_after_its_source_was_dropped_takes_no_rename_of_its_earlier_life(spark, tmp_path):
    """HR.EMP renamed NAME to FULL_NAME, was dropped with its target, and was created again
    with NAME: the gold table dbt made for it has NAME, and keeps it (and its values)."""
    from lakestreams.spark import ensure_schemas
    from silver.dictionary import parse_create_table
    from silver.evolution import DROPS_TARGET, Revision, follow_structure

    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    first = parse_create_table(EMP_DDL)
    renamed = parse_create_table(EMP_DDL.replace("name VARCHAR2(10)", "full_name VARCHAR2(10)"))
    revs = [Revision(100, first), Revision(150, renamed, renames=(("FULL_NAME", "NAME"),)),
            Revision(200, renamed, status="DROPPED", decision=DROPS_TARGET), Revision(210, first, decision="REFRESH")]
    table = ch.storage.table("gold", "hr__emp")
    spark.createDataFrame([(3, "cy", 1)], "ID INT, NAME STRING, CODE INT").write.format("delta").saveAsTable(
        table.replace("`", ""))  # as dbt made it, without a structure mark
    assert not follow_structure(spark, table, first, revs, "gold.hr__emp", (), drop=True)
    assert gold(spark, ch) == {"columns": ["CODE", "ID", "NAME"], "rows": {(1, 3, "cy")}}


def test_a_column_dropped_then_taken_by_a_rename_before_gold_follows_holds_the_renamed_values(spark, tmp_path):
    """DROP COLUMN code, then RENAME COLUMN name TO code, both before gold follows: the old
    CODE goes first and CODE holds NAME's values (with column mapping and without)."""
    from lakestreams.spark import ensure_schemas
    from silver.dictionary import parse_create_table
    from silver.evolution import Revision, follow_structure

    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    first = parse_create_table(EMP_DDL)
    without_code = parse_create_table(EMP_DDL.replace(", code NUMBER(5)", ""))
    renamed = parse_create_table(EMP_DDL.replace(", code NUMBER(5)", "").replace("name VARCHAR2(10)", "code VARCHAR2(10)"))
    revs = [Revision(100, first, decision="ADD"), Revision(150, without_code, decision="ALTER"),
            Revision(160, renamed, renames=(("CODE", "NAME"),), decision="ALTER")]
    for name, mapping in (("hr__emp", "'delta.columnMapping.mode' = 'name'"), ("hr__emp_basic", "'a' = 'b'")):
        table = ch.storage.table("gold", name)
        spark.sql(f"CREATE TABLE {table} (ID INT, NAME STRING, CODE INT) USING delta TBLPROPERTIES ({mapping})")
        spark.sql(f"INSERT INTO {table} VALUES (1, 'ann', 7)")
        changes = follow_structure(spark, table, renamed, revs, f"gold.{name}", (), drop=True)
        assert (changes.dropped_first, changes.renames) == (("CODE",), (("NAME", "CODE"),))
        assert gold(spark, ch, name) == {"columns": ["CODE", "ID"], "rows": {("ann", 1)}}
        # Followed: a second call changes nothing.
        assert not follow_structure(spark, table, renamed, revs, f"gold.{name}", (), drop=True)


def test_on_preserve_alter_table_fail_rewrites_or_stops_before_anything_changes(spark, tmp_path):
    """A type ALTER TABLE cannot change in place (NUMBER to VARCHAR2): CREATE_AS_SELECT (the
    default) rewrites the table as selected from itself; FAIL_INTEG_JOB stops with the table
    and what it needs, the table untouched, until the policy is changed."""
    from lakestreams.errors import DdlError
    from lakestreams.spark import ensure_schemas
    from silver.dictionary import parse_create_table
    from silver.evolution import Revision, follow_structure

    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    first = parse_create_table(EMP_DDL)
    retyped = parse_create_table(EMP_DDL.replace("code NUMBER(5)", "code VARCHAR2(8)").replace(
        "name VARCHAR2(10)", "full_name VARCHAR2(10)"))
    # An ALTER (OnEnrollBreak=WARNING takes a type change as one); a REFRESH rebuilds anyway.
    revs = [Revision(100, first), Revision(150, retyped, renames=(("FULL_NAME", "NAME"),), decision="ALTER")]
    table = ch.storage.table("gold", "hr__emp")
    spark.sql(f"CREATE TABLE {table} (ID INT, NAME STRING, CODE DECIMAL(5,0)) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'ann', 7)")
    with pytest.raises(DdlError, match=r"hr__emp`?: ALTER TABLE cannot make CODE to STRING in place, and "
                                       r"OnPreserveAlterTableFail=FAIL_INTEG_JOB stops the apply"):
        follow_structure(spark, table, retyped, revs, "gold.hr__emp", (), True, "FAIL_INTEG_JOB")
    assert gold(spark, ch) == {"columns": ["CODE", "ID", "NAME"], "rows": {(7, 1, "ann")}}  # not even the rename
    assert structure_scn(spark, table) < 150
    refreshed = [revs[0], dataclasses.replace(revs[1], decision="REFRESH")]
    changes = follow_structure(spark, table, retyped, refreshed, "gold.hr__emp", (), True, "FAIL_INTEG_JOB")
    assert (changes.renames, changes.rewritten) == ((("NAME", "FULL_NAME"),), (("CODE", "STRING"),))
    assert gold(spark, ch) == {"columns": ["CODE", "FULL_NAME", "ID"], "rows": {("7", "ann", 1)}}


def test_a_rewrite_that_meets_values_that_do_not_convert_stops_before_anything_changes(spark, tmp_path):
    """NAME VARCHAR2 → NUMBER(5) is no change Delta makes in place: the table is rewritten
    with the values cast. A value that does not convert ('cy') stops it with the reason
    (dbt turns ANSI mode off, so a cast would give NULL silently). In gold the values are
    checked before the DDL log is told or anything is altered: the table keeps its
    structure, its rows and its old revision. In a change table (``_old``/``_new``),
    checked before the rewrite. Once the value is gone, the same call goes through."""
    from lakestreams.errors import DdlError
    from lakestreams.spark import ensure_schemas
    from silver.dictionary import parse_create_table
    from silver.evolution import Revision, follow_structure

    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    first = parse_create_table(EMP_DDL)
    numeric = parse_create_table(EMP_DDL.replace("name VARCHAR2(10)", "name NUMBER(5)"))
    revs = [Revision(100, first), Revision(200, numeric, decision="ALTER")]
    table = ch.storage.table("gold", "hr__emp")
    spark.createDataFrame([(1, "12", 7), (2, "cy", 8), (3, None, 9)], "ID INT, NAME STRING, CODE INT").write.format(
        "delta").saveAsTable(table.replace("`", ""))
    told = []
    with pytest.raises(DdlError, match=r"hr__emp.*some values do not convert \(NAME to INT\); the table needs a refresh"):
        follow_structure(spark, table, numeric, revs, "gold.hr__emp", (), done=lambda c, scn: told.append(scn))
    assert told == []
    assert gold(spark, ch) == {"columns": ["CODE", "ID", "NAME"], "rows": {(7, 1, "12"), (8, 2, "cy"), (9, 3, None)}}
    assert gold_type(spark, ch, "NAME") == "string" and structure_scn(spark, table) == -1

    changes = ch.storage.table("silver", "emp_changes")
    spark.createDataFrame([(1, (1, "12", 7), (1, "cy", 7))],
                          "_seq INT, _old STRUCT<ID: INT, NAME: STRING, CODE: INT>, "
                          "_new STRUCT<ID: INT, NAME: STRING, CODE: INT>").write.format("delta").saveAsTable(
        changes.replace("`", ""))
    with pytest.raises(DdlError, match=r"some values do not convert \(NAME to INT\)"):
        follow_structure(spark, changes, numeric, revs, "silver.emp_changes", ("_old", "_new"))
    assert structure_scn(spark, changes) == -1

    spark.sql(f"DELETE FROM {table} WHERE NAME = 'cy'")
    follow_structure(spark, table, numeric, revs, "gold.hr__emp", (), done=lambda c, scn: told.append(scn))
    assert told == [200] and structure_scn(spark, table) == 200
    assert gold_type(spark, ch, "NAME") == "int"
    assert gold(spark, ch) == {"columns": ["CODE", "ID", "NAME"], "rows": {(7, 1, 12), (9, 3, None)}}


def test_a_replica_grown_past_the_limit_takes_deletion_vectors_once_and_applies_the_same(spark, tmp_path, monkeypatch):
    # Every replica is past a limit of one byte; a plan looks at sizes after its MERGEs.
    monkeypatch.setenv("LAKESTREAMS_GOLD_DELETION_VECTOR_BYTES", "1")
    # Looked at on no plan of the first two runs (their plan ids are not multiples, and they
    # apply fewer records than a first load): their MERGEs rewrite files as before.
    monkeypatch.setattr(structure, "DELETION_VECTOR_CHECK_EVERY", 1000)
    ch = make_channel(tmp_path)
    write_lines(ch, "src", "f1.jsonl", [
        *ddl("d1", 100, EMP_DDL, "CREATE TABLE"),
        *ins("t1", 110, {"ID": 1, "NAME": "ann", "CODE": 7}),
        *ins("t2", 120, {"ID": 2, "NAME": "bob", "CODE": 8}),
        *ins("t3", 130, {"ID": 3, "NAME": "cy", "CODE": 9}),
    ])
    run_pipeline(spark, ch)
    table = ch.storage.table("gold", "hr__emp").replace("`", "")
    write_lines(ch, "src", "f2.jsonl", [
        *upd("t4", 200, 1, {"ID": 1, "CODE": 70}),
        *Txn("t5", 210).row("DELETE", "EMP", old={"ID": 2}).commit(),
        *ins("t6", 220, {"ID": 4, "NAME": "di", "CODE": 10}),
    ])
    run_pipeline(spark, ch)
    assert "delta.enableDeletionVectors" not in spark.sql(f"DESCRIBE DETAIL {table}").first()["properties"]
    # A plan that applies this many records to a target looks at its size.
    monkeypatch.setattr(structure, "DELETION_VECTOR_CHECK_RECORDS", 2)
    write_lines(ch, "src", "f3.jsonl", [
        *upd("t7", 300, 3, {"ID": 5, "CODE": 90}),  # a key move: deletes at 3, writes at 5
        *ddl("d2", 310, "ALTER TABLE hr.emp RENAME COLUMN name TO full_name"),
        *upd("t8", 320, 4, {"ID": 4, "FULL_NAME": "dee"}),
    ])
    run_pipeline(spark, ch)
    assert spark.sql(f"DESCRIBE DETAIL {table}").first()["properties"]["delta.enableDeletionVectors"] == "true"
    write_lines(ch, "src", "f4.jsonl", [
        *upd("t9", 400, 1, {"ID": 1, "CODE": 71}),
        *Txn("t10", 410).row("DELETE", "EMP", old={"ID": 4}).commit(),
    ])
    run_pipeline(spark, ch)
    assert gold(spark, ch) == {"columns": ["CODE", "FULL_NAME", "ID"], "rows": {(71, "ann", 1), (90, "cy", 5)}}
    detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
    assert "deletionVectors" in detail["tableFeatures"]
    history = spark.sql(f"DESCRIBE HISTORY {table}").orderBy("version").collect()
    # Turned on once, after the third run's MERGE; the fourth marks rows rather than
    # rewrite the files it changes, as the second and third did.
    turned_on = [r for r in history if r["operation"] == "SET TBLPROPERTIES"
                 and "delta.enableDeletionVectors" in r["operationParameters"]["properties"]]
    assert len(turned_on) == 1
    merges = [r["operationMetrics"] for r in history if r["operation"] == "MERGE"]
    assert len(merges) == 4
    for m in merges[1:3]:
        assert int(m["numTargetDeletionVectorsAdded"]) == 0 and int(m["numTargetRowsCopied"]) > 0, m
    assert int(merges[3]["numTargetDeletionVectorsAdded"]) > 0 and int(merges[3]["numTargetRowsCopied"]) == 0, merges[3]
    assert queued(spark, ch) == {}
