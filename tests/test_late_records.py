"""Late records: a change that lands after a later one on its key was applied takes effect
where its SCN puts it. The same transactions landed in a shuffled order over several
runs give the same gold table as landed in order in one run."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from conftest import make_channel, queued, write_lines
from records import REGIONS_DDL, Txn

from lakestreams.audit import run_audit
from lakestreams.pipeline import RETRY_CHECKED, last_applied_run, run_mark, run_pipeline
from lakestreams.timing import TOTALS

COLS = ["REGION_ID", "REGION_NAME", "NOTE", "_source_database", "_transaction_id", "_commit_scn"]


def _row(rid: int, name: str | None, note: str | None) -> dict:
    return {"REGION_ID": rid, "REGION_NAME": name, "NOTE": note}


def transactions() -> dict[str, list[dict]]:
    """A consistent history of REGIONS: old images hold the key and the changed columns."""
    t = {
        "t1": Txn("t1", 100).ddl(REGIONS_DDL),
        "t2": Txn("t2", 200).row("INSERT", new=_row(1, "A", "n1")).row("INSERT", new=_row(2, "B", "n2"))
        .row("INSERT", new=_row(3, "C", "n3")),
        "t3": Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "A"}, new={"REGION_NAME": "A2"}),
        "t4": Txn("t4", 400).row("UPDATE", old={"REGION_ID": 1, "NOTE": "n1"}, new={"NOTE": "n1b"}),
        "t5": Txn("t5", 500).row("DELETE", old={"REGION_ID": 2}),
        "t6": Txn("t6", 600).row("UPDATE", old={"REGION_ID": 3}, new={"REGION_ID": 4}),
        "t7": Txn("t7", 700).row("UPDATE", old={"REGION_ID": 4, "REGION_NAME": "C"}, new={"REGION_NAME": "C2"}),
        "t8": Txn("t8", 800).row("INSERT", new=_row(2, "B2", "x")),
        "t9": Txn("t9", 900).row("UPDATE", old={"REGION_ID": 2, "NOTE": "x"}, new={"NOTE": "y"}),
        "t10": Txn("t10", 1000).row("DELETE", old={"REGION_ID": 2}),
        "t11": Txn("t11", 1100).row("UPDATE", old={"REGION_ID": 1, "NOTE": "n1b"}, new={"NOTE": "z"}),
        "t12": Txn("t12", 1200).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_ID": 5}),
    }
    return {k: v.commit() for k, v in t.items()}


def _gold(spark, ch):
    return spark.table(f"{ch.storage.schema_name('gold')}.hr__regions").select(*COLS)


def _plans(spark, ch) -> int:
    runs = spark.table(ch.storage.table("silver", "gold_runs").replace("`", ""))
    return runs.where("state = 'applied'").count()


def test_shuffled_arrival_gives_the_in_order_replica(spark, tmp_path):
    txns = transactions()
    in_order = make_channel(tmp_path / "in_order")
    write_lines(in_order, "src", "all.jsonl", [r for recs in txns.values() for r in recs])
    run_pipeline(spark, in_order)
    expected = _gold(spark, in_order)
    assert sorted((r["REGION_ID"], r["REGION_NAME"], r["NOTE"]) for r in expected.collect()) == [
        (4, "C2", "n3"), (5, "A2", "z"),
    ]

    # Each list is one landing file, run on its own. t3's UPDATE lands a run before its
    # COMMIT; t3 is then late at key 1 (t4 holds it), t9 at key 2 (t10 deleted it), t11
    # at key 1 (t12 moved the row to key 5): each takes effect at its SCN.
    t3_row, t3_commit = txns["t3"][:-1], txns["t3"][-1:]
    arrivals = [
        [*txns["t1"], *txns["t2"], *txns["t4"]],
        [*txns["t6"], *t3_row, *txns["t5"]],
        [*t3_commit, *txns["t8"]],
        [*txns["t7"], *txns["t10"], *txns["t12"]],
        [*txns["t9"]],
        [*txns["t11"]],
    ]
    shuffled = make_channel(tmp_path / "shuffled")
    for i, records in enumerate(arrivals, start=1):
        write_lines(shuffled, "src", f"f{i}.jsonl", records)
        run_pipeline(spark, shuffled)
    assert_df_equality(_gold(spark, shuffled), expected, ignore_row_order=True, ignore_nullable=True)
    assert queued(spark, shuffled) == {} == queued(spark, in_order)
    # Each batch logs from which batch on the ledger holds every record still waiting: t3's
    # UPDATE waits in batch 2 until its COMMIT in batch 3 (which then read it from there);
    # after that nothing waits, and the next batch's records are read from the next batch.
    runs = spark.table(shuffled.storage.table("silver", "runs").replace("`", "")).where("state = 'done'")
    assert sorted((r["silver_batch"], r["open_from"]) for r in runs.collect()) == [
        (1, 2), (2, 2), (3, 4), (4, 5), (5, 6), (6, 7)]
    tombstones = spark.table(shuffled.storage.table("silver", "tombstones").replace("`", ""))
    assert sorted((r["key"], r["transaction_id"]) for r in tombstones.collect()) == [
        ('{"REGION_ID":1}', "t12"), ('{"REGION_ID":2}', "t10"), ('{"REGION_ID":2}', "t5"), ('{"REGION_ID":3}', "t6"),
    ]
    audit = run_audit(spark, shuffled)
    assert audit.ok, audit.problems
    assert audit.buckets["applied"] == run_audit(spark, in_order).buckets["applied"] == 13
    # Progress counts each applied change once, not the history a late change re-folds.
    progress = spark.table(shuffled.storage.table("gold", "apply_progress").replace("`", ""))
    assert progress.groupBy().sum("records").first()[0] == 13


@pytest.mark.extended  # covered in the core: late changes are re-folded into applied history in test_shuffled_arrival_gives_the_in_order_replica
def test_a_late_change_that_contradicts_applied_history_fails(spark, tmp_path):
    """Applied transactions stay applied: a late change whose place in the history would
    make one of them fail goes to the error queue itself, and gold keeps its row."""
    ch = make_channel(tmp_path)
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new=_row(1, "A", "n")).row("INSERT", new=_row(2, "B", "n")).commit(),
        *Txn("t5", 500).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "A"}, new={"REGION_NAME": "B"}).commit(),
        *Txn("t6", 600).row("DELETE", old={"REGION_ID": 2}).commit(),
    ])
    run_pipeline(spark, ch)
    write_lines(ch, "src", "f2.jsonl", [
        # Before t5, the name becomes Z: t5's old name A would no longer match.
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "A"}, new={"REGION_NAME": "Z"}).commit(),
        # Before t6, key 2 is inserted again while t2's row holds it.
        *Txn("t4", 400).row("INSERT", new=_row(2, "dup", None)).commit(),
        # Before t6 and in order with the history: applies, then t6 deletes the row.
        *Txn("t4b", 450).row("UPDATE", old={"REGION_ID": 2, "NOTE": "n"}, new={"NOTE": "m"}).commit(),
    ])
    run_pipeline(spark, ch)
    rows = sorted((r["REGION_ID"], r["REGION_NAME"], r["NOTE"], r["_transaction_id"]) for r in _gold(spark, ch).collect())
    assert rows == [(1, "B", "n", "t5")]
    queue = queued(spark, ch)
    assert set(queue) == {"t3", "t4"}
    assert "contradicts the history already applied at key {\"REGION_ID\":1}" in queue["t3"]
    assert "ORA-26786" in queue["t3"]
    assert "ORA-00001" in queue["t4"]
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems


# The variation that also checks the retry mark costs three more runs: the extended tier.
@pytest.mark.parametrize("check_mark", [False, pytest.param(True, marks=pytest.mark.extended)],
                         ids=["core", "retry_mark"])
def test_a_conflict_a_late_change_explains_is_re_executed(spark, tmp_path, check_mark):
    """An UPDATE that lands before the INSERT it depends on fails (no row), and one that
    lands before the UPDATE it follows fails (other values); once the earlier change lands,
    they are re-executed in the same run and apply in commit order, in the one plan that
    applies the change they waited for."""
    ch = make_channel(tmp_path)
    t = {
        "t2": Txn("t2", 200).row("INSERT", new=_row(1, "A", "n")).commit(),
        "t3": Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "A"}, new={"REGION_NAME": "B"}).commit(),
        "t5": Txn("t5", 500).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "B"}, new={"REGION_NAME": "C"}).commit(),
        "t6": Txn("t6", 600).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "C"}, new={"REGION_NAME": "D"})
        .row("INSERT", new=_row(7, "G", None)).commit(),
    }
    write_lines(ch, "src", "f1.jsonl", [*Txn("t1", 100).ddl(REGIONS_DDL).commit(), *t["t3"]])
    first = run_pipeline(spark, ch)
    assert "ORA-01403" in queued(spark, ch)["t3"] and first.retried == 0
    write_lines(ch, "src", "f2.jsonl", t["t2"])
    plans = _plans(spark, ch)
    second = run_pipeline(spark, ch)
    assert second.retried == 1 and queued(spark, ch) == {} and _plans(spark, ch) == plans + 1
    # The run marked its last plan looked at with the time it wrote in the plan's applied
    # row, unread: the mark is the row's, so the next run's look at the start skips it.
    assert (ch.storage.state / RETRY_CHECKED).read_text() == run_mark(last_applied_run(spark, ch))
    write_lines(ch, "src", "f3.jsonl", t["t6"])
    run_pipeline(spark, ch)
    # t6 met name B where its old image says C: queued whole, key 7 not inserted.
    assert "ORA-26786" in queued(spark, ch)["t6"]
    if check_mark:
        # The last plan applied nothing (t6 failed whole), so its run did not look for what
        # it explains; the next run does, once, and marks it: a later idle run does not
        # look again. Without the mark (a run killed before its look) the next run looks.
        run_pipeline(spark, ch)
        looked = TOTALS["gold.retry"]
        assert run_pipeline(spark, ch).retried == 0 and TOTALS["gold.retry"] == looked
        (ch.storage.state / RETRY_CHECKED).unlink()
        assert run_pipeline(spark, ch).retried == 0 and TOTALS["gold.retry"] > looked
        assert (ch.storage.state / RETRY_CHECKED).is_file() and "ORA-26786" in queued(spark, ch)["t6"]
    write_lines(ch, "src", "f4.jsonl", t["t5"])
    plans = _plans(spark, ch)
    fourth = run_pipeline(spark, ch)
    assert fourth.retried == 1 and queued(spark, ch) == {} and _plans(spark, ch) == plans + 1
    rows = sorted((r["REGION_ID"], r["REGION_NAME"], r["NOTE"], r["_transaction_id"]) for r in _gold(spark, ch).collect())
    assert rows == [(1, "D", "n", "t6"), (7, "G", None, "t6")]
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["applied"] == 5 and audit.buckets["error"] == 0
