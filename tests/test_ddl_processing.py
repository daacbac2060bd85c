"""GoldenGate DDL processing in the pipeline: the source dictionary takes every record,
the target follows only what the processing APPLIED; DDLERROR IGNORE / DISCARD / ABEND
each leave a trace (DDL log, error queue, a stopped batch that a re-run completes); MAP
names DML and DDL targets alike."""

from __future__ import annotations

import dataclasses
from functools import partial

import pytest
import yaml
from conftest import make_channel, write_lines
from records import Txn

from lakestreams.cli import main
from lakestreams.config import ddl_processing_config
from lakestreams.errors import ConfigError
from lakestreams.pipeline import run_pipeline
from silver.adaptddl import AdaptDdl
from silver.changes import change_table_name
from silver.ddl_processing import process_ddl, rule_renamed, target_names
from silver.evolution import read_ddl
from silver.gg_params import parse_params
from silver.goldengate import DdlAbend
from silver.rules import build_clients

SRC = "DBS1.EXAMPLE.COM"
EMP_DDL = ("CREATE TABLE hr.emp (id NUMBER(4) NOT NULL, name VARCHAR2(10), code NUMBER(5), "
           "CONSTRAINT emp_pk PRIMARY KEY (id))")
DEPT_DDL = "CREATE TABLE hr.dept (id NUMBER(4) NOT NULL, CONSTRAINT dept_pk PRIMARY KEY (id))"
PARAMS = """
MAP hr.*, TARGET hr_copy.*;
DDL INCLUDE MAPPED EXCLUDE OPTYPE TRUNCATE
DDLERROR 1430 IGNORE
DDLERROR 904 DISCARD
"""


def ddl(txid: str, scn: int, text: str, verb: str = "ALTER TABLE", tag: str | None = None) -> list[dict]:
    t = Txn(txid, scn, tag=tag).ddl(text, name="EMP")
    t.records[0]["command_type"] = verb
    return t.commit()


def ins(txid: str, scn: int, row: dict) -> list[dict]:
    return Txn(txid, scn).row("INSERT", "EMP", new=row).commit()


def rows(spark, ch, layer: str, table: str, *cols: str) -> list[tuple]:
    df = spark.table(ch.storage.table(layer, table).replace("`", ""))
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


# -- configuration ---------------------------------------------------------------------------------
def test_parameter_text_and_yaml_give_the_same_processing():
    yaml_form = {
        "maps": [{"source": "hr.*", "target": "hr_copy.*"}],
        "ddl": [{"include": {"scope": "MAPPED"}}, {"exclude": {"optype": "TRUNCATE"}}],
        "ddlerror": [{"error": 1430, "action": "IGNORE"}, {"error": 904, "action": "DISCARD"}],
    }
    assert ddl_processing_config({"params": PARAMS}) == ddl_processing_config(yaml_form) == parse_params(PARAMS)
    with pytest.raises(ConfigError, match="ddl_processing: give params"):
        ddl_processing_config({"params": PARAMS, "maps": []})
    with pytest.raises(ConfigError, match="ddl_processing: .*OPTYPE"):
        ddl_processing_config({"params": "DDL INCLUDE OPTYPE NOSUCH"})


def test_names_rule_renames_then_map_then_integrate_schema(tmp_path):
    ch = make_channel(tmp_path, ddl_processing={"params": "MAP hr.emp*, TARGET hr_copy.*;\n"
                                                          "MAP hr.emp, TARGET hr_hist.emp_h;"})
    assert target_names(ch, "HR", "HR", "EMP") == [("HR_COPY", "EMP"), ("HR_HIST", "EMP_H")]
    # A rule renamed the table first: the MAPs see the new name.
    assert target_names(ch, "HR", "HR", "DEPT") == [("HR", "DEPT")]
    assert target_names(ch, "HR", "HR", "EMPLOYEES") == [("HR_COPY", "EMPLOYEES")]
    ch = dataclasses.replace(ch, adapt_ddl=(AdaptDdl(capture_schema="hr", integrate_schema="dwh"),))
    assert target_names(ch, "HR", "HR", "EMP") == [("DWH", "EMP"), ("DWH", "EMP_H")]
    assert target_names(ch, "SALES", "HR", "EMPLOYEES") == [("HR_COPY", "EMPLOYEES")]


def emp_created() -> dict:
    """The revisions of a source whose one table, HR.EMP, was created at SCN 100."""
    created = read_ddl({}, EMP_DDL, 100, "HR", (AdaptDdl(),))
    return {("HR", "EMP"): [rev for _, rev in created.revisions]}


def test_ddlsubst_that_changes_the_statement_is_an_error_for_ddlerror():
    history = emp_created()
    text = "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"
    reading = read_ddl(history, text, 110, "HR", (AdaptDdl(),))
    same = parse_params("DDLSUBST 'hr' WITH 'hr'\nDDLERROR DEFAULT DISCARD")
    assert process_ddl(reading, text, None, "HR", same).outcome == "APPLIED"
    widened = parse_params("DDLSUBST 'VARCHAR2(20)' WITH 'VARCHAR2(99)'\nDDLERROR DEFAULT DISCARD")
    done = process_ddl(reading, text, None, "HR", widened)
    assert done.outcome == "DISCARDED" and "DDLSUBST changed what the statement does" in done.discard
    # The source dictionary still takes the record; the target does not follow.
    assert done.reading.decision == "IGNORE" and [r.decision for _, r in done.reading.revisions] == ["IGNORE"]
    # A substitution in a physical clause (the tablespace) changes no structure.
    move = "ALTER TABLE hr.emp MOVE TABLESPACE users"
    tablespace = parse_params("DDLSUBST 'users' WITH 'hr_data'")
    done = process_ddl(read_ddl(history, move, 120, "HR", (AdaptDdl(),)), move, None, "HR", tablespace)
    assert done.outcome == "APPLIED" and done.target_ddl == ("ALTER TABLE hr.emp MOVE TABLESPACE hr_data",)
    with pytest.raises(DdlAbend, match="DDLSUBST changed"):
        process_ddl(reading, text, None, "HR", parse_params("DDLSUBST 'VARCHAR2(20)' WITH 'VARCHAR2(99)'"))


@pytest.mark.parametrize("subst", [
    "DDLSUBST 'GENERATED ALWAYS AS (id*2) VIRTUAL' WITH ''",  # the virtual column made stored
    "DDLSUBST 'DEFAULT 0' WITH 'DEFAULT 1'",  # another default
])
def test_ddlsubst_that_changes_a_created_column_s_default_or_virtual_flag_is_an_error(subst):
    """Column equality in the dictionary leaves defaults and virtual flags out (they change
    no layout), but a substitution that changes them changes what the CREATE does."""
    text = "CREATE TABLE hr.k (id NUMBER(4) PRIMARY KEY, n NUMBER DEFAULT 0, twice NUMBER GENERATED ALWAYS AS (id*2) VIRTUAL)"
    reading = read_ddl({}, text, 100, "HR", (AdaptDdl(),))
    assert process_ddl(reading, text, None, "HR", parse_params("DDLERROR DEFAULT DISCARD")).outcome == "APPLIED"
    done = process_ddl(reading, text, None, "HR", parse_params(f"{subst}\nDDLERROR DEFAULT DISCARD"))
    assert done.outcome == "DISCARDED" and "DDLSUBST changed what the statement does" in done.discard


def test_the_mapped_statement_is_read_again_with_the_channel_s_number_policy():
    """A NUMBER without precision reads as the channel says (here DOUBLE) in the record and
    in the MAP's rewrite alike: the target does what the source did."""
    history = emp_created()
    text = "ALTER TABLE hr.emp ADD (ratio NUMBER)"
    reading = read_ddl(history, text, 110, "HR", (AdaptDdl(),), number_policy="double")
    done = process_ddl(reading, text, None, "HR", parse_params(PARAMS), number_policy="double")
    assert done.outcome == "APPLIED" and done.target_ddl == ("ALTER TABLE HR_COPY.EMP ADD (ratio NUMBER)",)


METADATA_EMP2 = (
    'CREATE TABLE "HR"."EMP2"\n   (\t"ID" NUMBER(4,0) NOT NULL ENABLE,\n\t"NOTE" LONG,\n'
    '\t"TWICE" NUMBER GENERATED ALWAYS AS ("ID"*2) VIRTUAL ,\n'
    '\t CONSTRAINT "EMP2_PK" PRIMARY KEY ("ID")\n  USING INDEX PCTFREE 10 TABLESPACE "USERS"  ENABLE,\n'
    '\t SUPPLEMENTAL LOG DATA (ALL) COLUMNS\n   ) SEGMENT CREATION IMMEDIATE\n  PCTFREE 10 NOCOMPRESS LOGGING\n'
    '  STORAGE(INITIAL 65536 NEXT 1048576)\n  TABLESPACE "USERS" '
)


@pytest.mark.parametrize("text", [
    METADATA_EMP2,
    'ALTER TABLE "HR"."EMP" MODIFY ("NAME" VARCHAR2(100 BYTE) NOT NULL ENABLE)',
    "ALTER TABLE hr.emp MODIFY (code NUMBER(9), name VARCHAR2(30))",
    "ALTER TABLE hr.emp DROP (code, name)",
    "ALTER TABLE hr.emp ADD (note LONG, twice NUMBER GENERATED ALWAYS AS (id*2) VIRTUAL)",
    "ALTER TABLE hr.emp MOVE TABLESPACE users",
    "ALTER TABLE hr.emp ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS",
], ids=["metadata-create", "metadata-modify", "modify-two", "drop-two", "add-long-virtual", "move", "supplemental"])
def test_a_map_renames_the_table_where_it_is_written_and_leaves_the_rest_as_captured(text):
    """The MAP target's statement is the captured text with the table's name replaced
    where it stands: clauses the parser reads but would not write back the same way
    (NOT NULL ENABLE, LONG, VIRTUAL, MODIFY and DROP lists, physical clauses) stay as
    they were, and the statement does on the target what it did on the source."""
    history = emp_created()
    reading = read_ddl(history, text, 110, "HR", (AdaptDdl(),))
    assert reading.decision != "ERROR", reading.reason
    done = process_ddl(reading, text, None, "HR", parse_params("MAP hr.*, TARGET hr_copy.*;\nDDLERROR DEFAULT DISCARD"))
    assert done.outcome == "APPLIED", done.discard
    (target,) = done.target_ddl
    table = "EMP2" if "EMP2" in text else "EMP"
    written = '"HR"."EMP2"' if table == "EMP2" else ('"HR"."EMP"' if '"HR"' in text else "hr.emp")
    assert target == text.replace(written, f"HR_COPY.{table}", 1)


def test_a_unique_index_follows_its_table_s_map_under_its_own_name():
    """CREATE UNIQUE INDEX is applied to the MAP target of its table (MAPDERIVED names the
    index after the target's schema, which changes no key); DROP INDEX names the index
    only, so it is MAPPED by a MAP of the index's name (GoldenGate's scope)."""
    history = emp_created()
    text = "CREATE UNIQUE INDEX hr.emp_code_uk ON hr.emp (code, name)"
    reading = read_ddl(history, text, 110, "HR", (AdaptDdl(),))
    assert (reading.statement, reading.decision) == ("CREATE UNIQUE INDEX", "ALTER")
    done = process_ddl(reading, text, None, "HR", parse_params("MAP hr.*, TARGET hr_copy.*;\nDDL INCLUDE MAPPED"))
    assert done.outcome == "APPLIED" and done.target_ddl == (
        "CREATE UNIQUE INDEX HR_COPY.EMP_CODE_UK ON HR_COPY.EMP (code, name)",)
    history[("HR", "EMP")] = [*history[("HR", "EMP")], *(r for _, r in reading.revisions)]
    drop = "DROP INDEX hr.emp_code_uk"
    dropped = read_ddl(history, drop, 120, "HR", (AdaptDdl(),))
    assert [(k, r.table.constraints) for k, r in dropped.revisions] == [
        (("HR", "EMP"), (("EMP_PK", "PRIMARY KEY", ("ID",)),))]
    only_emp = process_ddl(dropped, drop, None, "HR", parse_params("MAP hr.emp, TARGET hr_copy.emp;\nDDL INCLUDE MAPPED"))
    assert (only_emp.outcome, only_emp.reading.decision) == ("EXCLUDED", "IGNORE")
    assert process_ddl(dropped, drop, None, "HR", parse_params("MAP hr.*, TARGET hr_copy.*;\nDDL INCLUDE MAPPED")
                       ).outcome == "APPLIED"
    # A rename names the index only, as DROP INDEX does; the key keeps its columns.
    rename = "ALTER INDEX hr.emp_code_uk RENAME TO emp_cn_uk"
    renamed = read_ddl(history, rename, 115, "HR", (AdaptDdl(),))
    assert [(k, r.table.constraints[-1]) for k, r in renamed.revisions] == [
        (("HR", "EMP"), ("EMP_CN_UK", "UNIQUE INDEX", ("CODE", "NAME")))]
    done = process_ddl(renamed, rename, None, "HR", parse_params("MAP hr.*, TARGET hr_copy.*;\nDDL INCLUDE MAPPED"))
    assert (done.outcome, done.target_ddl) == ("APPLIED", ("ALTER INDEX HR_COPY.EMP_CODE_UK RENAME TO EMP_CN_UK",))
    assert process_ddl(renamed, rename, None, "HR", parse_params("MAP hr.emp, TARGET hr_copy.emp;\nDDL INCLUDE MAPPED")
                       ).outcome == "EXCLUDED"


def test_an_adaptddl_fail_stops_the_batch_unless_a_ddlerror_rule_says_otherwise():
    history = emp_created()
    text = "DROP TABLE hr.emp"
    reading = read_ddl(history, text, 110, "HR", (AdaptDdl(),))
    assert reading.decision == "FAIL"  # the channel's last table
    # Without DDL processing the job fails, as HVR's does: the batch stops and says why.
    with pytest.raises(DdlAbend, match="FAIL: DROP TABLE of the channel's last table.*change the channel's adapt_ddl"):
        process_ddl(reading, text, None, "HR", None)
    # With it, the failure is DDLERROR's to decide: ABEND without a rule, IGNORE or DISCARD by one.
    with pytest.raises(DdlAbend, match="no DDLERROR rule"):
        process_ddl(reading, text, None, "HR", parse_params("DDL INCLUDE ALL"))
    ignored = process_ddl(reading, text, None, "HR", parse_params("DDLERROR FAIL IGNORE"))
    assert ignored.outcome == "IGNORED_ERROR" and ignored.reading.decision == "IGNORE"
    # The source dictionary still takes the DROP; the target keeps the table.
    assert [r.status for _, r in ignored.reading.revisions] == ["DROPPED"]
    discarded = process_ddl(reading, text, None, "HR", parse_params("DDLERROR DEFAULT DISCARD"))
    assert discarded.outcome == "DISCARDED" and "FAIL" in discarded.discard
    # A decision other than FAIL is not an error.
    other = read_ddl(history, text, 110, "HR", (AdaptDdl(on_drop_table="KEEP"),))
    assert process_ddl(other, text, None, "HR", None).reading.decision == "IGNORE"


# -- the pipeline ------------------------------------------------------------------------------------
@pytest.mark.extended  # covered in the core: test_goldengate and the tests above decide every DDLERROR action, name rule and substitution; every DDL of test_ddl_evolution goes through the same processing step in the pipeline
def test_ddl_processing_in_the_pipeline_under_each_ddlerror_action(spark, tmp_path, capsys):
    ch = make_channel(tmp_path, ddl_processing={"params": PARAMS})
    write_lines(ch, "src", "f1.jsonl", [
        *ddl("d1", 100, EMP_DDL, "CREATE TABLE"),
        *ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": 7}),
        *ddl("d2", 130, "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"),
        *ddl("d3", 140, "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"),  # ORA-01430: IGNORE
        *ddl("d4", 150, "ALTER TABLE hr.emp DROP COLUMN ghost"),  # ORA-00904: DISCARD
        *ddl("d5", 160, "TRUNCATE TABLE hr.emp", "TRUNCATE TABLE"),  # EXCLUDE OPTYPE TRUNCATE
        *ddl("d6", 165, "ALTER TABLE hr.emp ADD (note VARCHAR2(5))", tag="01"),  # from an apply
        *ins("t2", 170, {"ID": 2, "NAME": "bob", "EMAIL": "b@x"}),
    ])
    run_pipeline(spark, ch)
    # MAP names the DML target too: gold HR_COPY.EMP; the excluded TRUNCATE left row 1.
    assert rows(spark, ch, "gold", "hr_copy__emp", "ID", "NAME", "CODE", "EMAIL") == [
        (1, "ann", 7, None), (2, "bob", None, "b@x")]
    log = rows(spark, ch, "silver", "ddl_log", "commit_scn", "scope", "processing", "decision")
    assert log == [
        (100, "MAPPED", "APPLIED", "ADD"), (130, "MAPPED", "APPLIED", "ALTER"),
        (140, "MAPPED", "IGNORED_ERROR", "IGNORE"), (150, "MAPPED", "DISCARDED", "IGNORE"),
        (160, "MAPPED", "EXCLUDED", "IGNORE"), (165, None, "IGNORED_REPLICATE", "IGNORE"),
    ]
    # The source dictionary took the replicated ADD; the target did not follow it.
    dictionary = rows(spark, ch, "silver", "dictionary", "revision_scn", "columns")
    assert [c["name"] for c in dictionary[-1][1]] == ["ID", "NAME", "CODE", "EMAIL", "NOTE"]
    assert "NOTE" not in spark.table(ch.storage.table("gold", "hr_copy__emp").replace("`", "")).columns
    texts = dict(rows(spark, ch, "silver", "ddl_log", "commit_scn", "target_ddl"))
    assert texts[130] == ["ALTER TABLE HR_COPY.EMP ADD (email VARCHAR2(20))"] and texts[150] == []
    reasons = dict(rows(spark, ch, "silver", "ddl_log", "commit_scn", "reason"))
    assert "1430" in reasons[140] and "DDLERROR 1430 IGNORE" in reasons[140]
    queue = dict(rows(spark, ch, "gold", "error_queue", "transaction_id", "error"))
    assert set(queue) == {"d4"} and "DDL discarded" in queue["d4"] and "HR.EMP has no column GHOST" in queue["d4"]

    # No DDLERROR rule for ORA-00955: GoldenGate abends, the batch stops and nothing of it lands.
    write_lines(ch, "src", "f2.jsonl", [
        *ins("t3", 200, {"ID": 3, "NAME": "cy"}),
        *ddl("d7", 210, EMP_DDL, "CREATE TABLE"),
    ])
    with pytest.raises(DdlAbend, match=r"transaction d7 .* SCN 210 .*955"):
        run_pipeline(spark, ch)
    assert [r[0] for r in rows(spark, ch, "gold", "hr_copy__emp", "ID")] == [1, 2]
    assert len(rows(spark, ch, "silver", "ddl_log", "commit_scn")) == 6
    # With a DEFAULT rule the same batch runs again to the end.
    fixed = dataclasses.replace(ch, ddl_processing=parse_params(PARAMS + "DDLERROR DEFAULT IGNORE\n"))
    run_pipeline(spark, fixed)
    assert [r[0] for r in rows(spark, ch, "gold", "hr_copy__emp", "ID")] == [1, 2, 3]
    last = rows(spark, ch, "silver", "ddl_log", "commit_scn", "processing", "statement")[-1]
    assert last == (210, "IGNORED_ERROR", "CREATE TABLE")

    # `lakestreams ddl` shows the log from the channel file (here: the last 3 records of HR.EMP).
    path = tmp_path / "channel.yml"
    path.write_text(yaml.safe_dump({
        "name": "t", "storage": {"warehouse": str(ch.storage.warehouse), "state": str(ch.storage.state),
                                 "schema": ch.storage.schema},
        "landing": [{"name": "src", "path": str(ch.landing[0].path)}],
        "ddl_processing": {"params": PARAMS + "DDLERROR DEFAULT IGNORE\n"},
    }))
    assert main(["ddl", "hr.emp", "--limit", "3", "--channel", str(path)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "7 DDL record(s) for HR.EMP, the last 3"
    assert "SCN 160  txn d5  TRUNCATE TABLE  HR.EMP  → IGNORE  MAPPED EXCLUDED" in shown[1]
    assert "SCN 210  txn d7  CREATE TABLE  HR.EMP  → IGNORE  MAPPED IGNORED_ERROR" in shown[-3]
    assert "955" in shown[-1] and "DDLERROR DEFAULT IGNORE" in shown[-1]
    assert main(["ddl", "hr.dept", "--channel", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "the DDL log is empty for HR.DEPT"
    # A record about an index names the index; it is the table's when it made a revision of it.
    index = Txn("d8", 220).ddl("CREATE UNIQUE INDEX hr.emp_name_uk ON hr.emp (name)", name="EMP_NAME_UK")
    index.records[0].update(command_type="CREATE INDEX", object_type="INDEX")
    write_lines(ch, "src", "f3.jsonl", index.commit())
    run_pipeline(spark, fixed)
    assert main(["ddl", "hr.emp", "--limit", "1", "--channel", str(path)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "8 DDL record(s) for HR.EMP, the last 1"
    assert "SCN 220  txn d8  CREATE UNIQUE INDEX  HR.EMP_NAME_UK" in shown[1]


def test_a_rename_the_target_does_not_follow_keeps_its_values_and_the_next_ddl_it_follows_makes_it(spark, tmp_path):
    """An EXCLUDEd RENAME COLUMN leaves the target's column as it was, values included (a
    later record's value under the new name has no column to go to, as with an excluded
    ADD). The next DDL the target follows gives it the source's structure: the column is
    renamed then, keeping its values."""
    ch = make_channel(tmp_path, ddl_processing={"params": "DDL INCLUDE ALL, EXCLUDE INSTR 'RENAME'"})
    write_lines(ch, "src", "f1.jsonl", [
        *ddl("d1", 100, EMP_DDL, "CREATE TABLE"),
        *ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": 7}),
        *ddl("d2", 130, "ALTER TABLE hr.emp RENAME COLUMN code TO grade"),
        *ins("t2", 140, {"ID": 2, "NAME": "bob", "GRADE": 8}),
    ])
    run_pipeline(spark, ch)
    assert rows(spark, ch, "gold", "hr__emp", "ID", "NAME", "CODE") == [(1, "ann", 7), (2, "bob", None)]
    assert "GRADE" not in spark.table(ch.storage.table("gold", "hr__emp").replace("`", "")).columns
    write_lines(ch, "src", "f2.jsonl", [
        *ddl("d3", 150, "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"),
        *ins("t3", 160, {"ID": 3, "NAME": "cy", "GRADE": 9, "EMAIL": "c@x"}),
    ])
    run_pipeline(spark, ch)
    assert rows(spark, ch, "gold", "hr__emp", "ID", "GRADE", "EMAIL") == [(1, 7, None), (2, None, None), (3, 9, "c@x")]
    assert "CODE" not in spark.table(ch.storage.table("gold", "hr__emp").replace("`", "")).columns
    log = rows(spark, ch, "silver", "ddl_log", "commit_scn", "processing", "decision")
    assert log == [(100, "APPLIED", "ADD"), (130, "EXCLUDED", "IGNORE"), (150, "APPLIED", "ALTER")]
    # Silver's history holds the value under the name the target has now.
    history = spark.table(ch.storage.table("silver", change_table_name(SRC, "HR", "EMP")).replace("`", ""))
    assert sorted((r["_new"]["ID"], r["_new"]["GRADE"]) for r in history.collect()) == [(1, 7), (2, None), (3, 9)]


def test_the_target_structure_under_keep_existing_structure_follows_renames_it_did_not_follow_before():
    """KeepExistingStructure keeps a column the source dropped; a column renamed while the
    target did not follow is not one: the next revision it follows renames it."""
    from silver.dictionary import parse_create_table
    from silver.evolution import Revision, target_structures

    first = parse_create_table(EMP_DDL)
    renamed = parse_create_table(EMP_DDL.replace("code", "grade"))
    more = parse_create_table(EMP_DDL.replace("code NUMBER(5)", "grade NUMBER(5), email VARCHAR2(20)"))
    revs = [Revision(100, first), Revision(130, renamed, renames=(("GRADE", "CODE"),), decision="IGNORE"),
            Revision(150, more, decision="ALTER", keep_structure=True)]
    assert [[c.name for c in t.columns] for t in target_structures(revs)] == [
        ["ID", "NAME", "CODE"], ["ID", "NAME", "CODE"], ["ID", "NAME", "GRADE", "EMAIL"]]


TWO_TARGETS = "MAP hr.emp, TARGET hr_copy.emp;\nMAP hr.emp, TARGET hr_hist.emp;\n"


def test_each_map_target_follows_only_what_was_applied_to_it():
    """Several MAPs of one table: a DDL record applied to one target and left out of
    another (EXCLUDE, or an error DDLERROR ignores or discards) is followed by the first
    only; the revision names the others, and ``for_target`` reads it for each."""
    from silver.evolution import for_target, target_structures

    history = emp_created()
    text = "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"
    reading = read_ddl(history, text, 110, "HR", (AdaptDdl(),))
    done = process_ddl(reading, text, None, "HR", parse_params(TWO_TARGETS + "DDL INCLUDE OBJNAME hr_copy.*"))
    assert done.outcome == "APPLIED" and done.target_ddl == ("ALTER TABLE HR_COPY.EMP ADD (email VARCHAR2(20))",)
    assert [r.excluded for _, r in done.reading.revisions] == [("HR_HIST.EMP",)]
    assert "HR_HIST.EMP does not follow (EXCLUDED" in done.reading.reason
    revs = history[("HR", "EMP")] + [r for _, r in done.reading.revisions]
    names = {t: [c.name for c in target_structures(for_target(revs, t))[-1].columns]
             for t in (("HR_COPY", "EMP"), ("HR_HIST", "EMP"))}
    assert names == {("HR_COPY", "EMP"): ["ID", "NAME", "CODE", "EMAIL"], ("HR_HIST", "EMP"): ["ID", "NAME", "CODE"]}
    # A substitution that changes the statement for one target only: that one's error is
    # DISCARDed (the record goes to the error queue), the other target follows.
    subst = "DDLSUBST 'VARCHAR2(20)' WITH 'VARCHAR2(99)' INCLUDE OBJNAME hr_hist.*\nDDLERROR DEFAULT DISCARD"
    done = process_ddl(reading, text, None, "HR", parse_params(TWO_TARGETS + subst))
    assert done.outcome == "DISCARDED" and done.discard and "DDLSUBST changed" in done.discard
    assert [r.excluded for _, r in done.reading.revisions] == [("HR_HIST.EMP",)]
    assert [r.decision for _, r in done.reading.revisions] == ["ALTER"]
    # IntegrateSchema names the targets as it names rows' targets.
    done = process_ddl(reading, text, None, "HR", parse_params(TWO_TARGETS + "DDL INCLUDE OBJNAME hr_copy.*"),
                       integrate_schema="dwh")
    assert [r.excluded for _, r in done.reading.revisions] == [("DWH.EMP",)]


def test_a_truncate_or_drop_left_out_of_one_map_target_leaves_that_target_whole():
    """A TRUNCATE TABLE applied to one MAP target and excluded for another names the other
    (``truncates_excluded``); a DROP TABLE that drops its targets, excluded for one, drops
    that one's table from the channel only (``for_target``: DROP, not DROP TARGET)."""
    from silver.evolution import DROPS_TARGET, for_target

    history = emp_created()
    params = parse_params(TWO_TARGETS + "DDL INCLUDE MAPPED EXCLUDE OPTYPE TRUNCATE OBJNAME hr_hist.* "
                                        "EXCLUDE OPTYPE DROP OBJNAME hr_hist.*")
    text = "TRUNCATE TABLE hr.emp"
    done = process_ddl(read_ddl(history, text, 110, "HR", (AdaptDdl(),)), text, None, "HR", params)
    assert done.reading.truncates == ("HR", "EMP") and done.reading.truncates_excluded == ("HR_HIST.EMP",)
    assert "HR_HIST.EMP does not follow (EXCLUDED" in done.reading.reason
    # Applied to every target, or excluded for none: nothing is left out.
    done = process_ddl(read_ddl(history, text, 110, "HR", (AdaptDdl(),)), text, None, "HR", parse_params(TWO_TARGETS))
    assert done.reading.truncates == ("HR", "EMP") and done.reading.truncates_excluded == ()
    # Another table, so that EMP is not the channel's last (which AdaptDDL never drops).
    history.update({k: [rev] for k, rev in read_ddl({}, DEPT_DDL, 90, "HR", (AdaptDdl(),)).revisions})
    text = "DROP TABLE hr.emp"
    reading = read_ddl(history, text, 120, "HR", (AdaptDdl(on_drop_table="DROP_FROM_CHANNEL_AND_TARGET"),))
    done = process_ddl(reading, text, None, "HR", params)
    ((_, dropped),) = done.reading.revisions
    assert (dropped.status, dropped.decision, dropped.excluded) == ("DROPPED", DROPS_TARGET, ("HR_HIST.EMP",))
    revs = history[("HR", "EMP")] + [dropped]
    assert [r.decision for r in for_target(revs, ("HR_COPY", "EMP"))][-1] == DROPS_TARGET
    assert [r.decision for r in for_target(revs, ("HR_HIST", "EMP"))][-1] == "DROP"
    # Created again: the copy was dropped with its table and starts empty; under KeepOldRows
    # the history target, which kept its table, keeps its rows too (without it both empty).
    history[("HR", "EMP")] = revs
    for keep, left_whole in ((True, ("HR_HIST.EMP",)), (False, ())):
        action = AdaptDdl(on_drop_table="DROP_FROM_CHANNEL_AND_TARGET", keep_old_rows=keep)
        done = process_ddl(read_ddl(history, EMP_DDL, 130, "HR", (action,)), EMP_DDL, None, "HR", params)
        assert done.reading.truncates == ("HR", "EMP") and done.reading.truncates_excluded == left_whole
    assert "HR_HIST.EMP kept its table at the DROP and keeps its old rows (KeepOldRows)" in read_ddl(
        history, EMP_DDL, 130, "HR", (AdaptDdl(on_drop_table="DROP_FROM_CHANNEL_AND_TARGET", keep_old_rows=True),)).reason


#: The table's rows are renamed HR.STAFF by a rule-based transformation on its DML rule;
#: two MAPs name the renamed table (rule-based renames first, then MAP targets).
STAFF_RULES = {"rules": [{"table": "hr.emp", "include_ddl": True, "source_database": SRC}],
               "transformations": [{"rule": "EMP1", "rename_table": {"from": "hr.emp", "to": "hr.staff"}}]}
STAFF_MAPS = ("MAP hr.staff, TARGET hr_copy.staff;\nMAP hr.staff, TARGET hr_hist.staff;\n"
              "DDL INCLUDE MAPPED EXCLUDE OPTYPE TRUNCATE OBJNAME hr_hist.* ")


def test_a_ddl_record_is_named_by_rule_based_renames_before_its_maps(tmp_path):
    """One name mapping for DML and DDL: the rename the table's rows take (attached to its
    DML rule, not the DDL rule that kept the record) names the DDL too, then the MAPs."""
    ch = make_channel(tmp_path, apply=STAFF_RULES, ddl_processing={"params": STAFF_MAPS})
    clients = build_clients(ch)
    assert rule_renamed(clients, SRC, "HR", "EMP") == ("HR", "STAFF")
    assert rule_renamed(clients, SRC, "HR", "DEPT") == ("HR", "DEPT")
    # The rule covers HR.EMP of its source database only: another's rows keep their name.
    assert rule_renamed(clients, "DBS2.EXAMPLE.COM", "HR", "EMP") == ("HR", "EMP")
    assert target_names(ch, "HR", *rule_renamed(clients, SRC, "HR", "EMP")) == [
        ("HR_COPY", "STAFF"), ("HR_HIST", "STAFF")]
    # A schema rename on a table's rule renames that table's rows only, so its DDL only.
    schema = make_channel(tmp_path, apply={"rules": [{"table": "hr.emp"}, {"table": "hr.dept"}], "transformations": [
        {"rule": "EMP1", "rename_schema": {"from": "hr", "to": "hr2"}}]})
    assert [rule_renamed(build_clients(schema), SRC, "HR", t) for t in ("EMP", "DEPT")] == [("HR2", "EMP"), ("HR", "DEPT")]
    text = "TRUNCATE TABLE emp"
    reading = read_ddl(emp_created(), text, 110, "HR", (AdaptDdl(),))
    done = process_ddl(reading, text, None, "HR", ch.ddl_processing, rename=partial(rule_renamed, clients, SRC))
    assert (done.outcome, done.target_ddl) == ("APPLIED", ("TRUNCATE TABLE HR_COPY.STAFF",))
    assert done.reading.truncates == ("HR", "EMP") and done.reading.truncates_excluded == ("HR_HIST.STAFF",)
    # Named as captured, the table is one no MAP names: DDL INCLUDE MAPPED takes it nowhere.
    done = process_ddl(reading, text, None, "HR", ch.ddl_processing)
    assert done.outcome == "EXCLUDED" and done.reading.truncates is None


def test_map_targets_in_the_pipeline_truncated_and_dropped_each_as_processed(spark, tmp_path):
    """Two MAP targets of a table renamed by a rule: each takes the DDL applied to it (named
    as its rows are), and a TRUNCATE, a DROP or a table created again acts per target."""
    ch = make_channel(tmp_path, adapt_ddl=[{"on_drop_table": "DROP_FROM_CHANNEL_AND_TARGET", "keep_old_rows": True}],
                      apply=STAFF_RULES, ddl_processing={"params": STAFF_MAPS + "EXCLUDE OPTYPE DROP OBJNAME hr_hist.*"})
    dept = Txn("d0", 90).ddl(DEPT_DDL, name="DEPT")
    dept.records[0]["command_type"] = "CREATE TABLE"
    write_lines(ch, "src", "f1.jsonl", [
        *dept.commit(),
        *ddl("d1", 100, EMP_DDL, "CREATE TABLE"),
        *ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": 7}),
        *ddl("d2", 130, "TRUNCATE TABLE hr.emp", "TRUNCATE TABLE"),
        *ins("t2", 140, {"ID": 2, "NAME": "bob", "CODE": 8}),
        *ddl("d3", 150, "ALTER TABLE hr.emp ADD (note VARCHAR2(20))"),
        *Txn("t3", 165).row("INSERT", "EMP", new={"ID": 3, "NAME": "cy", "CODE": 9, "NOTE": "new"}).commit(),
    ])
    run_pipeline(spark, ch)
    # The copy is emptied at SCN 130; the history target, which excluded the TRUNCATE, keeps
    # row 1. Both take the new column.
    assert rows(spark, ch, "gold", "hr_copy__staff", "ID", "NOTE") == [(2, None), (3, "new")]
    assert rows(spark, ch, "gold", "hr_hist__staff", "ID", "NOTE") == [(1, None), (2, None), (3, "new")]
    assert rows(spark, ch, "silver", "ddl_log", "commit_scn", "truncates_excluded", "target_ddl")[1:] == [
        (100, [], [f"CREATE TABLE HR_{t}.STAFF (id NUMBER(4) NOT NULL, name VARCHAR2(10), code NUMBER(5), "
                   "CONSTRAINT emp_pk PRIMARY KEY (id))" for t in ("COPY", "HIST")]),
        (130, ["HR_HIST.STAFF"], ["TRUNCATE TABLE HR_COPY.STAFF"]),
        (150, [], [f"ALTER TABLE HR_{t}.STAFF ADD (note VARCHAR2(20))" for t in ("COPY", "HIST")]),
    ]
    # A TRUNCATE in a batch without rows of the table reaches only the target it was applied
    # to; the DROP takes the copy's gold table with it, the history target keeps its table.
    write_lines(ch, "src", "f2.jsonl", [*ddl("d4", 170, "TRUNCATE TABLE hr.emp", "TRUNCATE TABLE"),
                                        *ddl("d5", 180, "DROP TABLE hr.emp", "DROP TABLE")])
    run_pipeline(spark, ch)
    assert not spark.catalog.tableExists(ch.storage.table("gold", "hr_copy__staff").replace("`", ""))
    assert rows(spark, ch, "gold", "hr_hist__staff", "ID") == [(1,), (2,), (3,)]
    # Created again: the copy starts empty; the history target kept its table at the DROP
    # and, under KeepOldRows, keeps its rows.
    write_lines(ch, "src", "f3.jsonl", [*ddl("d6", 190, EMP_DDL, "CREATE TABLE"),
                                        *ins("t4", 200, {"ID": 4, "NAME": "di", "CODE": 4})])
    run_pipeline(spark, ch)
    assert rows(spark, ch, "gold", "hr_copy__staff", "ID") == [(4,)]
    assert rows(spark, ch, "gold", "hr_hist__staff", "ID") == [(1,), (2,), (3,), (4,)]
    assert rows(spark, ch, "silver", "ddl_log", "commit_scn", "truncates_excluded")[-1] == (190, ["HR_HIST.STAFF"])


def test_several_map_targets_in_the_pipeline_each_follow_their_own_ddl(spark, tmp_path):
    ch = make_channel(tmp_path, ddl_processing={"params": TWO_TARGETS + "DDL INCLUDE OBJNAME hr_copy.*"})
    write_lines(ch, "src", "f1.jsonl", [
        *ddl("d1", 100, EMP_DDL, "CREATE TABLE"),
        *ins("t1", 120, {"ID": 1, "NAME": "ann", "CODE": 7}),
        *ddl("d2", 130, "ALTER TABLE hr.emp ADD (email VARCHAR2(20))"),
        *ins("t2", 140, {"ID": 2, "NAME": "bob", "EMAIL": "b@x"}),
    ])
    run_pipeline(spark, ch)
    assert rows(spark, ch, "gold", "hr_copy__emp", "ID", "NAME", "CODE", "EMAIL") == [
        (1, "ann", 7, None), (2, "bob", None, "b@x")]
    # The target the record was not applied to keeps its structure; the value has no column there.
    assert "EMAIL" not in spark.table(ch.storage.table("gold", "hr_hist__emp").replace("`", "")).columns
    assert rows(spark, ch, "gold", "hr_hist__emp", "ID", "NAME", "CODE") == [(1, "ann", 7), (2, "bob", None)]
    assert rows(spark, ch, "silver", "dictionary", "revision_scn", "excluded_targets") == [
        (100, []), (130, ["HR_HIST.EMP"])]
    log = dict(rows(spark, ch, "silver", "ddl_log", "commit_scn", "reason"))
    assert "HR_HIST.EMP does not follow (EXCLUDED" in log[130], log
