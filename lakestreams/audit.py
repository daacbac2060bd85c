"""Accounting: every landed line ends in exactly one bucket (DESIGN.md), and audit proves it.

landed = bronze + quarantined
bronze = duplicate + pending + control + rolled_back + ddl + discarded
         + handled + below_instantiation + applied + error

``control`` (COMMIT/ROLLBACK records) and ``rolled_back`` (records of rolled-back
transactions) are shown apart from rule discards so a discard always names its rule.
Each bucket is counted from the table that holds it, not by subtraction, so an
unaccounted record shows up as a broken identity.

Per run: a recorded audit (``silver.audit_runs``, written after each ``lakestreams run``
and by ``lakestreams audit --record``) keeps the overall counts and the last ingestion time
they cover. What came since is counted on its own, from the bronze and quarantine rows
ingested after that time and the lines of their files:

since.landed = since.bronze + since.quarantined
last.bronze + since.bronze = bronze
sum over buckets of (bucket - last.bucket) = since.bronze

A record that moved from one bucket to another (pending to applied) adds nothing to the
last sum; a record lost between two audits breaks it. A run killed before its audit was
recorded leaves its records to the next run's window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakestreams.config import Channel
from lakestreams.delta_io import create_missing_tables, table_names
from silver.run import ddl_made_changes

BUCKETS = (
    "duplicate", "pending", "control", "rolled_back", "ddl", "discarded", "handled",
    "below_instantiation", "applied", "error",
)
AUDIT_RUNS = "audit_runs"
AUDIT_RUNS_DDL = (
    "at TIMESTAMP, ingested_to TIMESTAMP, landed BIGINT, bronze BIGINT, quarantined BIGINT, "
    "buckets MAP<STRING, BIGINT>, balanced BOOLEAN"
)


@dataclass
class _Counts:
    landed: int = 0
    bronze: int = 0
    quarantined: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class Audit(_Counts):
    buckets: dict[str, int] = field(default_factory=dict)


def _table(spark: SparkSession, channel: Channel, layer: str, name: str):
    q = channel.storage.table(layer, name).replace("`", "")
    return spark.table(q) if spark.catalog.tableExists(q) else None


def run_audit(spark: SparkSession, channel: Channel) -> Audit:
    """Count every bucket and check the identities."""
    a = Audit(buckets=dict.fromkeys(BUCKETS, 0))
    bronze = _table(spark, channel, "bronze", "change_records")
    quarantine = _table(spark, channel, "bronze", "quarantine")
    if bronze is None:
        return a
    a.bronze = bronze.count()
    a.quarantined = quarantine.count() if quarantine is not None else 0
    # Metadata only: one row per landing file, one per plan, one per bucket.
    files = [r[0] for r in bronze.select("_source_file").union(quarantine.select("_source_file")).distinct().collect()]
    a.landed = spark.read.text(files).count() if files else 0
    if a.landed != a.bronze + a.quarantined:
        a.problems.append(f"landed {a.landed} != bronze {a.bronze} + quarantined {a.quarantined}")
    ledger = _table(spark, channel, "silver", "ledger")
    if ledger is None:
        a.buckets["pending"] = a.bronze
    else:
        not_read = a.bronze - ledger.count()
        a.buckets["duplicate"] = ledger.where("is_duplicate").count()
        txns = _table(spark, channel, "silver", "transactions")
        unreleased = ledger.where("NOT is_duplicate").join(
            txns.select("source_database", "transaction_id"), ["source_database", "transaction_id"], "left_anti"
        ).count()
        gold_runs = _table(spark, channel, "silver", "gold_runs")
        applied_plans = gold_runs.where("state = 'applied'") if gold_runs is not None else None
        applied_to = int(applied_plans.agg(F.max("silver_to")).first()[0] or 0) if applied_plans is not None else 0
        plan_ids = [r[0] for r in applied_plans.select("plan_id").collect()] if applied_plans is not None else []
        waiting = 0
        # A TRUNCATE change a DDL record made is that record (counted as DDL).
        from_ddl = ddl_made_changes(spark, channel)
        for name in sorted(table_names(spark, channel.storage, "silver")):
            if name.startswith("chg__"):
                waiting += _table(spark, channel, "silver", name).where(F.col("_silver_batch") > applied_to).join(
                    from_ddl, ["_source_database", "_transaction_id", "_position"], "left_anti").count()
        errs = _table(spark, channel, "silver", "txn_errors")
        if errs is not None:
            waiting += errs.where(F.col("silver_batch") > applied_to).count()
        a.buckets["pending"] = not_read + unreleased + waiting
        outcomes = _table(spark, channel, "silver", "outcomes")
        silver_part = outcomes.where("stage = 'silver'")
        plan_part = outcomes.where(F.col("stage") == "plan").where(F.col("batch").isin(plan_ids) if plan_ids else F.lit(False))
        for row in silver_part.unionByName(plan_part).groupBy("bucket").agg(F.sum("records")).collect():
            a.buckets[row[0]] = a.buckets.get(row[0], 0) + int(row[1])
    total = sum(a.buckets.values())
    if total != a.bronze:
        parts = " + ".join(f"{k} {v}" for k, v in a.buckets.items())
        a.problems.append(f"bronze {a.bronze} != {parts} = {total}")
    return a


@dataclass
class RunAudit(_Counts):
    """What came since the last recorded audit (``since``: the ingestion time it covered;
    None: nothing was recorded, so everything is new). ``ingested_to``: the newest
    ingestion time now covered; ``changed``: whether the overall counts differ from the
    last record (what ``record_audit`` writes)."""

    since: datetime | None = None
    moved: dict[str, int] = field(default_factory=dict)
    ingested_to: datetime | None = None
    changed: bool = False


def _last_recorded(spark: SparkSession, channel: Channel):
    runs = _table(spark, channel, "silver", AUDIT_RUNS)
    # One row: the newest recorded audit (metadata).
    return None if runs is None else runs.orderBy(F.desc("at")).first()


def audit_since_last(spark: SparkSession, channel: Channel, overall: Audit) -> RunAudit:
    """Check the identities of what came since the last recorded audit (module docstring)."""
    last = _last_recorded(spark, channel)
    r = RunAudit(since=last["ingested_to"] if last is not None else None)
    r.ingested_to = r.since
    bronze = _table(spark, channel, "bronze", "change_records")
    quarantine = _table(spark, channel, "bronze", "quarantine")
    if bronze is None or quarantine is None:  # bronze makes both at once: nothing landed yet
        return r
    new = F.col("_ingested_at") > F.lit(r.since) if r.since is not None else F.lit(True)

    def per_file(df, kind: str):
        return df.where(new).groupBy("_source_file").agg(
            F.lit(kind).alias("kind"), F.count(F.lit(1)).alias("n"), F.max("_ingested_at").alias("at"))

    # Metadata only: one row per landing file and table (a file can feed both).
    files = per_file(bronze, "bronze").unionByName(per_file(quarantine, "quarantine")).collect()
    r.bronze = sum(f["n"] for f in files if f["kind"] == "bronze")
    r.quarantined = sum(f["n"] for f in files if f["kind"] == "quarantine")
    paths = sorted({f["_source_file"] for f in files})
    r.landed = spark.read.text(paths).count() if paths else 0
    r.ingested_to = max((f["at"] for f in files), default=r.since)
    before = {k: int(v) for k, v in last["buckets"].items()} if last is not None else {}
    r.moved = {b: overall.buckets.get(b, 0) - before.get(b, 0) for b in BUCKETS}
    r.changed = last is None or (int(last["landed"]), int(last["bronze"]), int(last["quarantined"])) != (
        overall.landed, overall.bronze, overall.quarantined) or any(r.moved.values())
    if r.landed != r.bronze + r.quarantined:
        r.problems.append(f"since the last audit: landed {r.landed} != bronze {r.bronze} + quarantined {r.quarantined}")
    last_bronze = int(last["bronze"]) if last is not None else 0
    if last_bronze + r.bronze != overall.bronze:
        r.problems.append(f"bronze {overall.bronze} != {last_bronze} at the last audit + {r.bronze} since")
    if sum(r.moved.values()) != r.bronze:
        moves = ", ".join(f"{b} {n:+d}" for b, n in r.moved.items() if n)
        r.problems.append(f"bucket changes since the last audit ({moves or 'none'}) add up to "
                          f"{sum(r.moved.values())}, not the {r.bronze} records bronze took in")
    return r


def record_audit(spark: SparkSession, channel: Channel, overall: Audit, since: RunAudit) -> bool:
    """Keep the overall counts (``since``: ``audit_since_last`` of them) as the next run's
    starting point. Nothing is written when they did not change since the last record (an
    idle run writes no table version)."""
    if not since.changed or _table(spark, channel, "bronze", "change_records") is None:
        return False
    create_missing_tables(spark, channel.storage, "silver", ((AUDIT_RUNS, AUDIT_RUNS_DDL),))
    buckets = {b: int(overall.buckets.get(b, 0)) for b in BUCKETS}
    row = spark.createDataFrame(
        [(since.ingested_to, overall.landed, overall.bronze, overall.quarantined, buckets, overall.ok)],
        "ingested_to TIMESTAMP, landed BIGINT, bronze BIGINT, quarantined BIGINT, buckets MAP<STRING, BIGINT>, "
        "balanced BOOLEAN",
    ).select(F.current_timestamp().alias("at"), "*")
    row.write.format("delta").mode("append").saveAsTable(channel.storage.table("silver", AUDIT_RUNS).replace("`", ""))
    return True


def format_run_audit(r: RunAudit) -> str:
    since = f"ingested after {r.since:%Y-%m-%d %H:%M:%S}" if r.since is not None else "everything (no audit recorded yet)"
    moves = ", ".join(f"{b} {n:+d}" for b, n in r.moved.items() if n) or "none"
    return "\n".join([
        f"since the last recorded audit: {since}",
        f"  landed {r.landed} = bronze {r.bronze} + quarantined {r.quarantined}",
        f"  bucket changes: {moves}",
        "  accounting          " + ("balanced" if r.ok else "UNBALANCED: " + "; ".join(r.problems)),
    ])
