"""The main job: bronze → silver → apply plan → gold (dbt), and its summary."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from bronze.ingest import IngestCounts, run_bronze
from gold.dbt import apply_targets
from gold.plan import (
    DDL_APPLIED,
    GOLD_META_TABLES,
    Plan,
    RunLog,
    TargetPlan,
    create_gold_tables,
    explained_by_pending,
    explained_by_plan,
    open_plan,
    plan_records,
    plan_table_name,
    read_run_log,
    record_progress,
    run_plan,
)
from gold.structure import drop_gold_tables, enable_deletion_vectors, follow_targets
from lakestreams.audit import Audit
from lakestreams.config import Channel
from lakestreams.delta_io import table_names
from lakestreams.rebuild import ExecuteResult, retry_explained
from lakestreams.runlock import channel_lock
from lakestreams.spark import compiled_expressions, ensure_schemas, interpreted, interpreted_records
from lakestreams.timing import stage, step
from silver.changes import target_model_name
from silver.evolution import ColumnChanges
from silver.run import (
    SilverResult,
    create_silver_tables,
    is_retry,
    load_targets,
    retry_pending_request,
    retry_request,
    run_silver,
    unfinished_rebuild,
)

STAGES = ("bronze", "silver", "gold")
log = logging.getLogger("lakestreams.pipeline")


@dataclass
class RunResult:
    bronze: list[IngestCounts] = field(default_factory=list)
    silver: list[SilverResult] = field(default_factory=list)
    plan: Plan | None = None
    dbt: list[tuple[str, str, str]] = field(default_factory=list)
    retried: int = 0  # error transactions re-executed because a late change explained them


def known_targets(spark: SparkSession, channel: Channel, loaded: list[tuple] | None = None) -> list[TargetPlan]:
    """Every target table silver has a structure for and the plan has a table for.
    ``loaded``: ``load_targets``' rows, when the caller read them already."""
    silver = table_names(spark, channel.storage, "silver")
    if "targets" not in silver:
        return []  # silver has not run yet: no target has a structure
    out: dict[str, TargetPlan] = {}
    for src, sowner, sname, tdef, _ in load_targets(spark, channel) if loaded is None else loaded:
        model = target_model_name(tdef.owner, tdef.name)
        if plan_table_name(model) in silver:
            prev = out.get(model)
            sources = (*(prev.sources if prev else ()), (src, sowner, sname))
            out[model] = TargetPlan(model, tdef.owner, tdef.name, tdef, plan_table_name(model), sources)
    return list(out.values())


def evolve_gold(spark: SparkSession, channel: Channel, gone: set[str] | None = None,
                loaded: list[tuple] | None = None) -> dict[str, ColumnChanges]:
    """The DDL step before dbt: every gold table takes its target's DDL (renames, drops,
    new columns, widened or rewritten types; a target dropped with its source table goes);
    returns what changed per table. ``gone`` receives the models of dropped targets;
    ``loaded``: as ``known_targets`` takes it. The gold stage's first step, and a task of
    its own in the bundle's job (a no-op when run again)."""
    return follow_targets(spark, channel, known_targets(spark, channel, loaded), gone)


def format_evolution(changes: dict[str, ColumnChanges]) -> str:
    """What the DDL step changed, a line per gold table (``lakestreams evolve``)."""
    if not changes:
        return "gold tables hold their targets' columns: no DDL to apply"
    return "\n".join(f"gold {table}: {c.describe()}" for table, c in sorted(changes.items()))


def run_gold(spark: SparkSession, channel: Channel, log: RunLog | None = None,
             rebuild_clear: bool = False) -> tuple[Plan, list[tuple[str, str, str]]]:
    """Plan and apply the silver batches no plan has applied yet. ``log``: the gold run log
    as the caller read it (``read_run_log``), when no plan was opened since;
    ``rebuild_clear``: as ``open_plan`` takes it."""
    # Gold tables take their targets' DDL first: the plan reads them with today's columns.
    gone: set[str] = set()
    # The targets silver defined, read once: the gold stage does not write them.
    loaded = load_targets(spark, channel) if "targets" in table_names(spark, channel.storage, "silver") else None
    evolve_gold(spark, channel, gone, loaded)
    opened = open_plan(spark, channel, log, rebuild_clear)
    if opened is None:
        return Plan(), []
    # A small plan goes without generated code: compiling costs it more than it saves. Its
    # dbt run compiles expressions (not whole stages) when a replica it writes is wide: its
    # MERGEs copy whole replica files, so their rows are the replica's, not the plan's.
    limit = interpreted_records()
    records = plan_records(spark, channel, opened[1], opened[2], limit) if limit > 0 else None
    with interpreted(spark, records) as small:
        with step("gold.plan"):
            plan = run_plan(spark, channel, opened, loaded)
        plan.interpreted = small
        widest = max((len(t.definition.columns) for t in plan.targets), default=0)
        with step("gold.dbt"), compiled_expressions(spark, small, widest):
            results = apply_targets(spark, channel, plan, known_targets(spark, channel, loaded))
        # Changes from before a DROP that took the target with it made the target anew: gone again.
        drop_gold_tables(spark, channel, [t for t in plan.targets if t.model in gone])
        with step("gold.deletion_vectors"):
            # Replicas grown large take deletion vectors for their next MERGEs (a DDL step of
            # ours, like evolve_gold's: dbt-spark does not change table properties).
            enable_deletion_vectors(spark, channel, plan.plan_id, plan.targets)
        with step("gold.progress"):
            record_progress(spark, channel, plan)
    return plan, results


#: Plans in one run that re-execute the conflicts the plan before explained.
MAX_RETRY_ROUNDS = 4
#: The state file naming the last applied plan whose explained conflicts were looked at.
RETRY_CHECKED = "retry_checked"


def applied_mark(spark: SparkSession, channel: Channel, plan_id: int) -> str:
    """Applied plan ``plan_id`` as its applied log row names it (id, silver range, time): a
    plan of a channel whose tables were made again from nothing never has the same mark."""
    runs = spark.table(channel.storage.table("silver", "gold_runs").replace("`", ""))
    return run_mark(runs.where((F.col("state") == "applied") & (F.col("plan_id") == plan_id)).first())  # one row


def run_mark(row: Row) -> str:
    """The mark of a plan's applied log row (``applied_mark``)."""
    return _mark(row["plan_id"], row["silver_from"], row["silver_to"], row["at"])


def _mark(plan_id: int, silver_from: int, silver_to: int, at: datetime) -> str:
    return f"{plan_id} {silver_from} {silver_to} {at.isoformat()}"


def retry_conflicts(spark: SparkSession, channel: Channel, plan: Plan, result: RunResult,
                    mark: str | None = None) -> bool:
    """Re-execute the error transactions ``plan`` explained (``explained_by_plan``): they
    failed on a conflict that a change landing later, but ordered before them, removes.
    True when some were re-executed (their silver batch waits for the next plan).

    A finished look is marked in the state folder (``mark``: the plan's mark, when the
    caller read its applied row already; a plan this process applied knows its own), so
    that the look at the start of gold (``_run_gold_stage``) can skip a plan so marked."""
    if plan.plan_id is None:
        return False
    if mark is None and plan.applied_at is not None:  # the time this process wrote in the row
        mark = _mark(plan.plan_id, plan.silver_from, plan.silver_to, plan.applied_at)
    mark = mark or applied_mark(spark, channel, plan.plan_id)
    marker = channel.storage.state / RETRY_CHECKED
    with step("gold.retry"):
        explained = explained_by_plan(spark, channel, plan)
        # No conflict waits in the error queue: no re-execution request to open (its checks
        # of unfinished batches, plans and rebuilds cost more than the look).
        r = retry_explained(spark, channel, retry_request(plan.plan_id), explained) if explained is not None else None
    _write_mark(marker, mark)
    return _retried(r, result)


def _retried(r: ExecuteResult | None, result: RunResult) -> bool:
    if r is None or not r.count:
        return False
    result.retried += r.count
    result.silver.append(r.silver)
    return True


def retry_pending(spark: SparkSession, channel: Channel, result: RunResult, last_to: int) -> bool:
    """Before a plan: re-execute the error transactions that the silver batches waiting for
    it explain (``explained_by_pending``), so that the plan applies them together with the
    changes they waited for. True when some were re-executed. ``last_to``: as
    ``explained_by_pending`` takes it."""
    with step("gold.retry.pending"):
        found = explained_by_pending(spark, channel, last_to)
        # No conflict waits in the error queue: no re-execution request to open.
        r = retry_explained(spark, channel, retry_pending_request(found[0]), found[1]) if found is not None else None
    return _retried(r, result)


def _read_mark(marker: Path) -> str | None:
    try:
        return marker.read_text() if marker.is_file() else None
    except OSError as e:
        log.warning("cannot read %s (%s): the run looks for explained conflicts again", marker, e)
        return None


def _write_mark(marker: Path, mark: str) -> None:
    """Best effort: a mark missing or torn never equals a plan's, so the next run looks again."""
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(mark)
    except OSError as e:
        log.warning("cannot write %s (%s): the next run looks for explained conflicts again", marker, e)


def resume_retry(spark: SparkSession, channel: Channel, result: RunResult) -> bool:
    """Finish a re-execution of explained conflicts that a killed run left unfinished.
    Whether the rebuild log then holds nothing unfinished: under the channel's lock it stays
    so for the run, whose own re-executions each finish or raise (``rebuild_clear``)."""
    pending = unfinished_rebuild(spark, channel)
    if pending is not None and is_retry(pending["request"]):
        _retried(retry_explained(spark, channel, pending["request"], None), result)
        return True
    return pending is None


def last_applied_run(spark: SparkSession, channel: Channel) -> Row | None:
    """The applied log row of the last applied plan, if any (one row: metadata)."""
    return read_run_log(spark, channel).last_applied


def applied_plan(spark: SparkSession, channel: Channel, row: Row) -> Plan:
    """The plan of an applied log row, with every target (their plan tables hold the last
    applied plan)."""
    return Plan(int(row["plan_id"]), int(row["silver_from"]), int(row["silver_to"]), known_targets(spark, channel))


def run_pipeline(spark: SparkSession, channel: Channel, stages: tuple[str, ...] = STAGES,
                 wait: float = 0.0) -> RunResult:
    """Run the chosen stages in order; each is idempotent and restartable. The channel's
    run lock is held throughout (``wait``: seconds to wait for another run to finish)."""
    with channel_lock(channel.name, channel.storage.state, wait, "run_pipeline"):
        return _run_stages(spark, channel, stages)


def _run_stages(spark: SparkSession, channel: Channel, stages: tuple[str, ...]) -> RunResult:
    ensure_schemas(spark, channel.storage)
    result = RunResult()
    clear = False  # whether the rebuild log was found clear (``resume_retry``)
    if "bronze" in stages:
        with stage("bronze"):
            result.bronze = run_bronze(spark, channel)
    if "silver" in stages:
        with stage("silver"):
            create_silver_tables(spark, channel)
            # A run killed while re-executing explained conflicts: finish that first.
            clear = resume_retry(spark, channel, result)
            while True:
                r = run_silver(spark, channel, clear)
                if r.batch is None:
                    break
                result.silver.append(r)
                if r.drained:
                    break  # bronze holds nothing newer: no batch to look for
    if "gold" in stages:
        with stage("gold"):
            _run_gold_stage(spark, channel, stages, result, clear)
    return result


def _run_gold_stage(spark: SparkSession, channel: Channel, stages: tuple[str, ...], result: RunResult,
                    clear: bool = False) -> None:
    """``clear``: the silver stage of this run found the rebuild log clear (``resume_retry``)."""
    create_gold_tables(spark, channel)
    if "silver" not in stages:
        clear = resume_retry(spark, channel, result)
    # The run log, read once for the looks below and the plan: they open no plan.
    log = read_run_log(spark, channel)
    if log.unfinished is None:
        # The last plan's explained conflicts, in case a run was killed before retrying them.
        # A plan whose look finished is marked, and skipped: the entries a plan can explain
        # are those of earlier plans, they only leave the queue once it is applied, and a
        # transaction re-executed that fails again comes back under a later plan. This holds
        # while the plan's instantiation SCNs and keys stay as they were: a change to those
        # later is not looked at again for plans already applied. The mark comes from the
        # row read here; the targets are listed only for a look still to be made.
        last = log.last_applied
        if last is not None and _read_mark(channel.storage.state / RETRY_CHECKED) != run_mark(last):
            retry_conflicts(spark, channel, applied_plan(spark, channel, last), result, mark=run_mark(last))
        retry_pending(spark, channel, result, log.last_to)
    result.plan, result.dbt = run_gold(spark, channel, log, clear)
    for _ in range(MAX_RETRY_ROUNDS):
        if not (result.plan.targets and retry_conflicts(spark, channel, result.plan, result)):
            break
        result.plan, more = run_gold(spark, channel, rebuild_clear=clear)
        result.dbt += more


@dataclass
class GoldTableSummary:
    name: str
    rows: int
    applied: list[tuple[str, int]]


def gold_summary(spark: SparkSession, channel: Channel) -> list[GoldTableSummary]:
    """Each gold table with its row count and applied SCN per source database."""
    st = channel.storage
    progress_name = st.table("gold", "apply_progress").replace("`", "")
    if not spark.catalog.tableExists(progress_name):
        return []
    # One row per target and source database (metadata, not change data).
    latest = {
        (r["target"], r["source_database"]): int(r["scn"])
        for r in spark.table(progress_name).groupBy("target", "source_database").agg(F.max("applied_scn").alias("scn")).collect()
    }
    out = []
    for name in sorted(table_names(spark, st, "gold", views=False) - set(GOLD_META_TABLES)):
        rows = spark.table(st.table("gold", name).replace("`", "")).count()
        applied = sorted((src, scn) for (tgt, src), scn in latest.items() if tgt == name)
        out.append(GoldTableSummary(name, rows, applied))
    return out


def discard_reasons(spark: SparkSession, channel: Channel) -> list[tuple[str, int]]:
    """Records discarded per rule reason (from the silver outcomes)."""
    name = channel.storage.table("silver", "outcomes").replace("`", "")
    if not spark.catalog.tableExists(name):
        return []
    # One row per rule reason.
    rows = (
        spark.table(name).where("bucket = 'discarded'").groupBy("reason").agg(F.sum("records").alias("n"))
        .orderBy(F.desc("n"), "reason").collect()
    )
    return [(r["reason"], int(r["n"])) for r in rows]


def rule_report(spark: SparkSession, channel: Channel, batch: int | None = None) -> list[dict]:
    """Per silver batch, client and rule: records kept or discarded, and row migrations."""
    name = channel.storage.table("silver", "rule_outcomes").replace("`", "")
    if not spark.catalog.tableExists(name):
        return []
    df = spark.table(name)
    if batch is not None:
        df = df.where(F.col("batch") == batch)
    # One row per batch, rule, outcome and migration: metadata, not change data.
    rows = (
        df.groupBy("batch", "streams_type", "rule_name", "outcome", "migration").agg(F.sum("records").alias("records"))
        .orderBy("batch", F.col("streams_type").desc(), "rule_name", "outcome", "migration").collect()
    )
    return [r.asDict() for r in rows]


def format_rule_report(rows: list[dict]) -> list[str]:
    lines = []
    for r in rows:
        move = f"  migrated {r['migration']}" if r["migration"] else ""
        lines.append(
            f"    batch {r['batch']:>4}  {r['streams_type']:<8} {r['rule_name']:<24} {r['outcome']:<9} "
            f"{r['records']:>8}{move}"
        )
    return lines


ERRORS_LISTED = 200  # transactions `lakestreams errors` prints


def format_error_queue(spark: SparkSession, channel: Channel) -> str:
    """The error queue, oldest commit SCN first: one line per failed transaction, the
    first ERRORS_LISTED of them (their records stay in the table)."""
    name = channel.storage.table("gold", "error_queue").replace("`", "")
    queue = spark.table(name) if spark.catalog.tableExists(name) else None
    total = queue.count() if queue is not None else 0
    if not total:
        return "the error queue is empty"
    # Bounded, and without the records: metadata for the listing.
    rows = queue.select("source_database", "transaction_id", "commit_scn", "record_count", "plan_id", "error").orderBy(
        "commit_scn", "source_database", "transaction_id").limit(ERRORS_LISTED).collect()
    lines = [f"{total} transaction(s) in the error queue (re-execute: lakestreams errors execute TXN | --all)"]
    for r in rows:
        lines.append(f"  {r['source_database']}  {r['transaction_id']}  commit SCN {r['commit_scn']}  "
                     f"{r['record_count']} record(s)  plan {r['plan_id']}")
        lines.append(f"    {r['error']}")
    if total > len(rows):
        lines.append(f"  … and {total - len(rows)} more (gold view apply_error holds them all)")
    return "\n".join(lines)


def format_ddl_log(spark: SparkSession, channel: Channel, table: tuple[str, str] | None = None,
                   limit: int = ERRORS_LISTED) -> str:
    """The DDL log, newest commit SCN last (the last ``limit`` records; ``table``: only the
    records about that source table, or that truncated it): what each record was, its
    GoldenGate scope and outcome, the target's decision and why, the revision it made, the
    target statements and what the DDL step did to gold tables for that revision.
    Metadata: one line per DDL record."""
    name = channel.storage.table("silver", "ddl_log").replace("`", "")
    log = spark.table(name) if spark.catalog.tableExists(name) else None
    if log is not None and table is not None:
        owner, tname = table
        # A record names its object (an index's DDL names the index); the revisions it made
        # name the tables: a record is the table's when it names it, truncated it, or made
        # a revision of it (CREATE UNIQUE INDEX, DROP INDEX, …).
        revised = spark.table(channel.storage.table("silver", "dictionary").replace("`", "")).where(
            (F.col("owner") == F.lit(owner)) & (F.col("table_name") == F.lit(tname))).select(
            "source_database", "transaction_id", "revision_scn", "ddl_text", F.lit(True).alias("_revised"))
        log = log.join(revised, ["source_database", "transaction_id", "revision_scn", "ddl_text"], "left").where(
            ((F.col("object_owner") == F.lit(owner)) & (F.col("object_name") == F.lit(tname)))
            | ((F.col("truncates_owner") == F.lit(owner)) & (F.col("truncates_table") == F.lit(tname)))
            | F.col("_revised").isNotNull()).drop("_revised")
    total = log.count() if log is not None else 0
    if not total:
        return "the DDL log is empty" + (f" for {table[0]}.{table[1]}" if table else "")
    # What the DDL step did to gold tables to follow the revisions a record made: through
    # the dictionary rows the record made (its tables), by table and revision.
    applied = channel.storage.table("gold", DDL_APPLIED).replace("`", "")
    record = ["source_database", "transaction_id", "revision_scn", "ddl_text"]
    if spark.catalog.tableExists(applied):
        made = spark.table(channel.storage.table("silver", "dictionary").replace("`", "")).select(
            *record, "owner", "table_name")
        done = made.join(spark.table(applied), ["source_database", "owner", "table_name", "revision_scn"]).groupBy(
            *record).agg(F.sort_array(F.collect_list(
                F.concat(F.lit("gold "), F.col("gold_table"), F.lit(": "), F.col("done")))).alias("_done"))
        log = log.join(done, record, "left")
    else:
        log = log.withColumn("_done", F.lit(None).cast("array<string>"))
    order = ("commit_scn", "source_database", "transaction_id", "position")
    rows = log.orderBy(*[F.col(c).desc() for c in order]).limit(limit).collect()  # DDL records: metadata
    lines = [f"{total} DDL record(s)" + (f" for {table[0]}.{table[1]}" if table else "")
             + (f", the last {len(rows)}" if total > len(rows) else "")]
    for r in reversed(rows):
        made = f"  revision at SCN {r['revision_scn']}" if r["revision_scn"] is not None else ""
        gg = f"  {r['scope'] or '-'} {r['processing']}" if r["processing"] else ""
        lines.append(f"  {r['source_database']}  SCN {r['commit_scn']}  txn {r['transaction_id']}  "
                     f"{r['statement']}  {r['object_owner']}.{r['object_name']}  → {r['decision']}{gg}{made}")
        lines.append(f"    {r['ddl_text']}")
        lines.append(f"    {r['reason']}")
        lines.extend(f"    target: {t}" for t in (r["target_ddl"] or []))
        lines.extend(f"    done: {d}" for d in (r["_done"] or []))
    return "\n".join(lines)


def format_summary(
    audit: Audit, tables: list[GoldTableSummary], error_queue: int, discards: list[tuple[str, int]] = ()
) -> str:
    b = audit.buckets
    lines = [
        "lakestreams run summary",
        f"  records landed      {audit.landed:>9}",
        f"  quarantined         {audit.quarantined:>9}",
        f"  bronze              {audit.bronze:>9}",
        f"  duplicate           {b.get('duplicate', 0):>9}",
        f"  pending             {b.get('pending', 0):>9}",
        f"  applied             {b.get('applied', 0):>9}",
        f"  discarded (rules)   {b.get('discarded', 0):>9}",
        *(f"    {n:>7}  {reason}" for reason, n in discards),
        # Only with DML or error handlers: records a handler consumed.
        *([f"  handled (handlers)  {b['handled']:>9}"] if b.get("handled") else []),
        f"  below instantiation {b.get('below_instantiation', 0):>9}",
        f"  errors              {b.get('error', 0):>9}  ({error_queue} transactions in the error queue)",
        f"  DDL                 {b.get('ddl', 0):>9}",
        f"  commit/rollback     {b.get('control', 0):>9}",
        f"  rolled back         {b.get('rolled_back', 0):>9}",
        "  accounting          " + ("balanced" if audit.ok else "UNBALANCED: " + "; ".join(audit.problems)),
        "gold tables",
    ]
    for t in tables:
        scns = ", ".join(f"{s} @ {n}" for s, n in t.applied) or "nothing applied"
        lines.append(f"  {t.name:<24} {t.rows:>7} rows   applied SCN: {scns}")
    return "\n".join(lines)
