"""Error handlers in the apply plan: a conflict no update conflict handler resolved (other
values), an UPDATE or DELETE that finds no row, or a key already taken goes to the error
handler of its table and operation before it fails its transaction.

The plan judges changes in rounds (``gold.plan.run_plan``). In each round, the first
failures whose table and operation have an error handler are handed to it as the
changes they are about, with the error in ``_error``; for an incarnation that finds no
row, that is its first change, the others only follow it. What the handler returns
replaces the change in the target's changes and is judged again in the next round; what
it leaves out is consumed; what it returns with ``_error`` fails its transaction with
that error. A handler is asked once per change: a change it returned that fails again
fails its transaction.

Applied history must stay what was applied: the handlers' outputs are kept per target in
``silver.handled__<model>`` (with the plan id), and a re-fold of late keys reads the
history with them in place of the changes they replaced.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lakestreams.config import Channel, DmlHandlerSpec
from silver.changes import (
    Defaults,
    change_table_name,
    defaults_from_rows,
    fill_defaults,
    table_defaults,
)
from silver.dictionary import TableDef
from silver.handlers import IDENTITY, run_handler
from silver.run import load_revision_defaults


def handled_table_name(model: str) -> str:
    return f"handled__{model}"


def failing_changes(failures: DataFrame, judged: DataFrame, changes: DataFrame) -> DataFrame:
    """The changes ``failures`` (a target's first failures of a round) are about, with the
    failure's error in ``_error`` and where it is (``_seq``, ``_root``, ``_missing``): a
    failure of a new change, and for an incarnation without a row its first change."""
    first = Window.partitionBy("_root").orderBy("_seq")
    at = failures.where(~F.col("_missing")).unionByName(
        failures.where("_missing").withColumn("_n", F.row_number().over(first)).where("_n = 1").drop("_n"))
    where = at.select("_seq", "_root", "_missing", F.col("_error").alias("_failure")).dropDuplicates(["_seq"])
    ids = judged.where(~F.col("_decided")).select("_seq", *IDENTITY[:3]).join(where, "_seq")
    return changes.join(ids, IDENTITY[:3]).withColumn("_error", F.col("_failure")).drop("_failure")


def handler_defaults(spark: SparkSession, channel: Channel, owner: str, name: str, table: TableDef,
                     sources: tuple[tuple[str, str, str], ...]) -> Defaults:
    """What an INSERT an error handler makes for target ``owner.name`` takes for a column
    it does not carry: the default silver gives a change of its source database at its
    SCN (the revision in force then, as silver registered it). A change table registered
    before silver kept defaults per revision gives those of the latest structure
    (``table``). Metadata: one registry row per source."""
    tables = {change_table_name(src, owner, name): src for src, _, _ in sources}
    kept = load_revision_defaults(spark, channel, sorted(tables))
    out: Defaults = []
    for cname, src in sorted(tables.items()):
        if cname in kept:
            out += defaults_from_rows(kept[cname], src)
        else:
            out += [(F.col("_source_database") == F.lit(src), d) for _, d in table_defaults(table)]
    return out


def handle_failures(
    specs: list[DmlHandlerSpec], table: TableDef, changes: DataFrame, failing: DataFrame, asked: DataFrame | None,
    defaults: Defaults,
) -> tuple[DataFrame, DataFrame | None]:
    """Run ``specs`` (error handlers of one target) over ``failing`` (``failing_changes``)
    but the changes they were asked about before (``asked``: identities). An INSERT a
    handler makes takes ``defaults`` (``handler_defaults``) for what it does not carry.
    Returns the target's changes with the handlers' outputs in place, the outputs
    (returned changes with ``_consumed`` false, consumed ones true, both with
    ``_handler``, ``_seq``, ``_root``, ``_missing``), or None when no handler had anything
    to do."""
    cols = changes.columns
    if asked is not None:
        failing = failing.join(asked, IDENTITY, "left_anti")
    outputs = []
    for s in specs:
        given = failing.where(F.col("_command_type") == s.operation)
        if given.limit(1).count() == 0:
            continue
        returned, consumed = run_handler(s, table, given.select(*cols))
        returned = fill_defaults(returned, defaults)
        where = given.select(*IDENTITY, "_seq", "_root", "_missing")
        outputs.append(returned.withColumn("_handler", F.lit(s.handler or "SQL")).withColumn("_consumed", F.lit(False))
                       .join(where, IDENTITY))
        outputs.append(consumed.withColumn("_consumed", F.lit(True)).join(where, IDENTITY))
    if not outputs:
        return changes, None
    out = reduce(DataFrame.unionByName, outputs).localCheckpoint()
    kept = changes.join(out.select(*IDENTITY), IDENTITY, "left_anti")
    return kept.unionByName(out.where(~F.col("_consumed")).select(*cols)).localCheckpoint(), out


def cleared_failures(rows: DataFrame, outputs: DataFrame) -> DataFrame:
    """First failures (one target's, ``_model``) an error handler took care of: the
    failure of each change it was given, and for an incarnation without a row the
    failures of its other changes, which only followed the first."""
    rest = rows.join(outputs.select("_seq"), "_seq", "left_anti")
    followers = rest.where("_missing").join(outputs.where("_missing").select("_root"), "_root", "left_semi")
    return rest.join(followers.select("_seq"), "_seq", "left_anti")


def raised_failures(outputs: DataFrame) -> DataFrame:
    """The transactions of changes an error handler returned with ``_error``."""
    return outputs.where(~F.col("_consumed") & F.col("_error").isNotNull()).select(
        "_source_database", "_transaction_id", "_error", F.lit(None).cast("string").alias("failing_record"), "_position")


def with_handled(spark: SparkSession, history: DataFrame, table: str) -> DataFrame:
    """Derived changes with what error handlers of earlier plans made of them in place
    (a consumed change is gone)."""
    name = table.replace("`", "")
    if not spark.catalog.tableExists(name):
        return history
    handled = spark.table(name)
    kept = history.join(handled.select(*IDENTITY), IDENTITY, "left_anti")
    return kept.unionByName(handled.where(~F.col("_consumed")).select(*history.columns))
