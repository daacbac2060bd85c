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
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

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
