"""DML handlers: a target table's changes of one operation go through a registered
function set-wise; what it returns is applied, what it leaves out is consumed (counted
as handled), an ``_error`` it sets fails the transaction, and a broken handler stops the
silver batch with the reason until it is fixed."""

from __future__ import annotations

import pytest
from conftest import make_channel, write_lines
from pyspark.sql import functions as F
from records import REGIONS_DDL, Txn

from lakestreams.api import Streams
from lakestreams.audit import run_audit
from lakestreams.config import dml_handler_spec
from lakestreams.errors import ConfigError
from lakestreams.pipeline import run_pipeline
from silver.dictionary import parse_create_table
from silver.handlers import apply_dml_handlers, register_dml_handler


def upper_names(df):
    """Upper-case new names; consume renames to 'skip'; refuse 'bad'."""
    name = F.col("_new.REGION_NAME")
    return (
        df.where(~name.eqNullSafe(F.lit("skip")))
        .withColumn("_error", F.when(name == "bad", F.lit("handler refused: bad name")).otherwise(F.col("_error")))
        .withColumn("_new", F.col("_new").withField("REGION_NAME", F.upper(name)))
    )


register_dml_handler("upper_names", upper_names)
register_dml_handler("keep_rows", lambda df: df.limit(0))
register_dml_handler("twice", lambda df: df.unionByName(df))


def _region(rid: int, name: str) -> dict:
    return {"REGION_ID": rid, "REGION_NAME": name, "NOTE": None}


def test_dml_handlers_change_consume_and_fail_changes(spark, tmp_path):
    ch = make_channel(tmp_path, dml_handlers=[
        {"table": "hr.regions", "operation": "update", "handler": "upper_names"},
        {"table": "hr.regions", "operation": "DELETE", "handler": "keep_rows"},
    ])
    gold = f"{ch.storage.schema_name('gold')}.hr__regions"
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new=_region(1, "a")).row("INSERT", new=_region(2, "b"))
        .row("INSERT", new=_region(3, "c")).commit(),
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "x"})
        .row("UPDATE", old={"REGION_ID": 2}, new={"REGION_NAME": "skip"}).commit(),
        *Txn("t4", 400).row("UPDATE", old={"REGION_ID": 3}, new={"REGION_NAME": "bad"}).commit(),
        *Txn("t5", 500).row("DELETE", old={"REGION_ID": 1}).commit(),
    ])
    run_pipeline(spark, ch)
    rows = sorted((r["REGION_ID"], r["REGION_NAME"]) for r in spark.table(gold).collect())
    assert rows == [(1, "X"), (2, "b"), (3, "c")]
    queue = {r["transaction_id"]: r["error"] for r in spark.table(
        ch.storage.table("gold", "error_queue").replace("`", "")).collect()}
    assert set(queue) == {"t4"} and "handler refused: bad name" in queue["t4"]
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["handled"] == 2

    # A handler that returns a change twice stops the batch; fixed, the same batch goes on.
    s = Streams(ch)
    s.set_dml_handler("hr.regions", "UPDATE", "twice")
    write_lines(ch, "src", "f2.jsonl", Txn("t6", 600).row("UPDATE", old={"REGION_ID": 3}, new={"REGION_NAME": "y"})
                .commit())
    with pytest.raises(ConfigError, match="DML handler twice of HR.REGIONS UPDATE: it returned a change more than once"):
        run_pipeline(spark, s.channel)
    s.set_dml_handler("hr.regions", "UPDATE", None)
    run_pipeline(spark, s.channel)
    rows = sorted((r["REGION_ID"], r["REGION_NAME"]) for r in spark.table(gold).collect())
    assert rows == [(1, "X"), (2, "b"), (3, "y")]
    audit = run_audit(spark, s.channel)
    assert audit.ok, audit.problems


def test_dml_handler_settings_are_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"dml_handlers\[1\]: HR.REGIONS has a DML handler for UPDATE already"):
        make_channel(tmp_path, dml_handlers=[{"table": "hr.regions", "operation": "UPDATE", "handler": "upper_names"},
                                             {"table": "hr.regions", "operation": "update", "handler": "twice"}])
    with pytest.raises(ConfigError, match=r"dml_handlers\[0\].operation: 'MERGE' is not one of INSERT, UPDATE"):
        make_channel(tmp_path, dml_handlers=[{"table": "hr.regions", "operation": "merge", "handler": "twice"}])
    with pytest.raises(ConfigError, match="the DML handler 'nowhere' of HR.REGIONS INSERT is not registered"):
        make_channel(tmp_path, dml_handlers=[{"table": "hr.regions", "operation": "INSERT", "handler": "nowhere"}])
    with pytest.raises(ConfigError, match="not registered"):
        Streams(make_channel(tmp_path)).set_dml_handler("hr.regions", "INSERT", "nowhere")
    # One handler per table and operation: a DML handler and an error handler exclude each other.
    with pytest.raises(ConfigError, match=r"dml_handlers\[1\]: HR.REGIONS has an error handler for UPDATE already"):
        make_channel(tmp_path, dml_handlers=[
            {"table": "hr.regions", "operation": "UPDATE", "handler": "upsert", "error_handler": True},
            {"table": "hr.regions", "operation": "UPDATE", "handler": "upper_names"}])
    with pytest.raises(ConfigError, match=r"dml_handlers\[0\]: give either handler .* or sql"):
        make_channel(tmp_path, dml_handlers=[{"table": "hr.regions", "operation": "UPDATE", "handler": "upsert",
                                              "sql": {"command_type": "INSERT"}}])
    # SQL handlers are parsed when the channel loads: a condition outside the language is refused.
    with pytest.raises(ConfigError, match=r"error handler SQL of HR.REGIONS UPDATE: .*not allowed"):
        make_channel(tmp_path, dml_handlers=[{"table": "hr.regions", "operation": "UPDATE", "error_handler": True,
                                              "sql": {"consume_when": "1 = 1; DROP TABLE hr.regions"}}])
    with pytest.raises(ConfigError, match=r"sql.command_type: 'MERGE' is not one of INSERT, UPDATE, DELETE"):
        make_channel(tmp_path, dml_handlers=[{"table": "hr.regions", "operation": "UPDATE",
                                              "sql": {"command_type": "merge"}}])


def upsert(df):
    """Error handler for INSERTs: one that finds its key taken updates the row instead;
    one whose values do not convert is consumed."""
    taken = F.col("_error").contains("ORA-00001")
    key = F.struct(F.col("_new.REGION_ID").alias("REGION_ID"), F.lit(None).cast("string").alias("REGION_NAME"),
                   F.lit(None).cast("string").alias("NOTE"))
    return (
        df.where(taken)
        .withColumn("_command_type", F.lit("UPDATE"))
        .withColumn("_old", key)
        .withColumn("_old_present", F.array(F.lit("REGION_ID")))
        .withColumn("_error", F.lit(None).cast("string"))
    )


register_dml_handler("upsert", upsert)


@pytest.mark.extended  # covered in the core: test_sql_handler_consumes_raises_and_sets runs both handler forms in Spark; the DML handler test runs handlers in the pipeline
def test_error_handlers_resolve_consume_and_raise(spark, tmp_path):
    """Error handlers get only what failed, in silver (a value that does not convert) and
    in the plan (no row, a taken key, other values), with the error; the function and SQL
    forms; a change returned that fails again fails its transaction; and a late change
    re-folds history with what the handler applied, not with the change it replaced."""
    ch = make_channel(tmp_path, dml_handlers=[
        {"table": "hr.regions", "operation": "INSERT", "handler": "upsert", "error_handler": True},
        {"table": "hr.regions", "operation": "UPDATE", "error_handler": True, "sql": {
            "command_type": "INSERT",
            "raise_when": ":dml.get_value('NEW','REGION_NAME').AccessVarchar2() = 'never'"}},
        {"table": "hr.regions", "operation": "DELETE", "error_handler": True, "sql": {
            "consume_when": ":dml.get_command_type() = 'DELETE'"}},
    ])
    gold = f"{ch.storage.schema_name('gold')}.hr__regions"
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new=_region(1, "a")).row("INSERT", new=_region(2, "b")).commit(),
        # no row 9: the UPDATE becomes an INSERT of the whole row (old values fill the rest)
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 9, "REGION_NAME": "y"}, new={"REGION_NAME": "z"}).commit(),
        # key 1 taken: the INSERT updates it
        *Txn("t4", 400).row("INSERT", new=_region(1, "dup")).commit(),
        # no row 7: the DELETE is consumed
        *Txn("t5", 500).row("DELETE", old={"REGION_ID": 7}).commit(),
        # other values: as an INSERT, key 2 is taken, and the handler is not asked twice
        *Txn("t6", 600).row("UPDATE", old={"REGION_ID": 2, "REGION_NAME": "wrong"}, new={"REGION_NAME": "c"}).commit(),
        # the SQL handler raises: the transaction keeps its error
        *Txn("t7", 700).row("UPDATE", old={"REGION_ID": 8}, new={"REGION_NAME": "never"}).commit(),
        # does not convert (silver): consumed by the INSERT handler
        *Txn("t8", 800).row("INSERT", new={"REGION_ID": "abc", "REGION_NAME": "q"}).commit(),
    ])
    run_pipeline(spark, ch)
    rows = sorted((r["REGION_ID"], r["REGION_NAME"]) for r in spark.table(gold).collect())
    assert rows == [(1, "dup"), (2, "b"), (9, "z")]
    queue = {r["transaction_id"]: r["error"] for r in spark.table(
        ch.storage.table("gold", "error_queue").replace("`", "")).collect()}
    assert set(queue) == {"t6", "t7"}, queue
    assert "ORA-00001" in queue["t6"] and "ORA-01403" in queue["t7"]
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["handled"] == 2 and audit.buckets["error"] == 2

    # Late: an UPDATE of key 1 committed before t4. Key 1 is re-folded from its history,
    # where t4 is the UPDATE the handler made of it, so the late change applies under it.
    write_lines(ch, "src", "f2.jsonl", Txn("t9", 350).row(
        "UPDATE", old={"REGION_ID": 1, "REGION_NAME": "a"}, new={"REGION_NAME": "a2", "NOTE": "late"}).commit())
    run_pipeline(spark, ch)
    rows = sorted((r["REGION_ID"], r["REGION_NAME"], r["NOTE"]) for r in spark.table(gold).collect())
    assert rows == [(1, "dup", None), (2, "b", None), (9, "z", None)]
    queue = {r["transaction_id"] for r in spark.table(ch.storage.table("gold", "error_queue").replace("`", "")).collect()}
    assert queue == {"t6", "t7"}
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems


def _typed_updates(spark, rows: list[tuple[int, str, str]]):
    """Typed UPDATE changes of HR.REGIONS from (position, old JSON, new JSON)."""
    from silver.changes import type_changes

    records = spark.createDataFrame(
        [("SRC", "t1", 10, 10, None, pos, "UPDATE", None, None, old, new) for pos, old, new in rows],
        "source_database STRING, transaction_id STRING, scn BIGINT, commit_scn BIGINT, commit_time TIMESTAMP, "
        "position BIGINT, command_type STRING, tag STRING, _migrated_from STRING, old STRING, new STRING",
    ).withColumn("old_values", F.parse_json("old")).withColumn("new_values", F.parse_json("new"))
    return type_changes(records, parse_create_table(REGIONS_DDL), 1)


def test_sql_handler_consumes_raises_and_sets(spark):
    """The SQL form, set-wise: conditions read the images as the change carries them (a
    column it does not carry is absent), ``set`` converts to the column's type."""
    tdef = parse_create_table(REGIONS_DDL)
    typed = _typed_updates(spark, [
        (1, '{"REGION_ID": 1}', '{"REGION_NAME": "a"}'),
        (2, '{"REGION_ID": 2}', '{"REGION_NAME": "skip"}'),
        (3, '{"REGION_ID": 3}', '{"NOTE": "n"}'),
        (4, '{"REGION_ID": 4, "REGION_NAME": "o"}', '{"NOTE": "m"}'),
        (5, '{"REGION_ID": 5, "REGION_NAME": "o"}', '{"REGION_NAME": null}'),
    ])
    spec = dml_handler_spec({"table": "hr.regions", "operation": "UPDATE", "sql": {
        "consume_when": ":dml.get_value('NEW','REGION_NAME').AccessVarchar2() = 'skip'",
        "raise_when": ":dml.get_value('NEW','NOTE').AccessVarchar2() = 'n'",
        "set": {"note": ":dml.get_value('NEW','REGION_NAME','Y').AccessVarchar2()"}}}, "t")
    out, consumed = apply_dml_handlers(typed, [spec], tdef)
    got = {r["_position"]: (r["_new"]["NOTE"], "NOTE" in r["_new_present"], r["_error"]) for r in out.collect()}
    assert got[1] == ("a", True, None)
    assert got[3][2] == "raised by DML handler SQL of HR.REGIONS UPDATE: " + spec.sql.raise_when
    assert got[4] == ("o", True, None)  # REGION_NAME not carried in NEW: the old value ('Y')
    assert got[5] == (None, True, None)  # a NULL the change carries is its new value
    assert sorted(got) == [1, 3, 4, 5]
    assert [(r["_position"], r["_reason"]) for r in consumed.collect()] == [(2, "consumed by DML handler SQL")]

    # A value that does not convert to the column's type fails the change.
    bad = dml_handler_spec({"table": "hr.regions", "operation": "UPDATE",
                            "sql": {"set": {"REGION_ID": "'not a number'"}}}, "t")
    out, _ = apply_dml_handlers(typed, [bad], tdef)
    errors = {r["_error"] for r in out.collect()}
    assert errors == {"DML handler SQL of HR.REGIONS UPDATE: the value set for REGION_ID does not convert to INT"}
    with pytest.raises(ConfigError, match="sets column NOPE, which HR.REGIONS does not have"):
        apply_dml_handlers(typed, [dml_handler_spec({"table": "hr.regions", "operation": "UPDATE",
                                                     "sql": {"set": {"nope": "1"}}}, "t")], tdef)


def test_update_conflict_handler_comes_before_the_error_handler_and_judges_dml_handler_output(spark, tmp_path):
    """The reference's handler precedence, by case:

    - DML handler and update conflict handler: the change the DML handler returns is
      applied with conflict resolution on; a conflict the update conflict handler
      resolves applies, one it does not fails the transaction (ORA-26786);
    - error handler and update conflict handler: the update conflict handler is asked
      first, and where it resolves the conflict the error handler is never invoked; where
      it does not (another column, or one of its columns alongside another), the error
      handler gets the change, and here consumes it;
    - an INSERT an error handler makes takes the target's defaults, as one silver derives
      does: those of the revision in force at the change's SCN, not the latest."""
    ch = make_channel(
        tmp_path,
        dml_handlers=[{"table": "hr.regions", "operation": "UPDATE", "handler": "upper_names"}],
        update_conflict_handlers=[{"table": "hr.regions", "method": "OVERWRITE", "columns": ["region_name"]}],
    )
    st = ch.storage
    gold = f"{st.schema_name('gold')}.hr__regions"
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new=_region(1, "a")).row("INSERT", new=_region(2, "b")).commit(),
        # REGION_NAME differs: resolved by OVERWRITE, with the value the DML handler returned
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "wrong"}, new={"REGION_NAME": "x"}).commit(),
        # NOTE differs and no handler covers it: the transaction fails
        *Txn("t4", 400).row("UPDATE", old={"REGION_ID": 2, "NOTE": "wrong"}, new={"REGION_NAME": "y"}).commit(),
    ])
    run_pipeline(spark, ch)

    def state():
        rows = sorted((r["REGION_ID"], r["REGION_NAME"]) for r in spark.table(gold).collect())
        queue = {r["transaction_id"]: r["error"] for r in spark.table(st.table("gold", "error_queue").replace("`", "")).collect()}
        resolved = sorted((r["transaction_id"], r["method"], r["columns"], r["resolution"])
                          for r in spark.table(st.table("gold", "apply_conflicts").replace("`", "")).collect())
        return rows, queue, resolved

    rows, queue, resolved = state()
    assert rows == [(1, "X"), (2, "b")]
    assert set(queue) == {"t4"} and "ORA-26786" in queue["t4"] and "NOTE" in queue["t4"], queue
    assert resolved == [("t3", "OVERWRITE", "REGION_NAME", "applied")]

    # The UPDATE's DML handler goes; an error handler that consumes whatever it is given comes.
    s = Streams(ch)
    s.set_dml_handler("hr.regions", "UPDATE", None)
    s.set_dml_handler("hr.regions", "UPDATE", None, error_handler=True,
                      sql={"consume_when": ":dml.get_command_type() = 'UPDATE'"})
    # A DELETE that finds no row puts the row back; the INSERT takes NOTE's new default.
    s.set_dml_handler("hr.regions", "DELETE", None, error_handler=True, sql={"command_type": "INSERT"})
    alter = Txn("t45", 450).ddl("ALTER TABLE hr.regions MODIFY (note DEFAULT 'dflt')").commit()
    alter[0]["command_type"] = "ALTER TABLE"
    # The default changes again after t8: t8's INSERT takes the one in force at its SCN.
    later = Txn("t85", 850).ddl("ALTER TABLE hr.regions MODIFY (note DEFAULT 'later')").commit()
    later[0]["command_type"] = "ALTER TABLE"
    write_lines(ch, "src", "f2.jsonl", [
        *alter,
        # resolved by OVERWRITE: the error handler is not asked (it would consume the change)
        *Txn("t5", 500).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "stale"}, new={"REGION_NAME": "z"}).commit(),
        # NOTE differs: unresolved, so the error handler gets it and consumes it
        *Txn("t6", 600).row("UPDATE", old={"REGION_ID": 2, "NOTE": "wrong"}, new={"REGION_NAME": "w"}).commit(),
        # both lists differ: OVERWRITE resolves REGION_NAME, NOTE stays unresolved, so the error handler gets it
        *Txn("t7", 700).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "stale", "NOTE": "wrong"},
                            new={"REGION_NAME": "v"}).commit(),
        *Txn("t8", 800).row("DELETE", old={"REGION_ID": 9, "REGION_NAME": "gone"}).commit(),
        *later,
    ])
    run_pipeline(spark, s.channel)
    rows, queue, resolved = state()
    assert rows == [(1, "z"), (2, "b"), (9, "gone")]
    assert spark.table(gold).where("REGION_ID = 9").first()["NOTE"] == "dflt"
    assert set(queue) == {"t4"}, queue
    assert ("t5", "OVERWRITE", "REGION_NAME", "applied") in resolved
    assert not any(t in {"t6", "t7"} for t, *_ in resolved), resolved
    audit = run_audit(spark, s.channel)
    assert audit.ok, audit.problems
    assert audit.buckets["handled"] == 2 and audit.buckets["error"] == 1
