"""Accounting: every landed line ends in exactly one bucket (DESIGN.md), and audit proves it.

landed = bronze + quarantined
bronze = duplicate + pending + control + rolled_back + ddl + discarded
         + handled + below_instantiation + applied + error

``control`` (COMMIT/ROLLBACK records) and ``rolled_back`` (records of rolled-back
transactions) are shown apart from rule discards so a discard always names its rule.
Each bucket is counted from the table that holds it, not by subtraction, so an
unaccounted record shows up as a broken identity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakestreams.config import Channel

BUCKETS = (
    "duplicate", "pending", "control", "rolled_back", "ddl", "discarded", "handled",
    "below_instantiation", "applied", "error",
)


@dataclass
class Audit:
    landed: int = 0
    bronze: int = 0
    quarantined: int = 0
    buckets: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


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
        for t in spark.catalog.listTables(channel.storage.schema_name("silver")):
            if t.name.startswith("chg__"):
                waiting += _table(spark, channel, "silver", t.name).where(F.col("_silver_batch") > applied_to).count()
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
