"""History targets next to the replica: SCD type 2 versions, a TimeKey change log and soft
deletes, across runs, a key move and a late change; each written once per plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_channel, queued, table_versions, write_lines
from records import REGIONS_DDL, Txn

from gold.dbt import RUN_APP_ID, apply_targets
from gold.plan import run_plan
from lakestreams.api import Streams
from lakestreams.audit import run_audit
from lakestreams.errors import ConfigError
from lakestreams.pipeline import known_targets, run_pipeline

LOCS_DDL = "CREATE TABLE hr.locs (loc_id NUMBER(4) NOT NULL, city VARCHAR2(20), CONSTRAINT locs_pk PRIMARY KEY (loc_id))"


def _regions(rid: int, name: str, note: str) -> dict:
    return {"REGION_ID": rid, "REGION_NAME": name, "NOTE": note}


def _rows(spark, table: str, cols: list[str]) -> list[tuple]:
    return sorted((tuple(r[c] for c in cols) for r in spark.table(table).collect()), key=repr)


def test_scd2_timekey_and_soft_delete(spark, tmp_path):
    ch = make_channel(tmp_path, targets=[
        {"table": "hr.regions", "history": "scd2", "soft_delete": True},
        {"table": "hr.locs", "history": "timekey"},
    ])
    gold = ch.storage.schema_name("gold")
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t1b", 100).ddl(LOCS_DDL, name="LOCS").commit(),
        *Txn("t2", 200).row("INSERT", new=_regions(1, "A", "n")).row("INSERT", new=_regions(2, "B", "n"))
        .row("INSERT", table="LOCS", new={"LOC_ID": 10, "CITY": "Paris"}).commit(),
        # Two changes of one row in one transaction: one version.
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "A"}, new={"REGION_NAME": "A2"})
        .row("UPDATE", old={"REGION_ID": 1, "NOTE": "n"}, new={"NOTE": "n3"})
        .row("UPDATE", table="LOCS", old={"LOC_ID": 10}, new={"CITY": "Lyon"}).commit(),
        *Txn("t4", 400).row("DELETE", old={"REGION_ID": 2}).commit(),
    ])
    run_pipeline(spark, ch)
    replica = ["REGION_ID", "REGION_NAME", "NOTE", "_is_deleted"]
    assert _rows(spark, f"{gold}.hr__regions", replica) == [(1, "A2", "n3", False), (2, "B", "n", True)]
    write_lines(ch, "src", "f2.jsonl", [
        # Inserted again where a deleted row is marked: the mark goes.
        *Txn("t5", 500).row("INSERT", new=_regions(2, "B5", "x")).commit(),
        *Txn("t6", 600).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_ID": 3})
        .row("DELETE", table="LOCS", old={"LOC_ID": 10}).commit(),
    ])
    run_pipeline(spark, ch)
    # Late: SCN 250 lands after key 2 was deleted and inserted again, and after LOCS 10 went.
    write_lines(ch, "src", "f3.jsonl", [
        *Txn("t25", 250).row("UPDATE", old={"REGION_ID": 2, "NOTE": "n"}, new={"NOTE": "m"})
        .row("UPDATE", table="LOCS", old={"LOC_ID": 10}, new={"CITY": "Nice"}).commit(),
    ])
    last = run_pipeline(spark, ch)
    assert _rows(spark, f"{gold}.hr__regions", replica) == [
        (1, "A2", "n3", True), (2, "B5", "x", False), (3, "A2", "n3", False),
    ]
    versions = ["REGION_ID", "REGION_NAME", "NOTE", "_valid_from_scn", "_valid_to_scn", "_is_current", "_op",
                "_transaction_id"]
    assert _rows(spark, f"{gold}.hr__regions__history", versions) == sorted([
        (1, "A", "n", 200, 300, False, "I", "t2"),
        (1, "A2", "n3", 300, 600, False, "U", "t3"),
        (3, "A2", "n3", 600, None, True, "U", "t6"),
        (2, "B", "n", 200, 250, False, "I", "t2"),
        (2, "B", "m", 250, 400, False, "U", "t25"),
        (2, "B5", "x", 500, None, True, "I", "t5"),
    ], key=repr)
    log = ["LOC_ID", "CITY", "_op", "_columns", "_commit_scn", "_transaction_id"]
    assert _rows(spark, f"{gold}.hr__locs__changes", log) == sorted([
        (10, "Paris", "I", ["CITY", "LOC_ID"], 200, "t2"),
        (10, "Nice", "U", ["CITY"], 250, "t25"),
        (10, "Lyon", "U", ["CITY"], 300, "t3"),
        (10, None, "D", [], 600, "t6"),
    ], key=repr)
    assert spark.table(f"{gold}.hr__locs").count() == 0
    # The same plan applied again (a crash after dbt, before progress): nothing twice.
    before = {t: spark.table(f"{gold}.{t}").count() for t in ("hr__regions__history", "hr__locs__changes")}
    apply_targets(spark, ch, last.plan, known_targets(spark, ch))
    assert {t: spark.table(f"{gold}.{t}").count() for t in before} == before
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems


def _txn_keys(spark, table: str) -> list[tuple[str, int]]:
    """Delta's exactly-once keys (txnAppId, txnVersion) in the table's latest commit."""
    d = spark.sql(f"DESCRIBE DETAIL {table}").first()
    log = Path(d["location"].removeprefix("file:")) / "_delta_log" / f"{spark.sql(f'DESCRIBE HISTORY {table} LIMIT 1').first()['version']:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    return [(a["txn"]["appId"], a["txn"]["version"]) for a in actions if "txn" in a]


def test_models_apply_side_by_side_under_the_runs_key_and_a_truncating_one_per_statement(spark, tmp_path):
    ch = make_channel(tmp_path, targets=[{"table": "hr.regions", "history": "scd2"},
                                         {"table": "hr.locs", "history": "timekey"}])
    gold = ch.storage.schema_name("gold")
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t1b", 100).ddl(LOCS_DDL, name="LOCS").commit(),
        *Txn("t2", 200).row("INSERT", new=_regions(1, "A", "n"))
        .row("INSERT", table="LOCS", new={"LOC_ID": 10, "CITY": "Paris"}).commit(),
    ])
    run_pipeline(spark, ch)
    write_lines(ch, "src", "f2.jsonl", [
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "A3"})
        .row("TRUNCATE", table="LOCS").commit(),
        *Txn("t4", 400).row("INSERT", table="LOCS", new={"LOC_ID": 11, "CITY": "Lyon"}).commit(),
    ])
    run_pipeline(spark, ch, ("bronze", "silver"))
    # The gold stage dies after dbt, before apply progress: the plan is applied again.
    plan = run_plan(spark, ch)
    assert sorted((t.model, t.truncates) for t in plan.targets) == [("hr__locs", True), ("hr__regions", False)]
    apply_targets(spark, ch, plan, known_targets(spark, ch))
    # HR.REGIONS (no TRUNCATE) ran under the run's one key; HR.LOCS, whose replica the
    # TRUNCATE and the MERGE both write, keyed each write by its own table.
    pid = plan.plan_id
    assert _txn_keys(spark, f"{gold}.hr__regions") == [(RUN_APP_ID, pid)]
    assert _txn_keys(spark, f"{gold}.hr__regions__history") == [(RUN_APP_ID, pid)]
    assert _txn_keys(spark, f"{gold}.hr__locs") == [("gold.hr__locs", pid)]
    assert _txn_keys(spark, f"{gold}.hr__locs__changes") == [("gold.hr__locs__changes", pid)]
    # The keys stay with the writes: nothing is left set on the session.
    assert spark.conf.get("spark.databricks.delta.write.txnAppId", None) is None
    versions = table_versions(spark, ch)
    apply_targets(spark, ch, plan, known_targets(spark, ch))
    assert table_versions(spark, ch) == versions
    run_pipeline(spark, ch)
    assert _rows(spark, f"{gold}.hr__regions", ["REGION_ID", "REGION_NAME"]) == [(1, "A3")]
    assert _rows(spark, f"{gold}.hr__locs", ["LOC_ID", "CITY"]) == [(11, "Lyon")]
    assert _rows(spark, f"{gold}.hr__locs__changes", ["LOC_ID", "_op", "_commit_scn"]) == sorted(
        [(10, "I", 200), (None, "T", 300), (11, "I", 400)], key=repr)
    assert _rows(spark, f"{gold}.hr__regions__history", ["REGION_ID", "REGION_NAME", "_valid_to_scn"]) == sorted(
        [(1, "A", 300), (1, "A3", None)], key=repr)
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems


def test_target_options_are_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"targets\[0\].history: 'scd3' is not one of scd2, timekey"):
        make_channel(tmp_path, targets=[{"table": "hr.regions", "history": "scd3"}])
    with pytest.raises(ConfigError, match=r"targets\[1\]: HR.REGIONS is given target options twice"):
        make_channel(tmp_path, targets=[{"table": "hr.regions", "soft_delete": True},
                                        {"table": "hr.regions", "history": "timekey"}])
    with pytest.raises(ConfigError, match=r"give history \(scd2, timekey\) or soft_delete: true"):
        make_channel(tmp_path, targets=[{"table": "hr.regions"}])
    s = Streams(make_channel(tmp_path))
    s.set_target_options("hr.regions", history="scd2")
    assert [(t.owner, t.table, t.history, t.soft_delete) for t in s.channel.targets] == [("HR", "REGIONS", "scd2", False)]
    s.set_target_options("hr.regions")
    assert s.channel.targets == ()


@pytest.mark.extended  # covered in the core: the core truncates a plain target; SCD2 closing runs in test_scd2_timekey_and_soft_delete
def test_truncate_empties_the_replica_and_closes_versions(spark, tmp_path):
    ch = make_channel(tmp_path, targets=[{"table": "hr.regions", "history": "scd2"}])
    gold = ch.storage.schema_name("gold")
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new=_regions(1, "A", "n")).row("INSERT", new=_regions(2, "B", "n")).commit(),
    ])
    run_pipeline(spark, ch)
    write_lines(ch, "src", "f1b.jsonl", [
        *Txn("t3", 300).row("TRUNCATE").commit(),
        # After the TRUNCATE key 1 holds no row (the replica still shows it until the apply).
        *Txn("t35", 350).row("UPDATE", old={"REGION_ID": 1, "NOTE": "n"}, new={"NOTE": "x"}).commit(),
        *Txn("t4", 400).row("INSERT", new=_regions(2, "B4", "n")).commit(),
    ])
    run_pipeline(spark, ch)
    assert "ORA-01403" in queued(spark, ch)["t35"]
    # Late, below the TRUNCATE: no effect. After it: applies.
    write_lines(ch, "src", "f2.jsonl", [
        *Txn("t25", 250).row("UPDATE", old={"REGION_ID": 1, "NOTE": "n"}, new={"NOTE": "late"}).commit(),
        *Txn("t5", 500).row("UPDATE", old={"REGION_ID": 2, "REGION_NAME": "B4"}, new={"REGION_NAME": "B5"}).commit(),
    ])
    run_pipeline(spark, ch)
    assert _rows(spark, f"{gold}.hr__regions", ["REGION_ID", "REGION_NAME", "NOTE"]) == [(2, "B5", "n")]
    versions = ["REGION_ID", "REGION_NAME", "_valid_from_scn", "_valid_to_scn", "_is_current"]
    assert _rows(spark, f"{gold}.hr__regions__history", versions) == sorted([
        (1, "A", 200, 300, False), (2, "B", 200, 300, False), (2, "B4", 400, 500, False), (2, "B5", 500, None, True),
    ], key=repr)
    assert set(queued(spark, ch)) == {"t35"}
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
