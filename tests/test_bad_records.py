"""Bad input on a bad day: every kind of the corpus (``tests/bad_records.py``) ends in
quarantine or the error queue with its reason, the good transactions around it are
applied once, copies are duplicates, and every record is accounted for."""

from __future__ import annotations

import json

from bad_records import CORPUS_DDL, LINES, TRANSACTIONS, landed_as
from chispa import assert_df_equality
from conftest import make_channel, table_versions, write_lines
from records import Txn

from lakestreams.audit import audit_since_last, record_audit, run_audit
from lakestreams.pipeline import run_pipeline


def test_every_bad_kind_has_a_place_and_a_reason(spark, tmp_path):
    ch = make_channel(tmp_path)
    good = [
        *Txn("t.create", 100).ddl(CORPUS_DDL, name="CORPUS").commit(),
        *Txn("t.good", 200).row("INSERT", "CORPUS", new={"ID": 1, "NAME": "a"})
        .row("INSERT", "CORPUS", new={"ID": 2, "NAME": "b", "BORN": "1990-05-01T00:00:00"}).commit(),
    ]
    late = Txn("t.late", 210).row("INSERT", "CORPUS", new={"ID": 4, "NAME": "d"}).row(
        "INSERT", "CORPUS", new={"ID": 5, "NAME": "lands after its COMMIT"}).commit()
    clash = Txn("t.clash", 220).row("INSERT", "CORPUS", new={"ID": 3, "NAME": "c"}).commit()
    claimed_again = dict(clash[0], new_values={"ID": 3, "NAME": "other"})
    write_lines(ch, "src", "f1.jsonl", good)
    write_lines(ch, "src", "f2.jsonl", [r for _, _, txn, _ in TRANSACTIONS for r in txn])
    write_lines(ch, "src", "f3.jsonl", [text for _, text, _ in LINES])
    write_lines(ch, "src", "f4.jsonl", [*clash, late[0], late[2]])
    # In the same batch: the later file's different record for t.clash position 1.
    write_lines(ch, "src", "f5.jsonl", [claimed_again])
    run_pipeline(spark, ch)
    # Per run: nothing recorded yet, so everything is new and each bucket grew from 0.
    first = run_audit(spark, ch)
    since = audit_since_last(spark, ch, first)
    assert since.ok and since.since is None, since.problems
    assert (since.landed, since.bronze, since.quarantined) == (first.landed, first.bronze, first.quarantined)
    assert since.moved == first.buckets and record_audit(spark, ch, first, since)

    # The next day: f1 copied again under another name, t.late's missing record, and a
    # different record for a position bronze already holds.
    write_lines(ch, "src", "g1.jsonl", good)
    write_lines(ch, "src", "g2.jsonl", [late[1], dict(good[2], new_values={"ID": 1, "NAME": "rewritten"})])
    run_pipeline(spark, ch)
    # The second run alone: its two files, the copy all duplicates, one record quarantined.
    since = audit_since_last(spark, ch, run_audit(spark, ch))
    assert since.ok and since.since is not None, since.problems
    assert (since.landed, since.bronze, since.quarantined) == (len(good) + 2, len(good) + 1, 1)
    assert since.moved["duplicate"] == len(good) and since.moved["error"] == 1  # t.late's late record
    assert sum(since.moved.values()) == since.bronze

    quarantine = {
        r["raw"]: r["reason"]
        for r in spark.table(ch.storage.table("bronze", "quarantine").replace("`", "")).collect()
    }
    for kind, text, reason in LINES:
        assert quarantine[landed_as(text)].startswith(reason), (kind, quarantine[landed_as(text)])
    assert quarantine[json.dumps(claimed_again)] == (
        "another record with a different payload holds position 1 of transaction t.clash from DBS1.EXAMPLE.COM "
        f"(landed in file:{ch.landing[0].path}/f4.jsonl); a position belongs to one change: fix the capture "
        "and land the right record once"
    )
    assert "holds position 1 of transaction t.good" in quarantine[json.dumps(dict(good[2], new_values={
        "ID": 1, "NAME": "rewritten"}))]
    assert len(quarantine) == len(LINES) + 2

    queue = {
        r["source_transaction_id"]: r["error_message"]
        for r in spark.table(ch.storage.table("gold", "apply_error").replace("`", "")).collect()
    }
    for kind, txid, _, fragment in TRANSACTIONS:
        assert fragment in queue.get(txid, ""), (kind, queue.get(txid))
    assert "landed after its transaction was complete" in queue["t.late"]
    assert set(queue) == {txid for _, txid, _, _ in TRANSACTIONS} | {"t.late"}

    # Around all that, the good transactions are applied once (t.late before its record
    # came late; the copy of f1 is a duplicate).
    gold = spark.table(f"{ch.storage.schema_name('gold')}.hr__corpus")
    assert_df_equality(
        gold.selectExpr("ID", "NAME", "CAST(BORN AS STRING) AS BORN"),
        spark.createDataFrame(
            [(1, "a", None), (2, "b", "1990-05-01 00:00:00"), (3, "c", None), (4, "d", None)],
            "ID INT, NAME STRING, BORN STRING",
        ),
        ignore_row_order=True, ignore_nullable=True,
    )
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.quarantined == len(LINES) + 2
    assert audit.buckets["duplicate"] == len(good)
    errors = sum(len(txn) - 1 for _, _, txn, _ in TRANSACTIONS)  # COMMIT records are control
    assert audit.buckets["error"] == errors + 1  # and t.late's late record

    # Nothing new: a third run writes no table version (and its audit record neither).
    assert record_audit(spark, ch, audit, audit_since_last(spark, ch, audit))
    before = table_versions(spark, ch)
    run_pipeline(spark, ch)
    idle = run_audit(spark, ch)
    assert not record_audit(spark, ch, idle, audit_since_last(spark, ch, idle))
    assert table_versions(spark, ch) == before

    # Records lost from a bucket since the last audit (bronze is append-only; a silver
    # count is not) break the identity of what came since, not only the overall one.
    # Storage.table quotes the channel's checked identifiers.
    spark.sql(f"DELETE FROM {ch.storage.table('silver', 'outcomes')} WHERE bucket = 'control'")
    overall = run_audit(spark, ch)
    since = audit_since_last(spark, ch, overall)
    lost = audit.buckets["control"]
    assert not overall.ok and since.problems == [
        f"bucket changes since the last audit (control -{lost}) add up to -{lost}, not the 0 records bronze took in"]
