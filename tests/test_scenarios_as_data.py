"""Scenarios as data (tests/scenarios/apply.yml), all through one pipeline run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from chispa import assert_df_equality
from conftest import make_channel, write_lines
from pyspark.sql import functions as F
from records import Txn

from lakestreams.audit import run_audit
from lakestreams.pipeline import run_pipeline

SPEC = yaml.safe_load((Path(__file__).parent / "scenarios" / "apply.yml").read_text())
OPS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}


def scenario_records(s: dict, columns: str) -> list[dict]:
    table = s["name"].upper()
    out = [*Txn(f"{table}.ddl", 50).ddl(f"CREATE TABLE hr.{table} ({columns}, CONSTRAINT {table[:20]}_PK PRIMARY KEY (ID))", name=table).commit()]
    for i, t in enumerate(s["transactions"], start=1):
        rows = t["rows"] if isinstance(t, dict) else t
        txn = Txn(f"{table}.{i}", 100 * i)
        for r in rows:
            txn.row(OPS[r["op"]], table=table, old=r.get("old"), new=r.get("new"))
        if isinstance(t, dict) and t.get("pending"):
            out += txn.records
        elif isinstance(t, dict) and t.get("rollback"):
            out += txn.rollback()
        else:
            out += txn.commit()
    return out


@pytest.fixture(scope="module")
def applied(spark, tmp_path_factory):
    keys = [{"table": f"hr.{s['name']}", "columns": s["key_columns"]} for s in SPEC["scenarios"] if "key_columns" in s]
    handlers = [{"table": f"hr.{s['name']}", **h} for s in SPEC["scenarios"] for h in s.get("handlers", [])]
    compare = [{"table": f"hr.{s['name']}", **c} for s in SPEC["scenarios"] for c in s.get("compare", [])]
    ch = make_channel(tmp_path_factory.mktemp("scenarios"), keys=keys, update_conflict_handlers=handlers,
                      compare_old_values=compare)
    records = [r for s in SPEC["scenarios"] for r in scenario_records(s, s.get("columns", SPEC["columns"]))]
    write_lines(ch, "src", "scenarios.jsonl", records)
    # Compiled and planned over shuffled partitions, as a big batch runs: the rest of the
    # suite's small batches run interpreted (lakestreams.spark.interpreted) and each target
    # in one partition (gold.plan.ONE_PARTITION_CHANGES), its replica looked up by its
    # changes' keys and its plan broadcast to the MERGE (BROADCAST_PLAN_ROWS), so both ways
    # meet the conflict scenarios.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LAKESTREAMS_INTERPRETED_RECORDS", "0")
        mp.setenv("LAKESTREAMS_ONE_PARTITION_CHANGES", "0")
        mp.setenv("LAKESTREAMS_BROADCAST_PLAN_ROWS", "0")
        result = run_pipeline(spark, ch)
    assert not result.plan.interpreted and not any(r.interpreted for r in result.silver)
    return ch


@pytest.mark.parametrize("scenario", SPEC["scenarios"], ids=lambda s: s["name"])
def test_scenario(spark, applied, scenario):
    ch = applied
    name = f"{ch.storage.schema_name('gold')}.hr__{scenario['name']}"
    cols = ["ID", "NAME", "CODE", "AMOUNT", "HIRED"]
    if not spark.catalog.tableExists(name):
        assert scenario["expect"] == [], f"{name} was never created"
        gold = spark.createDataFrame([], "ID INT, NAME STRING, CODE STRING, AMOUNT DECIMAL(8,2), HIRED TIMESTAMP_NTZ")
    else:
        gold = spark.table(name).select(*cols)
    expected = spark.createDataFrame([json.dumps(r) for r in scenario["expect"]] or ["{}"], "string").select(
        F.from_json("value", "ID INT, NAME STRING, CODE STRING, AMOUNT STRING, HIRED STRING").alias("j")
    ).select(
        F.col("j.ID").alias("ID"), F.col("j.NAME").alias("NAME"), F.col("j.CODE").alias("CODE"),
        F.col("j.AMOUNT").cast("decimal(8,2)").alias("AMOUNT"), F.col("j.HIRED").cast("timestamp_ntz").alias("HIRED"),
    ).where(F.col("ID").isNotNull())
    assert_df_equality(gold, expected, ignore_row_order=True, ignore_nullable=True)
    # Transactions expected in the error queue (number → start of the error), and no others.
    prefix = scenario["name"].upper() + "."
    queue = spark.table(ch.storage.table("gold", "error_queue").replace("`", "")).where(
        F.col("transaction_id").startswith(prefix)
    )
    got = {int(r["transaction_id"][len(prefix):]): r["error"] for r in queue.collect()}
    want = scenario.get("errors", {})
    assert set(got) == set(want), got
    for n, text in want.items():
        assert text in got[n], (n, got[n])
    logged = spark.table(ch.storage.table("gold", "apply_conflicts").replace("`", "")).where(
        F.col("transaction_id").startswith(prefix)
    )
    assert sorted([int(r["transaction_id"][len(prefix):]), r["method"], r["resolution"]] for r in logged.collect()) == sorted(
        scenario.get("resolutions", [])
    )


def test_scenarios_balance(spark, applied):
    audit = run_audit(spark, applied)
    assert audit.ok, audit.problems
    assert audit.buckets["pending"] == 1
    assert audit.buckets["error"] == sum(
        len(t["rows"] if isinstance(t, dict) else t)
        for s in SPEC["scenarios"] for n, t in enumerate(s["transactions"], 1) if n in s.get("errors", {})
    )
