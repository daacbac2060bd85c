"""What a proposed channel file would do differently, over the bronze history, writing nothing.

Both channels' clients are evaluated over every released, non-duplicate record silver
has read; the per-rule, per-table outcomes (kept, discarded, row-migrated) are compared
and only the differences are returned.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestreams.config import Channel
from silver.rules import build_clients
from silver.run import classify, rule_outcomes

KEY = ("streams_type", "rule_name", "outcome", "migration", "source_database", "owner", "table_name")


def released_history(spark: SparkSession, channel: Channel) -> DataFrame:
    """Every record silver evaluated: of a complete transaction, not a duplicate, not late."""
    st = channel.storage
    ledger = spark.table(st.table("silver", "ledger").replace("`", "")).where("NOT is_duplicate")
    txns = spark.table(st.table("silver", "transactions").replace("`", "")).select(
        "source_database", "transaction_id", "status", "released_batch",
        F.col("commit_scn").alias("_txn_commit_scn"), F.col("commit_time").alias("_txn_commit_time"),
    )
    return (
        ledger.join(txns, ["source_database", "transaction_id"])
        # a record that landed after its transaction was released was never evaluated
        .where(F.col("silver_batch") <= F.col("released_batch"))
        .withColumn("commit_scn", F.coalesce("_txn_commit_scn", "commit_scn"))
        .withColumn("commit_time", F.coalesce("_txn_commit_time", "commit_time"))
    )


def _outcomes(history: DataFrame, channel: Channel) -> DataFrame:
    clients = build_clients(channel)
    return rule_outcomes(classify(history, clients), clients, 0).groupBy(*KEY).agg(F.sum("records").alias("n"))


def simulate(spark: SparkSession, current: Channel, proposed: Channel) -> list[dict]:
    """Rows (rule, table, outcome, migration) whose record counts differ, current vs proposed."""
    history = released_history(spark, current).persist()
    try:
        now = _outcomes(history, current).withColumnRenamed("n", "current")
        then = _outcomes(history, proposed).withColumnRenamed("n", "proposed")
        diff = now.alias("a").join(
            then.alias("b"), [F.col(f"a.{k}").eqNullSafe(F.col(f"b.{k}")) for k in KEY], "full"
        )
        out = diff.select(
            *[F.coalesce(F.col(f"a.{k}"), F.col(f"b.{k}")).alias(k) for k in KEY],
            F.coalesce(F.col("a.current"), F.lit(0)).alias("current"),
            F.coalesce(F.col("b.proposed"), F.lit(0)).alias("proposed"),
        ).where("current <> proposed")
        # One row per (rule, table, outcome): grows with rules and tables.
        rows = out.orderBy("owner", "table_name", "streams_type", "rule_name", "outcome").collect()
    finally:
        history.unpersist()
    return [r.asDict() for r in rows]


def format_simulation(rows: list[dict]) -> str:
    if not rows:
        return "the proposed rules keep, discard and migrate exactly what the current rules do"
    head = f"{'table':<28} {'client':<8} {'rule':<20} {'outcome':<10} {'migration':<18} {'current':>9} {'proposed':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        table = f"{r['source_database']}:{r['owner']}.{r['table_name']}"
        lines.append(
            f"{table:<28} {r['streams_type']:<8} {r['rule_name']:<20} {r['outcome']:<10} "
            f"{r['migration'] or '':<18} {r['current']:>9} {r['proposed']:>9}"
        )
    return "\n".join(lines)
