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
from silver.run import classify, released_records, rule_outcomes

KEY = ("streams_type", "rule_name", "outcome", "migration", "source_database", "owner", "table_name")


def released_history(spark: SparkSession, channel: Channel) -> DataFrame:
    """Every record silver evaluated: of a complete transaction, not a duplicate, not late."""
    st = channel.storage
    return released_records(
        spark.table(st.table("silver", "ledger").replace("`", "")),
        spark.table(st.table("silver", "transactions").replace("`", "")),
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
    head = ("table", "client", "rule", "outcome", "migration", "current", "proposed")
    body = [
        (f"{r['source_database']}:{r['owner']}.{r['table_name']}", r["streams_type"], r["rule_name"], r["outcome"],
         r["migration"] or "", str(r["current"]), str(r["proposed"]))
        for r in rows
    ]
    widths = [max(len(x[i]) for x in (head, *body)) for i in range(len(head))]

    def line(cells: tuple[str, ...]) -> str:
        left = [c.ljust(w) for c, w in zip(cells[:5], widths[:5], strict=True)]
        right = [c.rjust(w) for c, w in zip(cells[5:], widths[5:], strict=True)]
        return "  ".join(left + right)

    return "\n".join([line(head), "-" * len(line(head)), *(line(b) for b in body)])
