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
from lakestreams.errors import ConfigError
from lakestreams.pipeline import run_pipeline
from silver.handlers import register_dml_handler


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
