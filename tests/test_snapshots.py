"""Instantiation from a snapshot landing: the rows of a table as of an SCN replace its
replica and set its instantiation SCN; changes at or below it are discarded, changes
above it apply on top, and a snapshot older than changes already applied keeps them."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import make_channel, write_lines
from records import REGIONS_DDL, Txn

from lakestreams.api import Streams
from lakestreams.audit import run_audit
from lakestreams.cli import main
from lakestreams.errors import ApplyError, ConfigError
from lakestreams.pipeline import gold_summary, run_pipeline
from lakestreams.status import channel_status, format_status

LOCS_DDL = "CREATE TABLE hr.locs (loc_id NUMBER(4) NOT NULL, city VARCHAR2(20), CONSTRAINT locs_pk PRIMARY KEY (loc_id))"
LANDING = {"src": "commit_records", "snap": {"transactions": "commit_records", "snapshot": True}}


def _region(rid: int, name: str) -> dict:
    return {"REGION_ID": rid, "REGION_NAME": name, "NOTE": "s"}


def _snapshot(txid: str, scn: int, rows: list[dict], table: str = "REGIONS") -> list[dict]:
    t = Txn(txid, scn)
    for r in rows:
        t.row("INSERT", table=table, new=r)
    return t.commit()


def _replica(spark, ch, model: str = "hr__regions") -> list[tuple]:
    rows = spark.table(f"{ch.storage.schema_name('gold')}.{model}").collect()
    return sorted((r["REGION_ID"], r["REGION_NAME"], r["_commit_scn"]) for r in rows)


def _instantiated(spark, ch) -> dict[str, tuple]:
    view = spark.table(ch.storage.table("gold", "apply_instantiated_objects").replace("`", ""))
    return {r["source_object_name"]: (r["instantiation_scn"], r["set_by"]) for r in view.collect()}


def _queue(spark, ch) -> dict[str, str]:
    q = spark.table(ch.storage.table("gold", "error_queue").replace("`", ""))
    return {r["transaction_id"]: r["error"] for r in q.collect()}


@pytest.mark.extended  # covered in the core: test_compare_reports_differences_and_resnapshot_repairs loads a snapshot that replaces a drifted table; test_instantiation applies instantiation SCNs
def test_snapshot_instantiates_replaces_and_keeps_later_changes(spark, tmp_path):
    ch = make_channel(tmp_path, landing=LANDING, targets=[{"table": "hr.locs", "history": "timekey"}])
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t1b", 100).ddl(LOCS_DDL, name="LOCS").commit(),
        *Txn("t2", 200).row("INSERT", new=_region(1, "A")).row("INSERT", new=_region(9, "Z"))
        .row("INSERT", table="LOCS", new={"LOC_ID": 10, "CITY": "Paris"}).commit(),
    ])
    run_pipeline(spark, ch)
    assert _replica(spark, ch) == [(1, "A", 200), (9, "Z", 200)]
    # The replica drifted (row 9 went at the source unseen): a snapshot at SCN 500 replaces it.
    # LOCS was empty at 500: its snapshot is a TRUNCATE alone.
    write_lines(ch, "snap", "s500.jsonl", [
        *_snapshot("s500", 500, [_region(1, "A5"), _region(2, "B5")]),
        *Txn("s500b", 500).row("TRUNCATE", table="LOCS").commit(),
    ])
    write_lines(ch, "src", "f2.jsonl", [
        # At or below the snapshot: already in it, discarded.
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "A3"}).commit(),
        # Above it: applies on the snapshot's rows.
        *Txn("t6", 600).row("UPDATE", old={"REGION_ID": 2, "REGION_NAME": "B5"}, new={"REGION_NAME": "B6"})
        .row("INSERT", table="LOCS", new={"LOC_ID": 11, "CITY": "Lyon"}).commit(),
    ])
    run_pipeline(spark, ch)
    assert _replica(spark, ch) == [(1, "A5", 500), (2, "B6", 600)]
    assert _instantiated(spark, ch)["REGIONS"] == (500, "snapshot (transaction s500)")
    assert _instantiated(spark, ch)["LOCS"] == (500, "snapshot (transaction s500b)")
    gold = ch.storage.schema_name("gold")
    assert sorted((r["LOC_ID"], r["CITY"]) for r in spark.table(f"{gold}.hr__locs").collect()) == [(11, "Lyon")]
    log = sorted((r["_op"], r["_commit_scn"], r["LOC_ID"]) for r in spark.table(f"{gold}.hr__locs__changes").collect())
    assert log == [("I", 200, 10), ("I", 600, 11), ("T", 500, None)]

    # A change above the snapshot applies; a late one below it is discarded.
    write_lines(ch, "src", "f3.jsonl", [
        *Txn("t7", 700).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "A7"}).commit(),
        *Txn("t45", 450).row("UPDATE", old={"REGION_ID": 2}, new={"REGION_NAME": "late"}).commit(),
    ])
    run_pipeline(spark, ch)
    assert _replica(spark, ch) == [(1, "A7", 700), (2, "B6", 600)]

    # Re-snapshot at 650, older than the change at 700 already applied: key 1 keeps it (its
    # history after the snapshot is folded again), key 2 and the new key 3 take the snapshot.
    write_lines(ch, "snap", "s650.jsonl", _snapshot("s650", 650, [_region(1, "A65"), _region(2, "B65"), _region(3, "C65")]))
    run_pipeline(spark, ch)
    assert _replica(spark, ch) == [(1, "A7", 700), (2, "B65", 650), (3, "C65", 650)]
    assert _instantiated(spark, ch)["REGIONS"] == (650, "snapshot (transaction s650)")

    # A snapshot holding anything but rows goes to the error queue whole, with the reason.
    write_lines(ch, "snap", "bad.jsonl", Txn("bad", 900).row("INSERT", new=_region(4, "D"))
                .row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "X"}).commit())
    run_pipeline(spark, ch)
    queue = _queue(spark, ch)
    assert set(queue) == {"bad"}
    assert "a snapshot transaction holds INSERT records (and a TRUNCATE for an empty table) only; found UPDATE" in queue["bad"]
    assert _replica(spark, ch) == [(1, "A7", 700), (2, "B65", 650), (3, "C65", 650)]
    assert _instantiated(spark, ch)["REGIONS"] == (650, "snapshot (transaction s650)")
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    buckets = {r["bucket"]: r["n"] for r in spark.sql(
        f"SELECT bucket, sum(records) AS n FROM {ch.storage.table('silver', 'outcomes')} "
        "WHERE stage = 'plan' GROUP BY bucket").collect()}
    # t3 and t45 (one record each) are below the instantiation SCN of their snapshot.
    assert buckets["below_instantiation"] == 2


def test_snapshot_flag_is_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"landing\[0\].snapshot: expected true or false, found 'yes'"):
        make_channel(tmp_path, landing={"src": {"snapshot": "yes"}})


def test_compare_reports_differences_and_resnapshot_repairs(spark, tmp_path, capsys):
    # An export/import recorded the ignore SCN 150: a snapshot below it may not instantiate.
    ch = make_channel(tmp_path, landing=LANDING, instantiation=[
        {"table": "hr.regions", "source_database": "dbs1.example.com", "ignore_scn": 150}])
    gold = f"{ch.storage.schema_name('gold')}.hr__regions"
    write_lines(ch, "snap", "s120.jsonl", _snapshot("s120", 120, [_region(1, "old")]))
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new=_region(1, "A")).row("INSERT", new=_region(2, "B"))
        .row("INSERT", new=_region(3, "C")).commit(),
        # A partition truncated and filled again: no row change says what it held.
        *Txn("d2", 250).ddl("ALTER TABLE hr.regions TRUNCATE PARTITION p_low").commit(),
    ])
    run_pipeline(spark, ch)
    assert _queue(spark, ch) == {"s120": "the snapshot of HR.REGIONS at SCN 120 is below its ignore SCN 150: an "
                                         "instantiation SCN below the ignore SCN is refused (take a snapshot at or above it)"}
    assert _instantiated(spark, ch)["REGIONS"] == (150, "ignore SCN")
    # The change history cannot give the target's rows from 250 on: it waits for a snapshot
    # (status, and the low watermark held below 250), while changes go on applying.
    status = channel_status(spark, ch)
    assert (status.tables[0].refresh_since, status.sources[0].consistent_scn) == (250, 249)
    assert "TRUNCATE of a partition changes rows without row changes" in status.tables[0].refresh_reason
    assert "hr__regions (DBS1.EXAMPLE.COM HR.REGIONS) since SCN 250: TRUNCATE of a partition" in format_status(status)
    log = spark.table(ch.storage.table("silver", "ddl_log").replace("`", "")).where("commit_scn = 250").first()
    assert (log["statement"], log["decision"]) == ("ALTER TABLE", "REFRESH")
    # The replica drifts: a row changed, one removed, one added behind the apply's back.
    spark.sql(f"UPDATE {gold} SET REGION_NAME = 'X' WHERE REGION_ID = 2")
    spark.sql(f"DELETE FROM {gold} WHERE REGION_ID = 3")
    spark.sql(f"INSERT INTO {gold} (REGION_ID, REGION_NAME, NOTE) VALUES (9, 'Z', 's')")
    rows = [_region(1, "A"), _region(2, "B"), _region(3, "C")]
    clean = tmp_path / "snapshot_300.jsonl"
    with clean.open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in _snapshot("s300", 300, rows))
    # One more row whose key does not convert: counted as not compared.
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "part1.jsonl").write_text(clean.read_text())
    (odd / "part2.jsonl").write_text("\n".join(json.dumps(r) for r in _snapshot("s300", 300, [_region("x", "bad")])))
    s = Streams(ch)
    result = s.compare(spark, "hr.regions", str(odd))
    got = (result.snapshot_rows, result.replica_rows, result.only_in_snapshot, result.only_in_replica,
           result.different, result.not_compared, result.snapshot_scn, result.applied_scn)
    assert got == (3, 3, 1, 1, 1, 1, 300, 200)
    assert not result.identical and result.snapshot_checksum != result.replica_checksum
    report = spark.table(ch.storage.table("gold", "apply_compare").replace("`", "")).where(
        f"compare_id = {result.compare_id}").collect()
    assert sorted((r["status"], r["key"], r["columns"]) for r in report) == [
        ("different", '{"REGION_ID":2}', ["REGION_NAME"]),
        ("only_in_replica", '{"REGION_ID":9}', None),
        ("only_in_snapshot", '{"REGION_ID":3}', None),
    ]
    assert "only in snapshot 1, only in replica 1, different 1, snapshot rows not compared 1" in result.format()
    # The report is lakestreams' own table, not a replica: the run summary lists replicas only.
    assert [t.name for t in gold_summary(spark, ch)] == ["hr__regions"]
    # A re-snapshot holds one table; then it replaces the replica and the compare is clean.
    with pytest.raises(ApplyError, match="holds rows that do not reach HR.LOCS|no row of it reaches target hr__locs"):
        s.resnapshot(spark, "hr.locs", str(clean))
    s.resnapshot(spark, "hr.regions", str(clean))
    assert _replica(spark, ch) == [(1, "A", 300), (2, "B", 300), (3, "C", 300)]
    again = s.compare(spark, "hr.regions", str(clean))
    assert again.identical and again.snapshot_checksum == again.replica_checksum and again.applied_scn == 300
    # The snapshot at 300 made the target whole again.
    status = channel_status(spark, ch)
    assert (status.tables[0].refresh_since, status.sources[0].consistent_scn) == (None, 300)
    assert "waiting for a snapshot" not in format_status(status)
    # The CLI: a table that was empty at the snapshot's SCN (a TRUNCATE alone) differs in
    # every replica row, and the command says so by its exit code.
    empty = tmp_path / "empty_400.jsonl"
    empty.write_text("\n".join(json.dumps(r) for r in Txn("s400", 400).row("TRUNCATE").commit()))
    path = tmp_path / "channel.yml"
    path.write_text(yaml.safe_dump({
        "name": "t", "storage": {"warehouse": str(ch.storage.warehouse), "state": str(ch.storage.state),
                                 "schema": ch.storage.schema},
        "landing": [{"name": ld.name, "path": str(ld.path), "snapshot": ld.snapshot} for ld in ch.landing],
    }))
    assert main(["compare", "hr.regions", str(empty), "--channel", str(path)]) == 1
    out = capsys.readouterr().out
    assert "rows       snapshot         0   replica         3" in out
    assert "only in snapshot 0, only in replica 3, different 0" in out
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems


@pytest.mark.extended  # covered in the core: test_error_queue re-executes queued transactions
def test_failed_snapshot_waits_in_the_queue_and_loads_when_re_executed(spark, tmp_path):
    ch = make_channel(tmp_path, landing=LANDING)
    # The snapshot lands before the table's CREATE TABLE record: it fails, whole.
    write_lines(ch, "snap", "s500.jsonl", _snapshot("s500", 500, [_region(1, "A5"), _region(2, "B5")]))
    run_pipeline(spark, ch)
    assert "not in the source dictionary" in _queue(spark, ch)["s500"]
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t4", 400).row("INSERT", new=_region(7, "below")).commit(),
        # Needs the snapshot's row 2: fails until the snapshot is loaded.
        *Txn("t6", 600).row("UPDATE", old={"REGION_ID": 2}, new={"REGION_NAME": "B6"}).commit(),
    ])
    run_pipeline(spark, ch)
    assert set(_queue(spark, ch)) == {"s500", "t6"}
    assert _instantiated(spark, ch)["REGIONS"] == (500, "snapshot (transaction s500)")
    Streams(ch).execute_error(spark, "s500")
    # The snapshot loaded; the UPDATE it explains was re-executed in the same run.
    assert _replica(spark, ch) == [(1, "A5", 500), (2, "B6", 600)]
    assert _queue(spark, ch) == {}
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
