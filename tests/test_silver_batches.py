"""Silver batches within a run: a new batch reads bronze up to its latest version, so a run
opens at most one; a batch a killed run left unfinished is run again over its logged range
first, and the new one follows it. A batch finds the copies of records earlier batches hold,
whatever their commit SCNs."""

from __future__ import annotations

from conftest import make_channel, write_lines
from records import REGIONS_DDL, Txn

import silver.run as silver_run
from lakestreams.audit import run_audit
from lakestreams.pipeline import run_pipeline


def _row(rid: int, name: str) -> dict:
    return {"REGION_ID": rid, "REGION_NAME": name, "NOTE": None}


def _gold_rows(spark, ch) -> list[tuple]:
    table = spark.table(f"{ch.storage.schema_name('gold')}.hr__regions")
    return sorted((int(r["REGION_ID"]), r["REGION_NAME"]) for r in table.collect())


def test_a_run_opens_one_new_batch_after_the_unfinished_one(spark, tmp_path, monkeypatch):
    ch = make_channel(tmp_path)
    write_lines(ch, "src", "f1.jsonl", Txn("t1", 100).ddl(REGIONS_DDL).commit()
                + Txn("t2", 200).row("INSERT", new=_row(1, "A")).commit())
    run_pipeline(spark, ch, stages=("bronze",))
    # A batch logged as started and never done: what a run killed in silver leaves.
    silver_run.create_silver_tables(spark, ch)
    killed = silver_run._open_batch(spark, ch)
    assert killed is not None and killed[3], "a batch over new bronze versions is new"
    write_lines(ch, "src", "f2.jsonl", Txn("t3", 300).row("INSERT", new=_row(2, "B")).commit())
    looks = []
    batch_state = silver_run.batch_state
    monkeypatch.setattr(silver_run, "batch_state", lambda s, c: looks.append(1) or batch_state(s, c))

    result = run_pipeline(spark, ch)

    # The unfinished batch over its logged range, then one new batch up to bronze's latest
    # version; the new one ends the loop, so silver looks for a batch twice, not three times.
    assert [(r.batch, r.bronze_from, r.bronze_to, r.drained) for r in result.silver] == [
        (killed[0], killed[1], killed[2], False), (killed[0] + 1, killed[2] + 1, killed[2] + 1, True)]
    assert len(looks) == 2
    assert _gold_rows(spark, ch) == [(1, "A"), (2, "B")]

    looks.clear()
    again = run_pipeline(spark, ch)
    assert again.silver == [] and len(looks) == 1, "nothing new: one look, no batch"
    write_lines(ch, "src", "f3.jsonl", Txn("t4", 400).row("INSERT", new=_row(3, "C")).commit())
    looks.clear()
    last = run_pipeline(spark, ch)
    assert [(r.batch, r.drained) for r in last.silver] == [(killed[0] + 2, True)] and len(looks) == 1
    assert _gold_rows(spark, ch) == [(1, "A"), (2, "B"), (3, "C")]


def test_copies_landed_later_are_duplicates_with_or_without_a_commit_scn(spark, tmp_path):
    # The ledger's look for copies reads only the files whose commit SCNs overlap the new
    # batch's, and those holding records without one: a COMMIT that counts its records
    # (event_count) takes its SCN from them, and lands without one.
    ch = make_channel(tmp_path)
    create = Txn("t1", 100).ddl(REGIONS_DDL).commit()
    counted = Txn("t2", 200).row("INSERT", new=_row(1, "A")).commit()
    counted[-1] = {k: v for k, v in counted[-1].items() if k not in ("commit_scn", "commit_time")} | {"event_count": 1}
    write_lines(ch, "src", "f1.jsonl", create + counted)
    write_lines(ch, "src", "f2.jsonl", Txn("t3", 300).row("INSERT", new=_row(2, "B")).commit())
    run_pipeline(spark, ch)
    first = run_audit(spark, ch)
    assert first.ok and first.buckets["duplicate"] == 0, first.problems

    # Copies of both transactions land with a new one: t2's (one record without a commit
    # SCN) and t3's lie below the new batch's SCNs.
    write_lines(ch, "src", "f1-again.jsonl", counted)
    write_lines(ch, "src", "f2-again.jsonl", Txn("t3", 300).row("INSERT", new=_row(2, "B")).commit())
    write_lines(ch, "src", "f3.jsonl", Txn("t4", 400).row("INSERT", new=_row(3, "C")).commit())
    run_pipeline(spark, ch)
    again = run_audit(spark, ch)
    assert again.ok, again.problems
    assert again.buckets["duplicate"] == len(counted) + 2
    assert _gold_rows(spark, ch) == [(1, "A"), (2, "B"), (3, "C")]
