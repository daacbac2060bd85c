"""Instantiation from a snapshot: a table's rows as of an SCN replace its target.

A snapshot is a transaction of a ``snapshot`` landing folder: INSERT records of one or
more tables, all at the snapshot's commit SCN (a table that was empty is a TRUNCATE
record alone). Silver types and transforms its rows like any other change and records
each table's snapshot in ``silver.snapshots``. The latest snapshot of a source table
sets its instantiation SCN, so changes committed at or below it are discarded (counted)
and the snapshot's own transaction is the one applied at that SCN.

In the plan a snapshot opens with a TRUNCATE of each of its tables: the rows gold holds
from changes ordered before it go, changes ordered after it stay (a snapshot older than
changes already applied re-folds those keys from history, ``gold.late``), and then its
rows are inserted. Soft deletes, SCD2 versions and the TimeKey log follow the TRUNCATE
as they do for a source TRUNCATE.

A snapshot is also what a target waits for after a DDL record changed its rows without row
changes (a REFRESH the change history cannot make: ``silver.refreshes``,
``pending_refreshes``).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lakestreams.config import Channel
from lakestreams.delta_io import local_rows

#: The origin of an instantiation SCN no one set: the table's first CREATE TABLE record.
IMPLIED_ORIGIN = "CREATE TABLE record"
#: The change and the transaction of a stamp, as the plan's rows name them.
TXN = ["_source_database", "_transaction_id"]


def above_instantiation() -> Column:
    """A change is applied when it commits above its table's instantiation SCN, or it is
    the snapshot that instantiated the table at that SCN (rows joined with the plan's
    per-source ``instantiation_scn`` and ``snapshot_transaction``)."""
    scn, inst = F.col("_commit_scn"), F.col("instantiation_scn")
    return F.coalesce(
        (scn > inst) | ((scn == inst) & (F.col("_transaction_id") == F.col("snapshot_transaction"))), F.lit(False)
    )


def with_snapshot_truncates(rows: DataFrame, with_inst: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """Keyed changes (``_op``) with one TRUNCATE opening each instantiating snapshot
    transaction, in place of any TRUNCATE it holds (at most one per snapshot: a MERGE
    may not meet a row twice). ``with_inst`` adds the per-source instantiation SCN and
    snapshot transaction in force (``gold.plan.with_inst_literals``)."""
    snapshot = F.coalesce(F.col("_transaction_id") == F.col("snapshot_transaction"), F.lit(False))
    flagged = with_inst(rows).withColumn("_snapshot", snapshot).drop("instantiation_scn", "snapshot_transaction")
    first = Window.partitionBy(*TXN).orderBy("_position")
    types = dict(rows.dtypes)
    empty = {c: F.lit(None).cast(types[c]) for c in ("_old", "_new", "_okey", "_nkey", "_old_present", "_new_present")}
    opening = (
        flagged.where("_snapshot").withColumn("_n", F.row_number().over(first)).where("_n = 1").drop("_n")
        .withColumns({**empty, "_op": F.lit("T"), "_command_type": F.lit("TRUNCATE"), "_position": F.lit(0).cast("bigint"),
                      "_migrated_from": F.lit(None).cast("string")})
    )
    kept = flagged.where(~(F.col("_snapshot") & (F.col("_op") == "T")))
    return kept.unionByName(opening).drop("_snapshot")


def pending_refreshes(spark: SparkSession, channel: Channel, instantiation: DataFrame,
                      to_batch: int | None = None) -> DataFrame:
    """The source tables whose target waits for a snapshot: a DDL record at SCN ``since_scn``
    changed their rows without row changes (``silver.refreshes``: a partition truncated or
    exchanged, a source default filling the existing rows, a table renamed into the
    channel), and nothing has made the target whole since. What does: an instantiation at
    or above that SCN that loaded the target (``instantiation``, as a plan used it: a
    snapshot, or an instantiation SCN an operator set; not the CREATE TABLE record's), a
    TRUNCATE TABLE or a CREATE TABLE again (the table is empty from there), a DROP TABLE.
    Only tables with a target count; ``to_batch``: what silver batches up to it recorded.
    One row per table (the earliest refresh not made, and why); metadata, grows with DDL."""
    st = channel.storage
    keys = ["source_database", "owner", "table_name"]
    out = "source_database STRING, owner STRING, table_name STRING, since_scn BIGINT, transaction_id STRING, reason STRING"
    name = st.table("silver", "refreshes").replace("`", "")
    if not spark.catalog.tableExists(name):  # written by a silver batch of this version
        return local_rows(spark, [], out)

    def upto(df: DataFrame, column: str) -> DataFrame:
        return df if to_batch is None else df.where(F.col(column) <= F.lit(to_batch))

    recorded = upto(spark.table(name), "silver_batch")
    # Most channels never record one: one small count (a number) instead of the joins below.
    if recorded.limit(1).count() == 0:
        return local_rows(spark, [], out)
    targets = spark.table(st.table("silver", "targets").replace("`", "")).select(
        "source_database", F.col("source_owner").alias("owner"), F.col("source_table").alias("table_name"))
    refreshes = recorded.join(targets, keys, "left_semi")
    log = upto(spark.table(st.table("silver", "ddl_log").replace("`", "")), "silver_batch")
    emptied = log.where(F.col("truncates_table").isNotNull()).select(
        "source_database", F.col("truncates_owner").alias("owner"), F.col("truncates_table").alias("table_name"),
        F.col("commit_scn").alias("_at"))
    dropped = upto(spark.table(st.table("silver", "dictionary").replace("`", "")), "silver_batch").where(
        "status = 'DROPPED'").select(*keys, F.col("revision_scn").alias("_at"))
    loaded = instantiation.where(F.col("origin") != F.lit(IMPLIED_ORIGIN)).select(
        *keys, F.col("instantiation_scn").alias("_at"))
    made_whole = loaded.unionByName(emptied).unionByName(dropped)
    open_ = refreshes.join(made_whole, keys, "left").groupBy(*keys, "scn", "transaction_id", "reason").agg(
        F.max("_at").alias("_whole")).where(F.coalesce(F.col("_whole") < F.col("scn"), F.lit(True)))
    first = Window.partitionBy(*keys).orderBy("scn", "transaction_id")
    return open_.withColumn("_n", F.row_number().over(first)).where("_n = 1").select(
        *keys, F.col("scn").alias("since_scn"), "transaction_id", "reason")
