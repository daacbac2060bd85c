"""Change records in → gold table out, on real Spark, Delta and dbt."""

from __future__ import annotations

import dataclasses

import pytest
from chispa import assert_df_equality
from conftest import make_channel, queued, table_versions, write_lines
from records import REGIONS_DDL, Txn

import lakestreams.pipeline as pipeline
from lakestreams.audit import run_audit
from lakestreams.errors import ApplyError
from lakestreams.pipeline import run_pipeline

GOLD_COLS = ["REGION_ID", "REGION_NAME", "NOTE"]
SCHEMA = "REGION_ID INT, REGION_NAME STRING, NOTE STRING"


def gold(spark, ch, table="hr__regions"):
    return spark.table(f"{ch.storage.schema_name('gold')}.{table}").select(*GOLD_COLS)


@pytest.mark.extended  # covered in the core: test_scenarios_as_data (partial updates, key chains, deletes, rolled-back and pending transactions, a missing row), test_late_records (commits a run later, changes on rows an earlier plan applied), the HR sample's status test (consistency watermarks)
def test_partial_updates_key_chains_deletes_and_waiting_transactions(spark, tmp_path):
    ch = make_channel(tmp_path)
    first = [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200)
        .row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "A", "NOTE": "x"})
        .row("INSERT", new={"REGION_ID": 2, "REGION_NAME": "B", "NOTE": "y"})
        .row("INSERT", new={"REGION_ID": 3, "REGION_NAME": "C", "NOTE": None})
        .commit(),
        # A partial update: NOTE is absent, so it is unchanged, never NULL.
        *Txn("t3", 300)
        .row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "A"}, new={"REGION_NAME": "AA"})
        # A key chain 2 → 20 → 21 inside one transaction moves the whole row.
        .row("UPDATE", old={"REGION_ID": 2}, new={"REGION_ID": 20})
        .row("UPDATE", old={"REGION_ID": 20, "NOTE": "y"}, new={"REGION_ID": 21, "NOTE": "yy"})
        .commit(),
        *Txn("t4", 400).row("DELETE", old={"REGION_ID": 3, "REGION_NAME": "C", "NOTE": None}).commit(),
        # Rolled back: never applied.
        *Txn("t5", 500).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "ROLLED"}).rollback(),
        # Its COMMIT lands in a later file: it waits.
        *Txn("t6", 600).row("INSERT", new={"REGION_ID": 3, "REGION_NAME": "C2", "NOTE": "z"}).records,
    ]
    write_lines(ch, "src", "f1.jsonl", first)
    run_pipeline(spark, ch)
    expected = spark.createDataFrame([(1, "AA", "x"), (21, "B", "yy")], SCHEMA)
    assert_df_equality(gold(spark, ch), expected, ignore_row_order=True)
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["pending"] == 1
    assert audit.buckets["rolled_back"] == 1
    assert audit.buckets["applied"] == 7
    # Watermarks: everything committed at or below 500 is decided (t5 rolled back); the
    # waiting t6 holds the low watermark below its first record (SCN 591).
    marker = spark.table(ch.storage.table("gold", "apply_consistency").replace("`", "")).collect()
    assert [(r["source_database"], r["consistent_scn"], r["oldest_pending_scn"]) for r in marker] == [
        ("DBS1.EXAMPLE.COM", 500, 591)]

    # The COMMIT arrives: the waiting transaction applies, and only the new file is read.
    # Changes to rows an earlier plan applied find them in gold: an update, a key move and
    # a delete; an update of a key gold never held fails its transaction (ORA-01403).
    t6_commit = Txn("t6", 600).row("INSERT", new={}).commit()[-1]
    second = [
        t6_commit,
        *Txn("t7", 700).row("UPDATE", old={"REGION_ID": 1, "NOTE": "x"}, new={"NOTE": "x2"}).commit(),
        *Txn("t8", 800).row("UPDATE", old={"REGION_ID": 21}, new={"REGION_ID": 22}).commit(),
        *Txn("t9", 900).row("DELETE", old={"REGION_ID": 1}).row("UPDATE", old={"REGION_ID": 99}, new={"NOTE": "n"})
        .commit(),
    ]
    write_lines(ch, "src", "f2.jsonl", second)
    run_pipeline(spark, ch)
    expected = spark.createDataFrame([(1, "AA", "x2"), (22, "B", "yy"), (3, "C2", "z")], SCHEMA)
    assert_df_equality(gold(spark, ch), expected, ignore_row_order=True)
    assert spark.table(ch.storage.table("bronze", "change_records").replace("`", "")).count() == len(first) + len(second)
    queue = spark.table(ch.storage.table("gold", "error_queue").replace("`", "")).collect()
    assert [(r["transaction_id"], r["record_count"]) for r in queue] == [("t9", 3)]
    assert "UPDATE of HR.REGIONS finds no row with key {\"REGION_ID\":99}" in queue[0]["error"]
    audit = run_audit(spark, ch)
    assert audit.ok and audit.buckets["pending"] == 0 and audit.buckets["applied"] == 10
    assert audit.buckets["error"] == 2  # t9's two row records; its COMMIT counts as control

    # Nothing new: no table gets a new Delta version.
    before = table_versions(spark, ch)
    run_pipeline(spark, ch)
    assert table_versions(spark, ch) == before

    progress = spark.table(ch.storage.table("gold", "apply_progress_by_table").replace("`", "")).collect()
    # t8 is the last applied change; t9 (900) failed, so it is decided and nothing waits.
    assert [(r["target"], r["low_watermark"], r["high_watermark"], r["oldest_pending_scn"]) for r in progress] == [
        ("hr__regions", 900, 800, None)]


@pytest.mark.extended  # covered in the core: test_bad_records lands a file twice under another name
def test_same_file_landed_twice_is_counted_as_duplicate_and_applied_once(spark, tmp_path):
    ch = make_channel(tmp_path)
    recs = [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "A", "NOTE": None}).commit(),
    ]
    write_lines(ch, "src", "a.jsonl", recs)
    write_lines(ch, "src", "a_copy.jsonl", recs)
    run_pipeline(spark, ch)
    assert_df_equality(gold(spark, ch), spark.createDataFrame([(1, "A", None)], SCHEMA), ignore_row_order=True)
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["duplicate"] == len(recs)


@pytest.mark.extended  # covered in the core: test_instantiation applies instantiation SCNs per table; test_error_queue holds failed transactions whole
def test_instantiation_scn_and_atomic_error_queue(spark, tmp_path):
    ch = make_channel(
        tmp_path,
        instantiation=[{"table": "hr.regions", "source_database": "DBS1.EXAMPLE.COM", "scn": 250}],
    )
    recs = [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        # At or below the instantiation SCN: discarded and counted.
        *Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "old", "NOTE": None}).commit(),
        *Txn("t3", 250).row("INSERT", new={"REGION_ID": 2, "REGION_NAME": "old", "NOTE": None}).commit(),
        *Txn("t4", 300).row("INSERT", new={"REGION_ID": 3, "REGION_NAME": "new", "NOTE": None}).commit(),
        # COUNTRIES was never created: the whole transaction waits in the error queue,
        # including its REGIONS insert.
        *Txn("t5", 400)
        .row("INSERT", new={"REGION_ID": 4, "REGION_NAME": "ok", "NOTE": None})
        .row("INSERT", table="COUNTRIES", new={"COUNTRY_ID": "NL"})
        .commit(),
        # A value that does not fit (VARCHAR2(10)) fails its transaction too.
        *Txn("t6", 500).row("INSERT", new={"REGION_ID": 5, "REGION_NAME": "x", "NOTE": "much too long"}).commit(),
        # A number that is not a number is an error, never a silent NULL.
        *Txn("t7", 600).row("INSERT", new={"REGION_ID": "seven", "REGION_NAME": "x", "NOTE": None}).commit(),
    ]
    write_lines(ch, "src", "f.jsonl", recs)
    run_pipeline(spark, ch)
    assert_df_equality(gold(spark, ch), spark.createDataFrame([(3, "new", None)], SCHEMA), ignore_row_order=True)
    eq = spark.table(ch.storage.table("gold", "error_queue").replace("`", ""))
    errors = {r["transaction_id"]: r for r in eq.collect()}
    assert set(errors) == {"t5", "t6", "t7"}
    assert "COUNTRIES is not in the source dictionary" in errors["t5"]["error"]
    assert errors["t5"]["record_count"] == 3 and errors["t5"]["commit_scn"] == 400
    assert "NOTE is longer than 10 bytes" in errors["t6"]["error"]
    assert "REGION_ID does not convert to NUMBER(4)" in errors["t7"]["error"]
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["below_instantiation"] == 2
    assert audit.buckets["applied"] == 1
    assert audit.buckets["error"] == 4


@pytest.mark.extended  # covered in the core: test_rules compiles the tag conditions, test_rule_scenarios evaluates them on tagged records, the HR sample applies its tagged transactions
def test_tagged_records_are_discarded_by_the_rule_that_says_so(spark, tmp_path):
    ch = make_channel(
        tmp_path,
        apply={"name": "apply", "rules": [
            {"schema": "hr", "include_tagged_lcr": False, "source_database": "dbs1.example.com"},
            {"table": "hr.regions", "include_dml": True, "inclusion_rule": False, "source_database": "DBS1.EXAMPLE.COM"},
        ]},
    )
    recs = [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200, tag="11").row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "t", "NOTE": None}).commit(),
        *Txn("t3", 300).row("INSERT", new={"REGION_ID": 2, "REGION_NAME": "n", "NOTE": None}).commit(),
    ]
    write_lines(ch, "src", "f.jsonl", recs)
    run_pipeline(spark, ch)
    outcomes = spark.table(ch.storage.table("silver", "outcomes").replace("`", "")).where("bucket = 'discarded'")
    reasons = {r["transaction_id"]: r["reason"] for r in outcomes.collect()}
    # The negative table rule (include_tagged_lcr false) carries is_null_tag() = 'Y', so it
    # does not match the tagged t2: the positive set discards it. t3 hits the negative rule.
    assert reasons == {
        "t2": "apply apply: no rule of positive rule set APPLY_RULESET is TRUE",
        "t3": "apply apply: negative rule REGIONS1 of APPLY_NEGATIVE_RULESET is TRUE",
    }
    assert run_audit(spark, ch).ok


def test_gold_rerun_after_a_crash_before_progress_applies_nothing_twice(spark, tmp_path):
    from gold.dbt import apply_targets
    from gold.plan import run_plan
    from lakestreams.pipeline import known_targets

    ch = make_channel(tmp_path)
    recs = [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "A", "NOTE": "n"}).commit(),
        # Moves the row 1 → 2: applying this plan twice would lose the row (its base is gone).
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_ID": 2}).commit(),
    ]
    write_lines(ch, "src", "f.jsonl", recs)
    run_pipeline(spark, ch, ("bronze", "silver"))
    # The gold stage dies after the MERGEs, before apply progress is written.
    plan = run_plan(spark, ch)
    apply_targets(spark, ch, plan, known_targets(spark, ch))
    target = f"{ch.storage.schema_name('gold')}.hr__regions"
    version = spark.sql(f"DESCRIBE HISTORY {target} LIMIT 1").first()["version"]
    run_pipeline(spark, ch)
    assert spark.sql(f"DESCRIBE HISTORY {target} LIMIT 1").first()["version"] == version
    assert_df_equality(gold(spark, ch), spark.createDataFrame([(2, "A", "n")], SCHEMA), ignore_row_order=True)
    # The plan run again meets its own MERGE (key 1 moved away, key 2 taken): what its
    # first run left unwritten stays so, no conflict and no failed transaction.
    for table in ("error_queue", "apply_conflicts"):
        assert spark.table(ch.storage.table("gold", table).replace("`", "")).count() == 0, table
    assert run_audit(spark, ch).ok


def _at(records: list[dict], when: str) -> list[dict]:
    for r in records:
        r["commit_time"] = when
    return records


def test_order_is_scn_within_a_source_and_commit_time_across_sources(spark, tmp_path):
    """One table from two source databases: SCN order within each, commit time across them;
    each source with its own instantiation SCN (DBS2's 9050 would discard all of DBS1's
    changes, DBS1's 150 would apply DBS2's change at 9020) and its own progress."""
    dbs2 = "DBS2.EXAMPLE.COM"
    ch = make_channel(tmp_path, landing={"a": "commit_records", "b": "commit_records"}, instantiation=[
        {"table": "hr.regions", "source_database": "DBS1.EXAMPLE.COM", "scn": 150},
        {"table": "hr.regions", "source_database": dbs2, "scn": 9050}])
    write_lines(ch, "a", "a.jsonl", [
        *_at(Txn("t1", 100).ddl(REGIONS_DDL).commit(), "2024-01-01T10:00:00Z"),
        *_at(Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "a", "NOTE": "n"}).commit(), "2024-01-01T10:00:01Z"),
        # The source clock steps back: SCN order still decides within the source.
        *_at(Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "scn300"}).commit(), "2024-01-01T10:00:09Z"),
        *_at(Txn("t4", 400).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "scn400"}).commit(), "2024-01-01T10:00:08Z"),
        *_at(Txn("t5", 500).row("UPDATE", old={"REGION_ID": 1}, new={"NOTE": "dbs1 late"}).commit(), "2024-01-01T10:00:30Z"),
    ])
    write_lines(ch, "b", "b.jsonl", [
        *_at(Txn("u1", 9000, source=dbs2).ddl(REGIONS_DDL).commit(), "2024-01-01T09:00:00Z"),
        # At or below DBS2's instantiation SCN: gold held it already when it was instantiated.
        # Applied, it would come after t4 and leave its name.
        *_at(Txn("u0", 9020, source=dbs2).row("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "dbs2 old"}).commit(),
             "2024-01-01T10:00:10Z"),
        # A far higher SCN from another source, committed before t5: t5 comes after it.
        *_at(Txn("u2", 9100, source=dbs2).row("UPDATE", old={"REGION_ID": 1}, new={"NOTE": "dbs2"}).commit(), "2024-01-01T10:00:20Z"),
    ])
    run_pipeline(spark, ch)
    assert_df_equality(gold(spark, ch), spark.createDataFrame([(1, "scn400", "dbs1 late")], SCHEMA))
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert (audit.buckets["below_instantiation"], audit.buckets["applied"]) == (1, 5)
    progress = spark.table(ch.storage.table("gold", "apply_progress").replace("`", ""))
    assert {(r["source_database"], r["applied_scn"]) for r in progress.collect()} == {
        ("DBS1.EXAMPLE.COM", 500), (dbs2, 9100)}
    view = spark.table(ch.storage.table("gold", "apply_instantiated_objects").replace("`", ""))
    assert {(r["source_database"], r["instantiation_scn"]) for r in view.collect()} == {
        ("DBS1.EXAMPLE.COM", 150), (dbs2, 9050)}


@pytest.mark.extended  # covered in the core: test_bad_records lands a record after its COMMIT
def test_a_record_landing_after_its_commit_goes_to_the_error_queue(spark, tmp_path):
    ch = make_channel(tmp_path)
    t2 = Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "a", "NOTE": None})
    write_lines(ch, "src", "f1.jsonl", [*Txn("t1", 100).ddl(REGIONS_DDL).commit(), *t2.commit()])
    run_pipeline(spark, ch)
    late = t2.row("INSERT", new={"REGION_ID": 2, "REGION_NAME": "late", "NOTE": None}).records[-1]
    write_lines(ch, "src", "f2.jsonl", [late])
    run_pipeline(spark, ch)
    assert_df_equality(gold(spark, ch), spark.createDataFrame([(1, "a", None)], SCHEMA))
    eq = spark.table(ch.storage.table("gold", "error_queue").replace("`", "")).collect()
    assert len(eq) == 1 and eq[0]["transaction_id"] == "t2"
    assert eq[0]["error"].startswith("record landed after its transaction was complete")
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.buckets["error"] == 1 and audit.buckets["applied"] == 1


def test_a_plan_moving_no_row_takes_uncarried_values_from_the_row_its_merge_matches(spark, tmp_path, monkeypatch):
    """Where no change of a plan moves a row to another key, the apply keeps the values an
    UPDATE did not carry from the row its MERGE matches (no second read of the replica);
    a plan with a key move joins the replica at the incarnation's first key, as before. A
    plan applied as moving no row that does move one stops with an error, and the plan run
    again applies it."""
    ch = make_channel(tmp_path, targets=[{"table": "hr.regions", "soft_delete": True}])
    cols = [*GOLD_COLS, "_is_deleted"]
    schema = SCHEMA + ", _is_deleted BOOLEAN"

    def replica():
        return spark.table(f"{ch.storage.schema_name('gold')}.hr__regions").select(*cols)

    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "A", "NOTE": "x"})
        .row("INSERT", new={"REGION_ID": 2, "REGION_NAME": "B", "NOTE": "y"})
        .row("INSERT", new={"REGION_ID": 3, "REGION_NAME": "C", "NOTE": "z"}).commit(),
    ])
    run_pipeline(spark, ch)
    # Partial updates, and a row deleted then inserted again at its key without NOTE: the
    # new incarnation takes NULL there, not the deleted row's value.
    write_lines(ch, "src", "f2.jsonl", [
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1, "REGION_NAME": "A"}, new={"REGION_NAME": "AA"})
        .row("UPDATE", old={"REGION_ID": 3, "NOTE": "z"}, new={"NOTE": "z2"}).commit(),
        *Txn("t4", 400).row("DELETE", old={"REGION_ID": 2, "REGION_NAME": "B", "NOTE": "y"}).commit(),
        *Txn("t5", 500).row("INSERT", new={"REGION_ID": 2, "REGION_NAME": "B2"}).commit(),
    ])
    result = run_pipeline(spark, ch)
    assert [(t.model, t.moves) for t in result.plan.targets] == [("hr__regions", False)]
    expected = [(1, "AA", "x", False), (2, "B2", None, False), (3, "C", "z2", False)]
    assert_df_equality(replica(), spark.createDataFrame(expected, schema), ignore_row_order=True)

    # A key move, applied as if nothing moved: the MERGE refuses it, and nothing is applied.
    write_lines(ch, "src", "f3.jsonl", [
        *Txn("t6", 600).row("UPDATE", old={"REGION_ID": 3}, new={"REGION_ID": 30}).commit(),
        *Txn("t7", 700).row("UPDATE", old={"REGION_ID": 1}, new={"NOTE": "x2"}).commit(),
    ])
    apply = pipeline.apply_targets

    def as_moving_no_row(spark, channel, plan, all_targets):
        plan = dataclasses.replace(plan, targets=[dataclasses.replace(t, moves=False) for t in plan.targets])
        return apply(spark, channel, plan, all_targets)

    monkeypatch.setattr(pipeline, "apply_targets", as_moving_no_row)
    with pytest.raises(ApplyError, match=r"applied as moving no row, but an incarnation moves from key \{\"REGION_ID\":3\}"):
        run_pipeline(spark, ch)
    assert_df_equality(replica(), spark.createDataFrame(expected, schema), ignore_row_order=True)
    monkeypatch.setattr(pipeline, "apply_targets", apply)
    # The plan run again joins the replica: the moved row keeps the values it had.
    result = run_pipeline(spark, ch)
    assert [(t.model, t.moves) for t in result.plan.targets] == [("hr__regions", True)]
    expected = [(1, "AA", "x2", False), (2, "B2", None, False), (3, "C", "z2", True), (30, "C", "z2", False)]
    assert_df_equality(replica(), spark.createDataFrame(expected, schema), ignore_row_order=True)


@pytest.mark.parametrize("limit", ["20000", "0"], ids=["one_partition", "shuffled"])
def test_a_change_claiming_a_key_gold_holds_fails_as_taken(spark, tmp_path, monkeypatch, limit):
    """An INSERT of a key a replica row holds, and a key move onto one, fail with ORA-00001;
    a move onto a free key and an INSERT of a new key apply. The INSERT meets the row the
    judging found at its key; the move, where a plan moves rows, a lookup of the replica.
    Planned in one partition (a small target), the replica looked up by the changes' keys
    and the plan broadcast to the MERGE; and over shuffled partitions, the replica shuffled
    to meet the changes."""
    monkeypatch.setenv("LAKESTREAMS_ONE_PARTITION_CHANGES", limit)
    monkeypatch.setenv("LAKESTREAMS_BROADCAST_PLAN_ROWS", limit)
    ch = make_channel(tmp_path)
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "A", "NOTE": "x"})
        .row("INSERT", new={"REGION_ID": 2, "REGION_NAME": "B", "NOTE": "y"})
        .row("INSERT", new={"REGION_ID": 3, "REGION_NAME": "C", "NOTE": "z"}).commit(),
    ])
    run_pipeline(spark, ch)

    # A plan that moves rows.
    write_lines(ch, "src", "f2.jsonl", [
        *Txn("t3", 300).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "again"}).commit(),
        *Txn("t4", 400).row("UPDATE", old={"REGION_ID": 3}, new={"REGION_ID": 2}).commit(),
        *Txn("t5", 500).row("UPDATE", old={"REGION_ID": 3}, new={"REGION_ID": 5}).commit(),
        *Txn("t6", 600).row("INSERT", new={"REGION_ID": 6, "REGION_NAME": "F", "NOTE": "w"}).commit(),
    ])
    result = run_pipeline(spark, ch)
    # Its plan table holds the changes of t5 and t6 (t3 and t4 fail).
    assert [(t.model, t.moves, t.rows) for t in result.plan.targets] == [("hr__regions", True, 2)]
    expected = [(1, "A", "x"), (2, "B", "y"), (5, "C", "z"), (6, "F", "w")]
    assert_df_equality(gold(spark, ch), spark.createDataFrame(expected, SCHEMA), ignore_row_order=True)
    q = queued(spark, ch)
    assert sorted(q) == ["t3", "t4"], q
    assert 'INSERT into HR.REGIONS finds key {"REGION_ID":1} taken by another row (ORA-00001' in q["t3"]
    assert 'UPDATE of HR.REGIONS finds key {"REGION_ID":2} taken by another row (ORA-00001' in q["t4"]
    # A plan that moves none: its INSERTs meet the moved row at its new key.
    write_lines(ch, "src", "f3.jsonl", [
        *Txn("t7", 700).row("INSERT", new={"REGION_ID": 5, "REGION_NAME": "again"}).commit(),
        *Txn("t8", 800).row("INSERT", new={"REGION_ID": 3, "REGION_NAME": "C2", "NOTE": "v"}).commit(),
    ])
    result = run_pipeline(spark, ch)
    assert [(t.model, t.moves) for t in result.plan.targets] == [("hr__regions", False)]
    expected += [(3, "C2", "v")]
    assert_df_equality(gold(spark, ch), spark.createDataFrame(expected, SCHEMA), ignore_row_order=True)
    q = queued(spark, ch)
    assert sorted(q) == ["t3", "t4", "t7"], q
    assert 'INSERT into HR.REGIONS finds key {"REGION_ID":5} taken by another row (ORA-00001' in q["t7"]


def test_a_small_plan_is_judged_interpreted_and_its_merges_into_a_wide_replica_compile_expressions(
        spark, tmp_path, monkeypatch):
    """A small plan runs without generated code; its dbt run compiles expressions again
    (whole stages stay off) when a replica it writes is wide, because a MERGE copies whole
    replica files: its rows are the replica's, not the plan's."""
    import lakestreams.spark

    monkeypatch.setenv("LAKESTREAMS_INTERPRETED_RECORDS", "1000")
    keys = ["spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode"]
    before = [spark.conf.get(k, None) for k in keys]
    seen: dict[str, list] = {}

    def watched(name, fn):
        def run(spark, *args, **kwargs):
            seen[name] = [spark.conf.get(k) for k in keys]
            return fn(spark, *args, **kwargs)
        return run

    monkeypatch.setattr(pipeline, "run_plan", watched("plan", pipeline.run_plan))
    monkeypatch.setattr(pipeline, "apply_targets", watched("apply", pipeline.apply_targets))
    ch = make_channel(tmp_path)
    # REGIONS has three columns: wide from three on, not from four.
    monkeypatch.setattr(lakestreams.spark, "COMPILED_EXPRESSIONS_COLUMNS", 3)
    write_lines(ch, "src", "f1.jsonl", [
        *Txn("t1", 100).ddl(REGIONS_DDL).commit(),
        *Txn("t2", 200).row("INSERT", new={"REGION_ID": 1, "REGION_NAME": "A", "NOTE": "x"}).commit(),
    ])
    result = run_pipeline(spark, ch)
    assert result.plan.interpreted is True
    assert seen == {"plan": ["false", "NO_CODEGEN"], "apply": ["false", "FALLBACK"]}
    monkeypatch.setattr(lakestreams.spark, "COMPILED_EXPRESSIONS_COLUMNS", 4)
    write_lines(ch, "src", "f2.jsonl", [
        *Txn("t3", 300).row("UPDATE", old={"REGION_ID": 1}, new={"NOTE": "y"}).commit(),
    ])
    result = run_pipeline(spark, ch)
    assert result.plan.interpreted is True
    assert seen == {"plan": ["false", "NO_CODEGEN"], "apply": ["false", "NO_CODEGEN"]}
    assert_df_equality(gold(spark, ch), spark.createDataFrame([(1, "A", "y")], SCHEMA))
    # Afterwards the session's settings are as they were.
    assert [spark.conf.get(k, None) for k in keys] == before
