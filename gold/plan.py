"""The apply plan: one decision for all tables before any gold table is written.

For the silver batches not applied yet, the plan
1. finds the transactions that cannot be applied (a record that did not convert, a
   table the dictionary does not know, no instantiation SCN) and sends each whole
   transaction to the error queue, so none of it reaches any gold table;
2. orders every target table's changes by commit time, source, commit SCN,
   transaction and position (``_seq``) and groups them into row incarnations
   (``_root``): an INSERT starts one, an UPDATE that changes the key carries it to the
   new key (chains k1→k2→k3 included), a DELETE ends it; a change that meets the wrong
   row state fails its transaction, unless the error handler of its table and
   operation resolves or consumes it (``gold.handled``);
3. writes one plan table per target with work. The dbt model of the target filters
   it by instantiation SCN and folds each incarnation into one MERGE.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial, reduce

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType
from pyspark.sql.window import Window

from gold.conflicts import at_keys, judge_values, policy_for, resolutions, value_conflicts
from gold.handled import (
    cleared_failures,
    failing_changes,
    handle_failures,
    handled_table_name,
    handler_defaults,
    raised_failures,
    with_handled,
)
from gold.late import (
    CONFLICT_ERRORS,
    TOMBSTONES_DDL,
    after_floors,
    ahead_of_holders,
    applied_history,
    contradictions,
    explained_failures,
    flag_refold,
    held_stamps,
    holders,
    late_keys,
    refold,
    tombstone_rows,
    truncate_floors,
)
from gold.snapshot import (
    IMPLIED_ORIGIN,
    above_instantiation,
    pending_refreshes,
    with_snapshot_truncates,
)
from lakestreams.config import Channel
from lakestreams.delta_io import (
    append,
    append_rows,
    create_missing_tables,
    local_rows,
    log_state,
    overwrite,
    table_names,
)
from lakestreams.errors import ApplyError
from lakestreams.faults import kill_point
from lakestreams.spark import release, settle_released
from lakestreams.timing import step
from silver.changes import target_model_name
from silver.dictionary import TableDef
from silver.handlers import IDENTITY
from silver.run import (
    ddl_made_changes,
    declared_tables,
    load_targets,
    open_from,
    refuse_during_rebuild,
)

GOLD_RUN_ROW = "plan_id BIGINT, silver_from BIGINT, silver_to BIGINT, state STRING"
GOLD_RUNS_DDL = GOLD_RUN_ROW + ", at TIMESTAMP"
INSTANTIATION_DDL = (
    "source_database STRING, owner STRING, table_name STRING, instantiation_scn BIGINT, origin STRING, "
    "ignore_scn BIGINT, snapshot_transaction STRING"
)
LEVEL_ORIGIN = {
    "TABLE": "set_table_instantiation_scn",
    "SCHEMA": "set_schema_instantiation_scn",
    "GLOBAL": "set_global_instantiation_scn",
}
ERROR_QUEUE_DDL = (
    "plan_id BIGINT, source_database STRING, transaction_id STRING, commit_scn BIGINT, error STRING, "
    "failing_record STRING, records ARRAY<STRING>, record_count BIGINT"
)
CONFLICTS_DDL = (
    "plan_id BIGINT, target STRING, source_database STRING, transaction_id STRING, commit_scn BIGINT, key STRING, "
    "method STRING, columns STRING, resolution STRING"
)
WATERMARKS_DDL = (
    "plan_id BIGINT, source_database STRING, low_watermark BIGINT, high_watermark BIGINT, "
    "oldest_pending_scn BIGINT, at TIMESTAMP"
)
#: The compare reports (``gold.compare``).
COMPARE_TABLE = "apply_compare"
#: lakestreams' own gold tables (the others are replicas).
GOLD_META_TABLES = ("error_queue", "apply_progress", "apply_conflicts", "apply_watermarks", "ddl_applied", COMPARE_TABLE)
#: Columns of a judged plan that the apply does not read.
JUDGING_COLUMNS = (
    "_old", "_old_present", "_above", "_first_op", "_found_here", "_start_key", "_no_row", "_cerr", "_derr",
    "_resolutions",
)
PROGRESS_DDL = (
    "plan_id BIGINT, target STRING, source_database STRING, applied_scn BIGINT, "
    "applied_commit_time TIMESTAMP, records BIGINT, applied_at TIMESTAMP"
)


@dataclass(frozen=True)
class TargetPlan:
    """Work for one gold target table."""

    model: str  # gold table / dbt model name, e.g. hr__regions
    owner: str
    table: str
    definition: TableDef
    plan_table: str
    sources: tuple[tuple[str, str, str], ...] = ()  # (source database, owner, table) feeding it
    truncates: bool = False  # the plan holds a TRUNCATE of it
    refolds: bool = False  # the plan re-folds keys of it (late changes)
    #: What the plan applies per source database: (source, highest commit SCN, latest commit
    #: time in epoch microseconds, records), one tuple per source (metadata, recorded once the apply is done).
    progress: tuple[tuple, ...] = ()
    #: Whether a change of the plan may move a row to another key (a key-changing UPDATE, a
    #: re-fold, changes an error handler returned). Without one, every row incarnation ends
    #: at the key it starts from, and the apply takes the values an UPDATE did not carry
    #: from the row its MERGE matches, instead of joining the replica once more.
    moves: bool = True
    #: Rows of its plan table (0: not counted). A plan of at most ``BROADCAST_PLAN_ROWS`` rows
    #: is broadcast to its apply's MERGE (``broadcasts``).
    rows: int = 0


@dataclass
class Plan:
    plan_id: int | None = None
    silver_from: int | None = None
    silver_to: int | None = None
    targets: list[TargetPlan] = field(default_factory=list)
    interpreted: bool = False  # whether it ran without generated code (``lakestreams.spark.interpreted``)
    #: The time its applied log row holds, as this process reads a TIMESTAMP back (local
    #: time): set by ``record_progress``.
    applied_at: datetime | None = None


def plan_table_name(model: str) -> str:
    return f"plan__{model}"


#: The history tables a target may have next to its replica (SCD2 versions; TimeKey log).
HISTORY_SUFFIXES = ("__history", "__changes")


def history_tables(model: str) -> tuple[str, ...]:
    return tuple(model + s for s in HISTORY_SUFFIXES)


def live_rows(spark: SparkSession, gold_table: str) -> DataFrame:
    """The rows a replica holds; with soft deletes, those not marked deleted."""
    df = spark.table(gold_table.replace("`", ""))
    return df.where(~F.col("_is_deleted")) if "_is_deleted" in df.columns else df


def create_gold_tables(spark: SparkSession, channel: Channel) -> None:
    st = channel.storage
    create_missing_tables(spark, st, "silver", (
        ("gold_runs", GOLD_RUNS_DDL), ("instantiation", INSTANTIATION_DDL), ("tombstones", TOMBSTONES_DDL)))
    create_missing_tables(spark, st, "gold", (
        ("error_queue", ERROR_QUEUE_DDL), ("apply_progress", PROGRESS_DDL), ("apply_conflicts", CONFLICTS_DDL),
        ("apply_watermarks", WATERMARKS_DDL), (DDL_APPLIED, DDL_APPLIED_DDL)))
    # The views over them, in the spirit of the DBA_APPLY_* views.
    create_instantiated_objects_view(spark, channel)
    create_error_view(spark, channel)
    create_progress_views(spark, channel)


INSTANTIATED_OBJECTS_VIEW = "apply_instantiated_objects"
#: What the DDL step did to each gold table (renames, drops, new, widened or rewritten
#: columns), by the source table's revision it made the gold table follow.
DDL_APPLIED = "ddl_applied"
DDL_APPLIED_DDL = (
    "gold_table STRING, source_database STRING, owner STRING, table_name STRING, revision_scn BIGINT, "
    "done STRING, applied_at TIMESTAMP"
)


def create_instantiated_objects_view(spark: SparkSession, channel: Channel) -> None:
    """``<schema>_gold.apply_instantiated_objects``, in the spirit of DBA_APPLY_INSTANTIATED_OBJECTS:
    the instantiation and ignore SCN in force per source table, and what set it."""
    st = channel.storage
    # Constant text; the two names are quoted by Storage.table from checked identifiers.
    spark.sql(
        f"CREATE OR REPLACE VIEW {st.table('gold', INSTANTIATED_OBJECTS_VIEW)} AS "
        "SELECT source_database, owner AS source_object_owner, table_name AS source_object_name, "
        "'TABLE' AS source_object_type, instantiation_scn, ignore_scn, origin AS set_by "
        f"FROM {st.table('silver', 'instantiation')}"
    )


ERROR_VIEW = "apply_error"


def create_error_view(spark: SparkSession, channel: Channel) -> None:
    """``<schema>_gold.apply_error``, in the spirit of DBA_APPLY_ERROR: one row per
    transaction in the error queue, with its error and how many records it holds."""
    st = channel.storage
    # Constant text; the two names are quoted by Storage.table from checked identifiers.
    spark.sql(
        f"CREATE OR REPLACE VIEW {st.table('gold', ERROR_VIEW)} AS "
        "SELECT source_database, transaction_id AS source_transaction_id, commit_scn AS source_commit_scn, "
        "error AS error_message, failing_record, record_count AS message_count, plan_id AS error_plan_id "
        f"FROM {st.table('gold', 'error_queue')}"
    )


PROGRESS_VIEW, CONSISTENCY_VIEW = "apply_progress_by_table", "apply_consistency"


def create_progress_views(spark: SparkSession, channel: Channel) -> None:
    """``apply_consistency``: per source, the SCN up to which every gold table holds every
    change (the low watermark after the last applied plan), for readers who join tables.
    ``apply_progress_by_table``: per gold table and source, the low watermark (everything
    committed at or below it is applied or decided), the high watermark (nothing above it
    is applied) and the oldest SCN of work still pending."""
    st = channel.storage
    # Constant text; the names are quoted by Storage.table from checked identifiers.
    latest = (
        f"SELECT * FROM (SELECT w.*, row_number() OVER (PARTITION BY source_database ORDER BY plan_id DESC) AS n "
        f"FROM {st.table('gold', 'apply_watermarks')} w) WHERE n = 1"
    )
    spark.sql(
        f"CREATE OR REPLACE VIEW {st.table('gold', CONSISTENCY_VIEW)} AS "
        f"SELECT source_database, low_watermark AS consistent_scn, oldest_pending_scn, plan_id, at FROM ({latest})"
    )
    spark.sql(
        f"CREATE OR REPLACE VIEW {st.table('gold', PROGRESS_VIEW)} AS "
        "SELECT p.target, p.source_database, w.low_watermark, p.high_watermark, w.oldest_pending_scn, "
        "p.applied_commit_time, p.records AS applied_records "
        "FROM (SELECT target, source_database, max(applied_scn) AS high_watermark, "
        "max(applied_commit_time) AS applied_commit_time, sum(records) AS records "
        f"FROM {st.table('gold', 'apply_progress')} GROUP BY target, source_database) p "
        f"JOIN ({latest}) w ON w.source_database = p.source_database"
    )


def watermarks(spark: SparkSession, channel: Channel, plan: Plan) -> DataFrame:
    """Per source database after ``plan``: the low watermark (every transaction committed
    at or below it is applied or decided: discarded, rolled back, in the error queue), the
    high watermark (no change committed above it is applied) and the oldest SCN of pending
    work (released after the plan, or not complete yet: its first record's SCN). A table
    waiting for a snapshot since SCN s (``pending_refreshes``) holds the low watermark below s."""
    st = channel.storage
    keys = ["source_database", "transaction_id"]
    txns = spark.table(st.table("silver", "transactions").replace("`", ""))
    # One aggregate over the transactions gives what the plan decided and the oldest released
    # after it; one over the ledger joined with them, the oldest record whose transaction is
    # not released. Such records lie from the last silver batch's bound on (``open_from``):
    # the ledger's history before it is not read. A source is one of either.
    decided = F.col("released_batch") <= plan.silver_to
    per_txn = txns.groupBy("source_database").agg(
        F.max(F.when(decided, F.col("commit_scn"))).alias("_processed"),
        F.min(F.when(~decided, F.col("commit_scn"))).alias("_released"))
    ledger = spark.table(st.table("silver", "ledger").replace("`", "")).where(
        (F.col("silver_batch") >= open_from(spark, channel)) & ~F.col("is_duplicate"))
    per_source = ledger.join(txns.select(*keys, F.lit(True).alias("_released_txn")), keys, "left").groupBy(
        "source_database").agg(F.min(F.when(F.col("_released_txn").isNull(), F.col("scn"))).alias("_unreleased"))
    applied = spark.table(st.table("gold", "apply_progress").replace("`", "")).groupBy("source_database").agg(
        F.max("applied_scn").alias("high_watermark"))
    # The instantiation the plan applied (silver.instantiation), not snapshots landed since.
    refresh = pending_refreshes(spark, channel, spark.table(st.table("silver", "instantiation").replace("`", "")),
                                plan.silver_to).groupBy("source_database").agg(F.min("since_scn").alias("_refresh"))
    oldest = F.least("_released", "_unreleased")
    return (
        per_source.join(per_txn, "source_database", "full").join(applied, "source_database", "left")
        .join(refresh, "source_database", "left")
        .select(
            F.lit(plan.plan_id).cast("bigint").alias("plan_id"), "source_database",
            F.least("_processed", oldest - 1, F.col("_refresh") - 1).alias("low_watermark"), "high_watermark",
            oldest.alias("oldest_pending_scn"), F.current_timestamp().alias("at"),
        )
    )


def plan_written(spark: SparkSession, channel: Channel, plan_id: int) -> bool:
    """Whether plan ``plan_id`` was written whole: its outcomes (the plan's last write; a
    plan with records has some) are in ``silver.outcomes``. One row at most is read."""
    outcomes = spark.table(channel.storage.table("silver", "outcomes").replace("`", ""))
    return outcomes.where((F.col("stage") == "plan") & (F.col("batch") == plan_id)).limit(1).count() > 0


def unfinished_plan(spark: SparkSession, channel: Channel) -> tuple[int, int, int] | None:
    """A plan logged but not applied yet (plan id, silver range), if any."""
    return read_run_log(spark, channel).unfinished


@dataclass(frozen=True)
class RunLog:
    """What the gold run log says before a plan (``read_run_log``): the first plan logged
    but not applied (plan id, silver range), the applied row of the last applied plan, and
    the last silver batch a logged plan takes."""
    unfinished: tuple[int, int, int] | None
    last_applied: Row | None
    last_to: int


def read_run_log(spark: SparkSession, channel: Channel) -> RunLog:
    """The gold run log's state in one scan of it (a row per plan, folded to one row:
    metadata). Only ``open_plan`` (planned) and ``record_progress`` (applied) write the log,
    so a state read before a plan holds until that plan is opened."""
    runs = spark.table(channel.storage.table("silver", "gold_runs").replace("`", ""))
    applied_row = F.when(F.col("state") == "applied", F.struct(*runs.columns))
    per_plan = runs.groupBy("plan_id", "silver_from", "silver_to").agg(
        F.max(F.when(F.col("state") == "applied", 1).otherwise(0)).alias("applied"),
        F.max(applied_row).alias("row"))
    # A struct orders by its first field: the plan id.
    row = per_plan.agg(
        F.min(F.when(F.col("applied") == 0, F.struct("plan_id", "silver_from", "silver_to"))).alias("u"),
        F.max("row").alias("last"), F.max("silver_to").alias("to")).first()
    u = row["u"]
    return RunLog(None if u is None else (int(u["plan_id"]), int(u["silver_from"]), int(u["silver_to"])),
                  row["last"], int(row["to"] or 0))


def open_plan(spark: SparkSession, channel: Channel, log: RunLog | None = None,
              rebuild_clear: bool = False) -> tuple[int, int, int, bool] | None:
    """The plan to run (plan id, silver range, whether it is run again): an unfinished one
    again, else one over the new silver batches. ``log``: the run log as the caller read it
    (``read_run_log``), when no plan was opened since. ``rebuild_clear``: the caller, holding
    the channel's lock, found no rebuild or re-execution unfinished."""
    st = channel.storage
    if not rebuild_clear:
        refuse_during_rebuild(spark, channel, "the apply plan")
    log = log or read_run_log(spark, channel)
    if log.unfinished is not None:
        return (*log.unfinished, True)
    pending = pending_range(spark, channel, log.last_to)
    if pending is None:
        return None
    last_to, silver_done = pending[0] - 1, pending[1]
    log_state(
        spark, st.table("silver", "gold_runs"), (silver_done, last_to + 1, silver_done, "planned"),
        GOLD_RUN_ROW, "gold.runs.planned", silver_done,
    )
    kill_point("plan.opened")
    return silver_done, last_to + 1, silver_done, False


def pending_range(spark: SparkSession, channel: Channel, last_to: int) -> tuple[int, int] | None:
    """The silver batches no plan has taken yet (first, last), or None; ``last_to``: the
    last batch a logged plan takes (``RunLog.last_to``). One aggregate: metadata."""
    silver_done = int(
        spark.table(channel.storage.table("silver", "runs").replace("`", "")).where("state = 'done'").agg(
            F.max("silver_batch")).first()[0]
        or 0
    )
    return None if silver_done <= last_to else (last_to + 1, silver_done)


def _written_change_tables(spark: SparkSession, channel: Channel, lo: int, hi: int) -> set[str]:
    """The change tables silver wrote in batches ``lo`` to ``hi``: only they have work (the
    others, a channel of many quiet tables, cost nothing)."""
    # One row per change table reaches the driver: metadata, not change rows.
    return {r[0] for r in spark.table(channel.storage.table("silver", "targets").replace("`", "")).where(
        (F.col("silver_batch") >= lo) & (F.col("silver_batch") <= hi)).select("change_table").distinct().collect()}


def plan_records(spark: SparkSession, channel: Channel, lo: int, hi: int, limit: int) -> int:
    """How many records (not duplicates) silver batches ``lo`` to ``hi`` hold, counted up to
    ``limit + 1`` (one number, no rows)."""
    return spark.table(channel.storage.table("silver", "ledger").replace("`", "")).where(
        (F.col("silver_batch") >= lo) & (F.col("silver_batch") <= hi) & ~F.col("is_duplicate")
    ).limit(limit + 1).count()


def differs(a: DataFrame, b: DataFrame) -> bool:
    """Whether two frames of the same columns hold different rows (as multisets); one
    number reaches the driver. One aggregation over both, each read once: a row's copies
    in ``a`` count up, in ``b`` down, and any row whose count is not zero differs (two
    ``exceptAll`` would read and shuffle each side twice)."""
    side = "_differs_side"
    both = a.withColumn(side, F.lit(1)).unionByName(b.select(*a.columns).withColumn(side, F.lit(-1)))
    return both.groupBy(*a.columns).agg(F.sum(side).alias(side)).where(F.col(side) != 0).limit(1).count() > 0


def effective_instantiation(spark: SparkSession, channel: Channel) -> DataFrame:
    """Instantiation SCN per (source, table): the latest snapshot of the table (the act that
    loaded it), else the most specific setting (table, then schema, then global), else the
    SCN of the table's first CREATE TABLE record; never below the table's ignore SCN. One
    row per known table: metadata, not change data."""
    st = channel.storage
    keys = ["source_database", "owner", "table_name"]
    implied = (
        spark.table(st.table("silver", "dictionary").replace("`", ""))
        .groupBy(*keys)
        .agg(F.min("revision_scn").alias("_implied"))
    )
    latest = Window.partitionBy(*keys).orderBy(F.col("scn").desc(), F.col("silver_batch").desc())
    snapshots = (
        spark.table(st.table("silver", "snapshots").replace("`", ""))
        .withColumn("_n", F.row_number().over(latest)).where("_n = 1")
        .select(*keys, F.col("scn").alias("_snap"), F.col("transaction_id").alias("_snap_txn"))
    )
    tables = [i for i in channel.instantiation if i.level == "TABLE"]
    # Every table with a CREATE TABLE record or a snapshot, declared in the channel file or
    # named by a setting.
    named = list(declared_tables(channel)) + [(i.source_database, i.owner, i.table) for i in tables]
    # Each table once, with its implied SCN and its snapshot: one read of the dictionary and
    # of the snapshots (a union of their keys joined back with them read each twice).
    objects = implied.join(snapshots, keys, "full").join(
        local_rows(spark, named, "source_database STRING, owner STRING, table_name STRING").distinct(), keys, "full")
    by_table = local_rows(spark, [(i.source_database, i.owner, i.table, i.scn, i.ignore_scn) for i in tables],
                          "source_database STRING, owner STRING, table_name STRING, _t BIGINT, ignore_scn BIGINT")
    by_schema = local_rows(
        spark, [(i.source_database, i.owner, i.scn) for i in channel.instantiation if i.level == "SCHEMA"],
        "source_database STRING, owner STRING, _s BIGINT")
    by_source = local_rows(
        spark, [(i.source_database, i.scn) for i in channel.instantiation if i.level == "GLOBAL"],
        "source_database STRING, _g BIGINT")
    chosen = F.coalesce("_snap", "_t", "_s", "_g", "_implied")
    # greatest() skips NULLs: the ignore SCN is a floor (a set SCN below it was refused).
    scn = F.greatest(chosen, F.col("ignore_scn"))
    return (
        objects.join(by_table, keys, "left").join(by_schema, ["source_database", "owner"], "left")
        .join(by_source, "source_database", "left")
        .select(
            *keys,
            scn.alias("instantiation_scn"),
            F.when(F.col("_snap").isNotNull(), F.concat(F.lit("snapshot (transaction "), F.col("_snap_txn"), F.lit(")")))
            .when(F.col("_t").isNotNull(), LEVEL_ORIGIN["TABLE"])
            .when(F.col("_s").isNotNull(), LEVEL_ORIGIN["SCHEMA"])
            .when(F.col("_g").isNotNull(), LEVEL_ORIGIN["GLOBAL"])
            .when(F.col("_implied") >= F.coalesce("ignore_scn", F.lit(-1)), IMPLIED_ORIGIN)
            .when(F.col("ignore_scn").isNotNull(), "ignore SCN").alias("origin"),
            "ignore_scn",
            # The snapshot's own transaction is applied: it is the table's state at the SCN.
            F.when(scn == F.col("_snap"), F.col("_snap_txn")).alias("snapshot_transaction"),
        )
        .where("instantiation_scn IS NOT NULL")
    )


def _key_struct(image: str, keys: tuple[str, ...]) -> Column:
    return F.struct(*[F.col(f"{image}.`{k}`").alias(k) for k in keys])


def with_keys(changes: DataFrame, table: TableDef) -> DataFrame:
    """Each change's operation (``_op``: I, U, D), the key it leaves (``_okey``) and the key
    it holds after it (``_nkey``); an INSERT's old key is its new key, a DELETE's new key
    its old key."""
    keys = table.key_columns
    okey = _key_struct("_old", keys)
    # An UPDATE's new key falls back to the old key for key columns it does not change.
    nkey = F.struct(
        *[
            F.when(F.array_contains("_new_present", k), F.col(f"_new.`{k}`")).otherwise(F.col(f"_old.`{k}`")).alias(k)
            for k in keys
        ]
    )
    op = (
        F.when(F.col("_command_type") == "INSERT", "I").when(F.col("_command_type") == "DELETE", "D")
        .when(F.col("_command_type") == "TRUNCATE", "T").otherwise("U")
    )
    return (
        changes.withColumn("_op", op)
        .withColumn("_okey", F.when(F.col("_op") == "I", nkey).otherwise(okey))
        .withColumn("_nkey", F.when(F.col("_op") == "D", okey).otherwise(nkey))
    )


def assign_roots(changes: DataFrame, table: TableDef, moves: bool, max_rounds: int = 64) -> DataFrame:
    """Give each change (keyed by ``with_keys``) the id (``_root``) of the row incarnation it belongs to.

    Changes on one key form segments: a segment starts at an INSERT, at an UPDATE that
    moves a row onto the key, or at a change on a key that held no row. A segment that
    starts with a key move continues the incarnation of the segment the row came from;
    those links are followed by pointer jumping, so driver work grows with the length
    of key-move chains (log2), never with rows. ``moves``: whether any change moves a row
    to another key (without one, each segment is an incarnation of its own).
    """
    c = changes
    # Touch events: a change touches its old key (leaving or staying) and its new key.
    events = c.select(
        "_seq", "_op", F.col("_okey").alias("_k"), F.lit("from").alias("_role"), F.col("_okey").alias("_o"), F.col("_nkey").alias("_n")
    ).unionByName(
        c.where(~F.col("_okey").eqNullSafe(F.col("_nkey"))).select(
            "_seq", "_op", F.col("_nkey").alias("_k"), F.lit("to").alias("_role"), F.col("_okey").alias("_o"), F.col("_nkey").alias("_n")
        )
    )
    # After an event the key holds a row unless the change was a DELETE or moved the row away.
    events = events.withColumn(
        "_holds", (F.col("_op") != "D") & F.col("_n").eqNullSafe(F.col("_k"))
    ).withColumn(
        "_starts",
        (F.col("_op") == "I") | (F.col("_role") == "to"),
    )
    w = Window.partitionBy("_k").orderBy("_seq")
    events = events.withColumn("_prev_holds", F.lag("_holds").over(w)).withColumn(
        "_starts", F.col("_starts") | F.coalesce(~F.col("_prev_holds"), F.lit(True))
    )
    events = events.withColumn(
        "_segment", F.sum(F.col("_starts").cast("int")).over(w.rowsBetween(Window.unboundedPreceding, 0))
    ).withColumn("_segment_start", F.first("_seq").over(Window.partitionBy("_k", "_segment").orderBy("_seq")))
    # Every change belongs to the segment of its 'from' event (an INSERT's key is its new key).
    # An UPDATE/DELETE on a key this plan already emptied (moved away or deleted) has no row;
    # on a key the plan has not touched before (no previous event) it looks for gold's row.
    member = events.where("_role = 'from'").select(
        "_seq",
        F.col("_segment_start").alias("_node"),
        ((F.col("_op") != "I") & F.coalesce(~F.col("_prev_holds"), F.lit(False))).alias("_gap"),
    )
    # An INSERT, or a move onto a key, claims the key: taken if a row holds it already
    # (earlier in this plan; or in gold, when this is the plan's first event on the key).
    claims = events.where((F.col("_role") == "to") | ((F.col("_role") == "from") & (F.col("_op") == "I"))).select(
        "_seq",
        F.coalesce(F.col("_prev_holds"), F.lit(False)).alias("_taken"),
        F.col("_prev_holds").isNull().alias("_claim_first"),
    )
    if not moves:
        # No key moves: every segment is an incarnation of its own; nothing to follow.
        roots = member.select("_seq", "_gap", F.col("_node").cast("string").alias("_root"))
        return c.join(roots, "_seq").join(claims, "_seq", "left")
    # A move starts a segment on the new key whose parent is the segment on the old key.
    link = events.where("_role = 'to'").select(F.col("_segment_start").alias("_node_to"), "_seq").join(
        member.select("_seq", F.col("_node").alias("_parent")), "_seq"
    )
    nodes = member.select("_node").distinct().join(
        link.select(F.col("_node_to").alias("_node"), "_parent"), "_node", "left"
    )
    nodes = nodes.withColumn("_parent", F.coalesce("_parent", "_node")).localCheckpoint()
    for _ in range(max_rounds):
        hop = nodes.alias("a").join(
            nodes.select(F.col("_node").alias("_p"), F.col("_parent").alias("_pp")),
            F.col("a._parent") == F.col("_p"),
            "left",
        )
        changed = hop.where(F.col("_pp").isNotNull() & (F.col("_pp") != F.col("a._parent"))).limit(1).count()
        hopped = hop.select("_node", F.coalesce("_pp", "a._parent").alias("_parent")).localCheckpoint()
        release(nodes)  # the hop before: read by the checkpoint just made, by nothing after
        nodes = hopped
        if not changed:
            break
    roots = member.join(nodes, "_node").select("_seq", "_gap", F.col("_parent").cast("string").alias("_root"))
    return c.join(roots, "_seq").join(claims, "_seq", "left")


def is_move() -> Column:
    """A change (keyed by ``with_keys``) that moves a row to another key."""
    return (F.col("_op") == "U") & ~F.col("_okey").eqNullSafe(F.col("_nkey"))


def build_target_plan(changes: DataFrame, table: TableDef, moves: bool | None = None) -> DataFrame:
    """Ordered, rooted changes of one target (keyed by ``with_keys``, flagged by
    ``gold.late``): the rows its dbt model reads. ``moves``: whether any change moves a
    row to another key, when the caller knows (``run_plan`` finds it for all targets in
    one job); else a job finds out."""
    if moves is None:
        # Looked for before the changes are numbered: the filter stops at the first move,
        # where after the numbering (one window over all the changes) it sorts them all.
        with step("plan.roots.moves"):
            moves = changes.where(is_move()).limit(1).count() > 0
    # One source is ordered by SCN; sources are interleaved by commit time. A source's
    # commit time is made monotone in SCN order (running maximum), so a clock step back
    # at the source can never reorder its own transactions.
    by_scn = Window.partitionBy("_source_database").orderBy("_commit_scn", "_transaction_id").rowsBetween(
        Window.unboundedPreceding, 0
    )
    order = ["_order_time", "_source_database", "_commit_scn", "_transaction_id", "_position"]
    seq = changes.withColumn("_order_time", F.max("_commit_time").over(by_scn)).withColumn(
        "_seq", F.row_number().over(Window.orderBy(*order)).cast("bigint")
    )
    return assign_roots(seq, table, moves=moves).select(
        "_seq", "_root", "_gap", "_taken", "_claim_first", "_op", "_okey", "_nkey", "_old", "_old_present", "_new",
        "_new_present",
        "_source_database", "_transaction_id", "_commit_scn", "_commit_time", "_position",
        "_decided", "_refold_old", "_refold_new",
    )


MAX_CONFLICT_ROUNDS = 16
#: Targets planned at once (threads submitting Spark jobs to the one session).
PLAN_THREADS = 4
#: A target with at most this many new changes (and no applied history to re-fold) is
#: ordered and judged in one partition: its windows and joins on the changes then need no
#: exchange, and each exchange is a Spark job of its own under adaptive execution, which
#: costs a small plan more than its rows do. Larger targets keep the shuffle's parallelism.
#: ``LAKESTREAMS_ONE_PARTITION_CHANGES`` sets another limit (0: never).
ONE_PARTITION_CHANGES = 20_000


def one_partition_changes() -> int:
    """Up to how many new changes a target is planned in one partition (0: never)."""
    return int(os.environ.get("LAKESTREAMS_ONE_PARTITION_CHANGES", ONE_PARTITION_CHANGES))


#: Up to how many plan rows a target's apply broadcasts its net effect to the MERGE rather
#: than shuffling the replica to meet it, and its plan looks up the replica's rows by the
#: changes' keys (``gold.conflicts.judge_values``). Kept to what the driver holds easily.
#: ``LAKESTREAMS_BROADCAST_PLAN_ROWS`` sets another limit (0: never).
BROADCAST_PLAN_ROWS = 50_000


def broadcasts(n: int) -> bool:
    """Whether a target's plan of ``n`` changes (or plan rows) is broadcast: more than none,
    and at most ``BROADCAST_PLAN_ROWS`` or the limit the environment sets (0: never)."""
    return 0 < n <= int(os.environ.get("LAKESTREAMS_BROADCAST_PLAN_ROWS", BROADCAST_PLAN_ROWS))


#: What names a transaction in the plan's frames.
TXN_KEY = ("_source_database", "_transaction_id")


def failed_transactions(failed: DataFrame) -> DataFrame | None:
    """The (source database, transaction id) of ``failed`` (a checkpoint), or None when no
    transaction failed: the common case, whose changes then need no join with them (each
    such join is a broadcast, a Spark job, in every place a target's plan reads its changes)."""
    return None if failed.isEmpty() else failed.select(*TXN_KEY)


def without_failed(changes: DataFrame, bad: DataFrame | None) -> DataFrame:
    """``changes`` but those of the transactions ``bad`` (``failed_transactions``) names."""
    return changes if bad is None else changes.join(bad, list(TXN_KEY), "left_anti")


def with_failed_flag(changes: DataFrame, bad: DataFrame | None) -> DataFrame:
    """``changes`` with ``_failed``: true where ``bad`` names its transaction, else NULL."""
    if bad is None:
        return changes.withColumn("_failed", F.lit(None).cast("boolean"))
    return changes.join(bad.withColumn("_failed", F.lit(True)), list(TXN_KEY), "left")


def _first_error_per_transaction(failures: DataFrame) -> DataFrame:
    first = Window.partitionBy("_source_database", "_transaction_id").orderBy(
        F.col("failing_record").isNull(), F.col("_position").asc_nulls_last(), "_error"
    )
    return failures.withColumn("_n", F.row_number().over(first)).where("_n = 1").drop("_n")


def instantiation_rows(inst: DataFrame) -> dict:
    """(source, owner, table) → (instantiation SCN, snapshot transaction) for
    ``with_inst_literals``: one row per source table reaches the driver (metadata)."""
    return {(r["source_database"], r["owner"], r["table_name"]): (r["instantiation_scn"], r["snapshot_transaction"])
            for r in inst.select("source_database", "owner", "table_name", "instantiation_scn", "snapshot_transaction").collect()}


def with_inst_literals(rows: DataFrame, inst_rows: dict, sources: tuple[tuple[str, str, str], ...]) -> DataFrame:
    """``rows`` of a target with ``instantiation_scn`` and ``snapshot_transaction`` per
    source database (what ``above_instantiation`` reads), as literals from ``inst_rows``
    ((source, owner, table) → (SCN, snapshot transaction)) rather than a join."""
    scn, snap = F.lit(None).cast("bigint"), F.lit(None).cast("string")
    for src, owner, name in sources:
        if (src, owner, name) in inst_rows:
            at, txn = inst_rows[(src, owner, name)]
            mine = F.col("_source_database") == src
            scn = F.when(mine, F.lit(at).cast("bigint")).otherwise(scn)
            snap = F.when(mine, F.lit(txn).cast("string")).otherwise(snap)
    return rows.withColumns({"instantiation_scn": scn, "snapshot_transaction": snap})


def row_conflicts(
    spark: SparkSession, plan_rows: DataFrame, gold_table: str, table: TableDef, floors: DataFrame | None = None,
    moves: bool | None = None, few: bool = False,
) -> DataFrame:
    """Transactions whose changes meet the wrong row state, judged in plan order on a
    judged plan (``gold.conflicts.judge_values``):

    - an UPDATE/DELETE that finds no row (ORA-01403): the incarnation starts without an
      INSERT (above the instantiation SCN), and this plan already emptied the key or gold
      holds no row at it; every transaction of that incarnation fails;
    - an INSERT or key move onto a key a row already holds (ORA-00001).

    Each failure keeps where the change is (``FAILURE_WHERE``): a decided change (applied
    history) does not fail, the new changes it contradicts do (``gold.late``). ``moves``:
    False when no change of the plan moves a row to another key (gold is not read again).
    ``few``: the changes are few, and gold's keys are looked up by theirs (a broadcast).
    """
    above = plan_rows.where("_above")
    taken = above.where(F.col("_taken"))
    # The plan's first claim of a key meets the row gold holds there, if any; a re-folded
    # key's row is replaced, its history is in the plan. A row a TRUNCATE of this plan (or
    # before) removes is not there.
    claims = above.where(F.col("_claim_first") & ~F.col("_taken") & ~F.col("_refold_new"))
    # An INSERT's old key is the key it claims (``with_keys``): the judging looked up gold's
    # row there, after the same floors (``_found_here``).
    taken = taken.unionByName(claims.where((F.col("_op") == "I") & F.col("_found_here")))
    name = gold_table.replace("`", "")
    if moves is not False and spark.catalog.tableExists(name):
        # A key move claims its new key: looked up in gold.
        keys = after_floors(live_rows(spark, name), floors).select(
            F.struct(*[F.col(f"`{k}`") for k in table.key_columns]).alias("_gk"))
        moved = claims.where(F.col("_op") != "I")
        if few:
            keys = at_keys(keys, moved.select("_nkey"))
        taken = taken.unionByName(moved.join(keys, moved["_nkey"].eqNullSafe(keys["_gk"]), "left_semi"))
    verb = F.when(F.col("_first_op") == "D", F.lit("DELETE")).otherwise(F.lit("UPDATE"))
    missing = plan_rows.where("_no_row").select(
        "_source_database",
        "_transaction_id",
        F.concat(
            verb, F.lit(f" of {table.owner}.{table.name} finds no row with key "), F.to_json("_start_key"),
            F.lit(" (ORA-01403: no data found)"),
        ).alias("_error"),
        F.lit(None).cast("string").alias("failing_record"),
        *FAILURE_WHERE, F.lit(True).alias("_missing"),
    )
    duplicate = taken.select(
        "_source_database",
        "_transaction_id",
        F.concat(
            F.when(F.col("_op") == "I", F.lit("INSERT into")).otherwise(F.lit("UPDATE of")),
            F.lit(f" {table.owner}.{table.name} finds key "), F.to_json("_nkey"),
            F.lit(" taken by another row (ORA-00001: unique constraint violated)"),
        ).alias("_error"),
        F.lit(None).cast("string").alias("failing_record"),
        *FAILURE_WHERE, F.lit(False).alias("_missing"),
    )
    return missing.unionByName(duplicate)


#: Where a failing change is: what ``first_failures`` compares (with the target, ``_model``),
#: and its position in its transaction (the error queue's failing record).
FAILURE_WHERE = ("_seq", "_root", "_decided", "_okey", "_nkey", "_position")


def first_failures(found: DataFrame) -> DataFrame:
    """The failures no earlier failure can explain: a change is judged as if every change
    before it applied, so one that follows a failing change on the same row incarnation or
    key may only fail because of it. Those wait for the next round, which plans without
    the failed transactions (and so converges: each round fails the first ones). The
    changes of an incarnation that has no row (``_missing``) all fail at once."""
    # A place: a target's incarnation or key (``found`` holds every target's, ``_model``).
    where = F.array_distinct(F.array(
        F.concat(F.col("_model"), F.lit(" r:"), F.col("_root")), F.concat(F.col("_model"), F.lit(" k:"), F.col("_ko")),
        F.concat(F.col("_model"), F.lit(" k:"), F.col("_kn")),
    ))
    at = found.select("_model", "_seq", "_root", "_missing", F.explode(where).alias("_at")).distinct()
    # Per place: the first other failure, the first missing-row failure per incarnation,
    # and the first of another incarnation than the earliest one's (aggregates, no pairs).
    other = at.where(~F.col("_missing")).groupBy("_at").agg(F.min("_seq").alias("_other"))
    per_root = at.where("_missing").groupBy("_at", "_root").agg(F.min("_seq").alias("_rmin"))
    first = per_root.groupBy("_at").agg(F.min("_rmin").alias("_m1"), F.min_by("_root", "_rmin").alias("_r1"))
    second = per_root.join(first, "_at").where(F.col("_root") != F.col("_r1")).groupBy("_at").agg(
        F.min("_rmin").alias("_m2"))
    ranked = at.join(other, "_at", "left").join(first, "_at", "left").join(second, "_at", "left")
    missing_before = F.when(F.col("_missing") & (F.col("_root") == F.col("_r1")), F.col("_m2")).otherwise(F.col("_m1"))
    later = ranked.where(
        (F.col("_other") < F.col("_seq")) | F.coalesce(missing_before < F.col("_seq"), F.lit(False))
    ).select("_model", "_seq").distinct()
    return found.join(later, ["_model", "_seq"], "left_anti")


#: A failing transaction: what the error queue is built from. A failure silver found
#: carries its record; one found here carries the position of the failing change.
FAILURE = ("_source_database", "_transaction_id", "_error", "failing_record", "_position")


def _error_handlers(
    rows: DataFrame, targets: list[tuple], plans: dict[str, DataFrame], error_specs: dict[str, list],
    handled: dict[str, DataFrame], channel: Channel, defaults: dict[str, list],
) -> tuple[DataFrame, DataFrame, set[str]]:
    """A round's first failures (``rows``) after the error handlers had them
    (``gold.handled``). Puts the handlers' outputs into ``targets`` (the changes) and
    ``handled``; returns the failures left, the transactions a handler failed, and the
    targets to plan again. ``defaults``: per target, its handlers' INSERT defaults, read on
    first need."""
    raised, redo = [rows.select(*FAILURE).limit(0)], set()
    if not error_specs:
        return rows, raised[0], redo
    # Only target names reach the driver (one row per target with a failure: metadata).
    failing = {r[0] for r in rows.select("_model").distinct().collect()} & set(error_specs)
    for i, t in enumerate(targets):
        model = t[3]
        if model not in failing:
            continue
        mine = rows.where(F.col("_model") == model)
        asked = handled[model].select(*IDENTITY) if model in handled else None
        if model not in defaults:  # read once per plan, whatever the rounds
            defaults[model] = handler_defaults(rows.sparkSession, channel, t[0], t[1], t[2], t[5])
        changes, out = handle_failures(error_specs[model], t[2], t[4], failing_changes(mine, plans[model], t[4]), asked,
                                       defaults[model])
        if out is None:
            continue
        targets[i] = (*t[:4], changes, t[5])
        handled[model] = out if model not in handled else handled[model].unionByName(out).localCheckpoint()
        rows = rows.where(F.col("_model") != model).unionByName(cleared_failures(mine, out))
        raised.append(raised_failures(out))
        redo.add(model)
    return rows.localCheckpoint(), reduce(DataFrame.unionByName, raised), redo


def run_plan(spark: SparkSession, channel: Channel, opened: tuple[int, int, int, bool] | None = None,
             loaded: list[tuple] | None = None) -> Plan:
    """Build the apply plan for the silver batches not applied yet (if any). ``opened``:
    the plan ``open_plan`` opened, when the caller opened it; ``loaded``: silver's targets
    (``load_targets``), when the caller read them."""
    st = channel.storage
    create_gold_tables(spark, channel)
    if opened is None:
        opened = open_plan(spark, channel)
    if opened is None:
        return Plan()
    plan_id, lo, hi, resumed = opened
    plan = Plan(plan_id, lo, hi)
    inst = effective_instantiation(spark, channel)
    as_set = spark.table(st.table("silver", "instantiation").replace("`", ""))
    # Most plans find the instantiation as the last one wrote it: rewriting it would commit a
    # version that every reader of this plan (each dbt model) rebuilds a snapshot for. A plan
    # run again writes as it always did (keyed by its id: the first writing stays).
    if resumed or differs(inst, as_set):
        overwrite(inst, st.table("silver", "instantiation"), "gold.instantiation", plan_id)
    inst = spark.table(st.table("silver", "instantiation").replace("`", ""))
    in_range = (F.col("_silver_batch") >= lo) & (F.col("_silver_batch") <= hi)
    per_source: dict[tuple[str, str], list[tuple]] = {}
    earlier: dict[tuple[str, str], list[DataFrame]] = {}
    written = _written_change_tables(spark, channel, lo, hi)
    busy = [t for t in (load_targets(spark, channel) if loaded is None else loaded) if t[4] in written]

    def read_new(t: tuple) -> tuple[DataFrame, DataFrame]:
        full = spark.table(st.table("silver", t[4]).replace("`", ""))
        # The plan's changes of one change table, read from Delta once: the flags, the
        # failures, the judging and the outcomes below all read them (each Delta scan
        # costs the driver a file-filtering job of its own), as does every conflict round.
        return full, full.where(in_range).localCheckpoint()

    with ThreadPoolExecutor(max_workers=PLAN_THREADS) as pool:
        read = list(pool.map(read_new, busy))
    for (src, sowner, sname, tdef, _chg), (full, new) in zip(busy, read, strict=True):
        per_source.setdefault((tdef.owner, tdef.name), []).append((src, new, (src, sowner, sname), tdef))
        earlier.setdefault((tdef.owner, tdef.name), []).append(full.where(F.col("_silver_batch") < lo))
    # 1. Transactions that fail, decided once for all tables. Instantiation SCNs are set
    #    for source objects, whatever name a transformation gives the target.
    #    A change table holds one source table: its SCNs are literals (no join).
    inst_rows = instantiation_rows(inst)
    meta = ["_source_database", "_transaction_id", "_commit_scn", "_commit_time", "_error", "_command_type", "_position"]
    # ``_move``: the change moves a row to another key (what ``assign_roots`` links), under
    # the target's key (its first source's definition, as the plan roots them).
    all_changes = [with_inst_literals(with_keys(df, items[0][3]).select(
        *meta, F.lit(source[1]).alias("_owner"), F.lit(source[2]).alias("_table"),
        F.lit(target_model_name(*target)).alias("_model"), F.lit(target[0]).alias("owner"),
        F.lit(target[1]).alias("table_name"), is_move().alias("_move")), inst_rows, (source,))
        for target, items in per_source.items() for _, df, source, _ in items]
    txn_errors = spark.table(st.table("silver", "txn_errors").replace("`", "")).where(
        (F.col("silver_batch") >= lo) & (F.col("silver_batch") <= hi)
    ).select(F.col("source_database").alias("_source_database"), F.col("transaction_id").alias("_transaction_id"), F.col("error").alias("_error"), "failing_record",
              F.lit(None).cast("bigint").alias("_position"))
    failures, truncated_models, moving, with_inst = txn_errors, set(), set(), None
    earliest: dict[str, dict] = {}  # per target and source: its new changes' lowest (SCN, time)
    sizes: dict[str, int] = {}  # per target: its new changes without a silver error
    one_limit = one_partition_changes()
    if all_changes:
        with_inst = reduce(DataFrame.unionByName, all_changes)
        # Targets the plan truncates: a TRUNCATE above the instantiation SCN, or the rows of
        # the snapshot that instantiates them (which opens with one). Found for all targets
        # in one job; one row per such target reaches the driver.
        opens = (F.col("_command_type") == "TRUNCATE") | (F.col("_transaction_id") == F.col("snapshot_transaction"))
        # Targets where a change moves a row to another key: only their incarnations need
        # linking (``assign_roots``). A round plans a subset of the changes, so a target
        # without moves here has none in any round. Both found in the same job.
        # The same job finds each target's earliest new change per source, which tells
        # whether any of them can be late (``gold.late.ahead_of_holders``).
        with step("plan.truncates"):
            # One row per target and source database (metadata), not change rows.
            flags = with_inst.where(F.col("_error").isNull()).groupBy("_model", "_source_database").agg(
                F.max(opens & above_instantiation()).alias("_truncates"), F.max("_move").alias("_moves"),
                F.min("_commit_scn").alias("_scn"), F.min(F.unix_micros("_commit_time")).alias("_at"),
                F.count("*").alias("_changes"),
            ).collect()
            truncated_models = {r["_model"] for r in flags if r["_truncates"]}
            moving = {r["_model"] for r in flags if r["_moves"]}
            for r in flags:
                earliest.setdefault(r["_model"], {})[r["_source_database"]] = (r["_scn"], r["_at"])
                sizes[r["_model"]] = sizes.get(r["_model"], 0) + r["_changes"]
        row_errors = with_inst.select(
            "_source_database", "_transaction_id",
            F.coalesce(
                "_error",
                F.when(F.col("instantiation_scn").isNull(), F.concat(
                    F.lit("no instantiation SCN for "), F.col("_owner"), F.lit("."), F.col("_table"),
                    F.lit(" from "), F.col("_source_database"),
                    F.lit(" (set_table_instantiation_scn, a snapshot, or its CREATE TABLE record)"))),
            ).alias("_error"),
            F.lit(None).cast("string").alias("failing_record"), "_position",
        ).where("_error IS NOT NULL")
        failures = failures.unionByName(row_errors)
    failed = _first_error_per_transaction(failures).localCheckpoint()
    targets = []
    for (owner, name), items in sorted(per_source.items()):
        changes = reduce(DataFrame.unionByName, [df for _, df, _, _ in items])
        sources = tuple(source for _, _, source, _ in items)
        targets.append((owner, name, items[0][3], target_model_name(owner, name), changes, sources))
    # 2. Order and root each target without the failed transactions; a change that meets
    #    the wrong row state (no row: ORA-01403; key taken: ORA-00001) fails its transaction
    #    too. Excluding one can orphan later changes, so repeat until no new one fails.
    #    Only targets with a newly failed transaction are planned again: the plan (and so
    #    the conflicts) of the others cannot change.
    plans: dict[str, DataFrame] = {}
    conflicts: dict[str, DataFrame] = {}
    floors_of: dict[str, DataFrame | None] = {}  # per target: its TRUNCATE floors, which its conflicts read
    truncated: dict[str, DataFrame] = {}
    # Targets with tombstones, with a TRUNCATE applied before, and the latest stamp each
    # source left (one row per target and source: metadata).
    marks = held_stamps(spark, st.table("gold", "apply_progress"), st.table("silver", "tombstones")).collect()
    tombstoned = {r["target"] for r in marks if r["_tombstoned"]}
    floored = {r["target"] for r in marks if r["_floor"]}
    held: dict[str, dict] = {}
    for r in marks:
        held.setdefault(r["target"], {})[r["source_database"]] = (r["_scn"], r["_at"])
    # Targets whose new changes all order after every stamp their keys hold: none is late,
    # and their gold rows and tombstones are not read for it (the common, in-order case).
    ahead = ahead_of_holders(earliest, held)
    has_floor = {t[3]: t[3] in floored for t in targets}
    # Handlers and compared columns per target; a setting naming a column the target
    # lacks stops the plan here, before any write.
    policies = {t[3]: policy_for(channel, t[2]) for t in targets}
    dirty = {t[3] for t in targets}
    # Keys where a new change is late, and their applied history, once per target. Which
    # targets have late changes or TRUNCATEs is found for all targets in one job (a row
    # per target and late key: the keys stay in Spark, only target names reach the driver).
    applied = spark.table(st.table("silver", "outcomes").replace("`", "")).where(
        "stage = 'plan' AND bucket = 'applied'"
    ).select(F.col("source_database").alias("_source_database"), F.col("transaction_id").alias("_transaction_id"),
             "owner", "table_name")
    gold_tables = table_names(spark, st, "gold")
    stamped = []
    for _owner, _name, tdef, model, changes, sources in targets:
        if (model in gold_tables or has_floor[model] or model in tombstoned) and model not in ahead:
            # Row changes above the instantiation SCN; the SCNs are literals here, so the
            # one job over every target holds no join per target.
            new = with_inst_literals(with_keys(changes.where("_error IS NULL"), tdef), inst_rows, sources).where(
                above_instantiation() & (F.col("_op") != "T"))
            stamps = holders(spark, st.table("gold", model), st.table("silver", "tombstones"), model, tdef)
            stamped.append(late_keys(new, stamps).withColumn("_model", F.lit(model)))
    with step("plan.late"):
        seeds = reduce(DataFrame.unionByName, stamped).localCheckpoint() if stamped else None
        # Only target names reach the driver (one row per target with late keys).
        late_models = set() if seeds is None else {r[0] for r in seeds.select("_model").distinct().collect()}

    def late_work(t: tuple) -> tuple[str, DataFrame | None, DataFrame | None]:
        owner, name, tdef, model, _changes, _sources = t
        if model not in late_models:
            return model, None, None
        with step("plan.late.history"):
            derived = reduce(DataFrame.unionByName, earlier[(owner, name)])
            history = applied_history(
                with_keys(with_handled(spark, derived, st.table("silver", handled_table_name(model))), tdef),
                applied.where((F.col("owner") == owner) & (F.col("table_name") == name)).drop("owner", "table_name").distinct(),
            )
            keys, rows = refold(spark, seeds.where(F.col("_model") == model).select("_kj"), history)
            # Evaluated once: every conflict round's ordering and judging reads it.
            rows = rows.withColumn("_decided", F.lit(True)).localCheckpoint()
        return model, keys, rows

    with ThreadPoolExecutor(max_workers=PLAN_THREADS) as pool:
        late = {model: (keys, rows) for model, keys, rows in pool.map(late_work, targets)}
    # Error handlers per target (a failure of their table and operation goes to them first).
    error_specs = {t[3]: [h for h in channel.dml_handlers if h.error_handler and (h.owner, h.table) == (t[0], t[1])]
                   for t in targets}
    error_specs = {m: specs for m, specs in error_specs.items() if specs}
    handled: dict[str, DataFrame] = {}  # per target: what its error handlers returned and consumed
    handler_defaults_of: dict[str, list] = {}  # per target: what its error handlers' INSERTs take
    bad = failed_transactions(failed)
    for _ in range(MAX_CONFLICT_ROUNDS):
        def plan_target(t: tuple, bad: DataFrame | None = bad) -> tuple[str, DataFrame, DataFrame]:
            _owner, _name, tdef, model, changes, sources = t
            ok = with_keys(without_failed(changes, bad).where("_error IS NULL"), tdef)
            gold = st.table("gold", model)
            tinst = partial(with_inst_literals, inst_rows=inst_rows, sources=sources)

            ok = with_snapshot_truncates(ok.withColumn("_decided", F.lit(False)), tinst)
            # TRUNCATEs are not row changes: each is a floor no change ordered before it passes.
            truncates = None
            if model in truncated_models:
                truncates = tinst(ok.where(F.col("_op") == "T")).where(
                    above_instantiation()).drop("instantiation_scn", "snapshot_transaction").localCheckpoint()
            floors = None
            if truncates is not None or has_floor[model]:
                floors = truncate_floors(spark, st.table("silver", "tombstones"), model, truncates).localCheckpoint()
            ok = ok.where(F.col("_op") != "T")
            refold_keys, history = late[model]
            if history is not None:
                ok = ok.unionByName(history.select(*ok.columns))
            ok = after_floors(ok, floors)
            if history is None and 0 < one_limit and sizes.get(model, 0) <= one_limit:
                ok = ok.coalesce(1)
            with step("plan.order"):
                # The applied history a late change re-folds, and the changes an error
                # handler returned, may move rows: found out then.
                moves = None if model in handled or history is not None else model in moving
                planned = build_target_plan(flag_refold(ok, refold_keys), tdef, moves)
                # Evaluated once (a projection of a checkpoint): the round's conflicts and,
                # in the last round, the plan table, the conflict log and the tombstones
                # all read it, and no query plan per target stays alive on the driver.
                few = history is None and broadcasts(sizes.get(model, 0))
                judged = judge_values(spark, planned, tinst, gold, tdef, policies[model], floors, few)
            rows = row_conflicts(spark, judged, gold, tdef, floors, moves, few)
            others = value_conflicts(judged)
            if history is not None:
                # Applied history does not fail: the new changes it contradicts do.
                decided = rows.where("_decided").select("_okey", "_nkey", F.col("_error").alias("_derr")).unionByName(
                    judged.where(F.col("_derr").isNotNull()).select("_okey", "_nkey", "_derr"))
                others = others.unionByName(contradictions(judged, decided, tdef))
                rows = rows.where(~F.col("_decided"))
            found = rows.unionByName(others.withColumn("_missing", F.lit(False)))
            # Keys as text: every target's failures go into one table.
            found = found.select("_source_database", "_transaction_id", "_error", "failing_record", "_position", "_seq", "_root",
                                 "_missing", F.lit(model).alias("_model"), F.to_json("_okey").alias("_ko"),
                                 F.to_json("_nkey").alias("_kn"))
            return model, judged, found, truncates, floors

        # Targets are planned independently; their small Spark jobs wait mostly on
        # scheduling, so a few run at once.
        with ThreadPoolExecutor(max_workers=PLAN_THREADS) as pool:
            for model, judged, found, truncs, floors in pool.map(plan_target, [t for t in targets if t[3] in dirty]):
                # A target planned again: its last round's checkpoints (the judged plan, its
                # TRUNCATEs and floors, which its conflicts read) are read by nothing now.
                # Those of every round would otherwise stay in the driver's heap until its
                # garbage collector found them, and a cascade plans all targets many times.
                release(plans.get(model), truncated.get(model), floors_of.get(model))
                plans[model], conflicts[model], truncated[model], floors_of[model] = judged, found, truncs, floors
        if not conflicts:
            break
        found = without_failed(reduce(DataFrame.unionByName, conflicts.values()), bad).localCheckpoint()
        first = first_failures(found).localCheckpoint()
        rows, raised, redo = _error_handlers(first, targets, plans, error_specs, handled, channel, handler_defaults_of)
        new = rows.select(*FAILURE).unionByName(raised).localCheckpoint()
        # The round's failures are in ``new`` now (the handlers' outputs in ``handled``).
        release(found, first, rows)  # rows may be first itself: releasing twice is harmless
        failed_more = new.limit(1).count() > 0
        if not failed_more and not redo:
            release(new)
            break
        if failed_more:  # the failed set gains them: not empty, no need to ask again
            before = failed
            failed = _first_error_per_transaction(failed.unionByName(new)).localCheckpoint()
            release(before)
            bad = failed.select(*TXN_KEY)
        # Targets touched by a newly failed transaction; only their names reach the driver
        # (one row per target: metadata).
        touched = reduce(DataFrame.unionByName, [
            changes.select(F.lit(model).alias("_model"), "_source_database", "_transaction_id")
            for _o, _n, _t, model, changes, _s in targets
        ]).join(new.select("_source_database", "_transaction_id"), ["_source_database", "_transaction_id"], "left_semi")
        # Model names only (one row per target: metadata), not change rows.
        dirty = {r["_model"] for r in touched.select("_model").distinct().collect()} | redo
        release(new)
    else:
        raise ApplyError(
            f"plan {plan_id}: row conflicts still cascade after {MAX_CONFLICT_ROUNDS} rounds; nothing was applied"
        )
    # What the rounds released is dropped once the jobs that might still read it have ended.
    settle_released(spark)
    ledger = spark.table(st.table("silver", "ledger").replace("`", "")).where("NOT is_duplicate")
    txns = spark.table(st.table("silver", "transactions").replace("`", "")).where("status = 'COMMITTED'")
    entries = (
        failed.join(
            ledger.select(F.col("source_database").alias("_source_database"), F.col("transaction_id").alias("_transaction_id"), "position", "raw"),
            ["_source_database", "_transaction_id"],
        )
        .groupBy("_source_database", "_transaction_id", "_error", "failing_record", "_position")
        .agg(F.sort_array(F.collect_list(F.struct("position", "raw"))).alias("_recs"))
        .join(txns.select(F.col("source_database").alias("_source_database"), F.col("transaction_id").alias("_transaction_id"), "commit_scn"),
              ["_source_database", "_transaction_id"], "left")
        .select(
            F.lit(plan_id).cast("bigint").alias("plan_id"),
            F.col("_source_database").alias("source_database"),
            F.col("_transaction_id").alias("transaction_id"),
            "commit_scn",
            F.col("_error").alias("error"),
            # The failing change's record; a failure of the transaction as a whole (none
            # found here or in silver) names its first record.
            F.coalesce(
                "failing_record", F.get(F.filter("_recs", lambda r: r["position"] == F.col("_position")), 0)["raw"],
                F.element_at("_recs", 1)["raw"],
            ).alias("failing_record"),
            F.transform("_recs", lambda r: r["raw"]).alias("records"),
            F.size("_recs").cast("bigint").alias("record_count"),
        )
    )
    # A plan run again whose first run wrote it whole (its outcomes, its last write, are
    # there) may have MERGEd targets since: judged again, their changes meet their own
    # effect (a key taken, a row gone). What the first run wrote stands (every write is
    # keyed by the plan id); what it left unwritten (no failure, no conflict, no key
    # vacated: empty writes are skipped) stays unwritten.
    whole = resumed and plan_written(spark, channel, plan_id)
    with step("plan.error_queue"):
        # No failed transaction: the ledger is not read (and no empty version committed).
        if not whole and bad is not None:
            append(entries, st.table("gold", "error_queue"), "gold.error_queue", plan_id)
    # What error handlers returned and consumed, kept so re-folds read applied history as applied.
    for model, out in sorted(handled.items() if not whole else ()):
        with step("plan.handled"):
            append(out.drop("_seq", "_root", "_missing").withColumn("_plan_id", F.lit(plan_id).cast("bigint")),
                   st.table("silver", handled_table_name(model)), f"gold.handled.{model}", plan_id)
    # 3. Write each target's plan table; its dbt model applies it. Resolved update
    #    conflicts are logged with the method and what it decided.
    if targets and not whole:
        resolved = reduce(DataFrame.unionByName, [resolutions(plans[t[3]], plan_id, t[3]) for t in targets])
        with step("plan.conflicts"):
            append_rows(resolved, st.table("gold", "apply_conflicts"), "gold.apply_conflicts", plan_id)
        # Keys the plan's applied changes vacate: a late change there is re-folded.
        vacated = reduce(DataFrame.unionByName, [
            tombstone_rows(plans[t[3]], truncated.get(t[3]), plan_id, t[3]) for t in targets])
        with step("plan.tombstones"):
            append_rows(vacated, st.table("silver", "tombstones"), "gold.tombstones", plan_id)
    def write_target(t: tuple) -> tuple[bool, DataFrame]:
        _owner, _name, _tdef, model, _changes, sources = t
        ptable = st.table("silver", plan_table_name(model))
        with step("plan.target"):
            rows = plans[model].drop(*JUDGING_COLUMNS)
            # A TRUNCATE rides along as a row of its own (_op T, no incarnation) for the apply.
            truncs = truncated.get(model)
            if truncs is not None:
                rows = rows.unionByName(truncs.select(*[c for c in truncs.columns if c in rows.columns]),
                                        allowMissingColumns=True)
            overwrite(rows.withColumn("_plan_id", F.lit(plan_id).cast("bigint")), ptable, f"gold.plan.{model}", plan_id)
            kill_point("plan.target")
            truncates = truncs is not None and truncs.limit(1).count() > 0
        # Progress is counted from the plan table as written. A plan run again after a
        # kill between two gold MERGEs keeps its first writing (keyed by plan id), while
        # ``rows``, judged again against gold tables already merged, would count less: it
        # reads the table back. A new plan's id was never written, so ``rows`` (from
        # checkpoints) is what the table holds, and no new table version is loaded.
        # Per source: the plan's rows, and what it applies (above the instantiation SCN,
        # not decided before).
        new = above_instantiation() & ~F.col("_decided")
        as_written = spark.table(ptable.replace("`", "")) if resumed else rows
        counted = with_inst_literals(as_written, inst_rows, sources).groupBy(
            "_source_database").agg(
            F.count("*").alias("rows"), F.count_if(new).alias("records"),
            F.max(F.when(new, F.col("_commit_scn"))).alias("scn"),
            F.max(F.when(new, F.unix_micros("_commit_time"))).alias("at"),  # exact through the driver
        ).withColumn("_model", F.lit(model))
        return truncates, counted

    # Targets are written independently (a few at once, as they are planned), then counted
    # in one small job over all plan tables: a row per target and source reaches the driver.
    with ThreadPoolExecutor(max_workers=PLAN_THREADS) as pool:
        written = list(pool.map(write_target, targets))
    per_target: dict[str, list] = {}
    if written:
        with step("plan.counted"):
            for r in reduce(DataFrame.unionByName, [counted for _tr, counted in written]).collect():
                per_target.setdefault(r["_model"], []).append(r)
    for (owner, name, tdef, model, _changes, sources), (truncates, _counted) in zip(targets, written, strict=True):
        per_source = per_target.get(model, [])
        if not (truncates or sum(r["rows"] for r in per_source) > 0):
            continue
        progress = tuple((r["_source_database"], r["scn"], r["at"], r["records"]) for r in per_source if r["records"])
        refolds = late[model][0] is not None
        # A plan run again applies its first writing, which may hold what this run's judging
        # no longer finds (an error handler's changes): it counts as moving rows.
        moves = resumed or model in moving or model in handled or refolds
        plan.targets.append(TargetPlan(model, owner, name, tdef, plan_table_name(model), sources, truncates,
                                       refolds, progress, moves, sum(r["rows"] for r in per_source)))
    # Where each change went. All targets' changes with their instantiation SCNs are one
    # job (``with_inst``); a target whose error handlers returned or consumed changes is
    # counted from its changes as the handlers left them, with the SCNs as literals.
    inst_cols = ["_source_database", "_transaction_id", "_commit_scn", "_error", "owner", "table_name",
                 "instantiation_scn", "snapshot_transaction", "_position"]
    outcome_parts = []
    if with_inst is not None:
        outcome_parts.append(with_inst.where(~F.col("_model").isin(list(handled))).select(
            *inst_cols, F.lit(False).alias("_handled")))
    for owner, name, _tdef, model, changes, sources in targets:
        if model not in handled:
            continue
        # Changes an error handler consumed are no longer among the changes.
        mine = changes.withColumn("_handled", F.lit(False)).unionByName(
            handled[model].where("_consumed").withColumn("_error", F.lit(None).cast("string"))
            .select(*changes.columns).withColumn("_handled", F.lit(True)))
        mine = mine.select("_source_database", "_transaction_id", "_commit_scn", "_error", "_handled", "_position",
                           F.lit(owner).alias("owner"), F.lit(name).alias("table_name"))
        outcome_parts.append(with_inst_literals(mine, inst_rows, sources).select(*inst_cols, "_handled"))
    # A TRUNCATE change a DDL record made (TRUNCATE TABLE; a table created again) is that
    # record, which silver counted as DDL: it is not counted again. DDL-sized.
    from_ddl = ddl_made_changes(spark, channel)
    bucketed = [
        with_failed_flag(part.join(from_ddl, ["_source_database", "_transaction_id", "_position"], "left_anti"), bad).select(
            "_source_database", "_transaction_id", "owner", "table_name",
            F.when(F.col("_failed").isNotNull() | F.col("_error").isNotNull(), "error")
            .when(F.col("_handled"), "handled")
            .when(~above_instantiation(), "below_instantiation")
            .otherwise("applied").alias("bucket"),
        )
        for part in outcome_parts
    ]
    unroutable = spark.table(st.table("silver", "txn_errors").replace("`", "")).where(
        (F.col("silver_batch") >= lo) & (F.col("silver_batch") <= hi)
    ).select(F.col("source_database").alias("_source_database"), F.col("transaction_id").alias("_transaction_id"),
             F.lit(None).cast("string").alias("owner"), F.lit(None).cast("string").alias("table_name"), F.lit("error").alias("bucket"))
    bucketed.append(unroutable)
    outcomes = (
        reduce(DataFrame.unionByName, bucketed)
        .groupBy("_source_database", "_transaction_id", "owner", "table_name", "bucket")
        .count()
        .select(
            F.lit(plan_id).cast("bigint").alias("batch"), F.lit("plan").alias("stage"),
            F.col("_source_database").alias("source_database"), F.col("_transaction_id").alias("transaction_id"),
            "owner", "table_name", "bucket", F.lit(None).cast("string").alias("reason"), F.col("count").alias("records"),
        )
    )
    with step("plan.outcomes"):
        append(outcomes, st.table("silver", "outcomes"), "gold.outcomes", plan_id)
    kill_point("plan.written")
    return plan


def record_progress(spark: SparkSession, channel: Channel, plan: Plan) -> None:
    """Apply progress per target and source and the watermarks per source, then mark the
    plan applied. The progress rows were counted when the plan was written (``TargetPlan.
    progress``): one row per target and source, whatever the number of targets."""
    st = channel.storage
    rows = [(plan.plan_id, t.model, src, scn, at, n) for t in plan.targets for src, scn, at, n in t.progress]
    if rows:
        schema = "plan_id BIGINT, target STRING, source_database STRING, applied_scn BIGINT, at BIGINT, records BIGINT"
        progress = local_rows(spark, rows, schema).select(
            "plan_id", "target", "source_database", "applied_scn",
            F.timestamp_micros("at").alias("applied_commit_time"), "records", F.current_timestamp().alias("applied_at"))
        append(progress, st.table("gold", "apply_progress"), "gold.progress", plan.plan_id)
        kill_point("gold.progress")
    # The consistency marker: written once per plan, after every gold table of it.
    append(watermarks(spark, channel, plan), st.table("gold", "apply_watermarks"), "gold.watermarks", plan.plan_id)
    kill_point("gold.applied")
    # The time is taken here, so the run knows the row's mark (``pipeline.run_mark``) without
    # reading it back: ``applied_at`` is the value as this process reads the row (PySpark's
    # own conversion of a TIMESTAMP). A mark that differs from the row's only makes the next
    # run look for explained conflicts again.
    micros = time.time_ns() // 1000
    plan.applied_at = TimestampType().fromInternal(micros)
    log_state(
        spark, st.table("silver", "gold_runs"), (plan.plan_id, plan.silver_from, plan.silver_to, "applied"),
        GOLD_RUN_ROW, "gold.runs.applied", plan.plan_id, at_micros=micros,
    )


def _conflict_queue(spark: SparkSession, channel: Channel, before_plan: int | None = None) -> DataFrame:
    """Error queue entries that failed on a conflict (``CONFLICT_ERRORS``), of plans before
    ``before_plan`` when given."""
    queue = spark.table(channel.storage.table("gold", "error_queue").replace("`", ""))
    if before_plan is not None:
        queue = queue.where(F.col("plan_id") < before_plan)
    return queue.where(reduce(lambda a, b: a | b, [F.col("error").contains(e) for e in CONFLICT_ERRORS]))


def _derived_changes(spark: SparkSession, channel: Channel, models: set[str],
                     targets: list[tuple] | None = None) -> dict[str, list[tuple]]:
    """Per target of ``models``: (source, change table rows of every batch, target
    definition, change table name) for each of its change tables. ``targets``: what
    ``load_targets`` returns, when the caller has it."""
    st = channel.storage
    existing = table_names(spark, st, "silver")
    derived: dict[str, list[tuple]] = {}
    for src, sowner, sname, tdef, chg in load_targets(spark, channel) if targets is None else targets:
        model = target_model_name(tdef.owner, tdef.name)
        if model in models and chg in existing:
            derived.setdefault(model, []).append(
                ((src, sowner, sname), spark.table(st.table("silver", chg).replace("`", "")), tdef, chg))
    return derived


def explained_by_plan(spark: SparkSession, channel: Channel, plan: Plan) -> DataFrame | None:
    """Error transactions of earlier plans that failed on a conflict (no row, a taken key,
    other values) at a key where a change this plan applied comes first in commit order:
    they landed before a change they depend on, and are worth re-executing now (the frame
    may be empty). None when no conflict of an earlier plan waits in the error queue, or
    the plan has no targets: there is nothing to look at."""
    st = channel.storage
    queue = _conflict_queue(spark, channel, plan.plan_id)
    if not plan.targets or queue.limit(1).count() == 0:
        return None
    inst_rows = instantiation_rows(spark.table(st.table("silver", "instantiation").replace("`", "")))
    derived = _derived_changes(spark, channel, {t.model for t in plan.targets})
    pairs = []
    for t in plan.targets:
        # A target the plan did not touch keeps the plan table of an earlier plan.
        now = with_inst_literals(spark.table(st.table("silver", t.plan_table).replace("`", "")).where(
            F.col("_plan_id") == plan.plan_id), inst_rows, t.sources).where(above_instantiation() & ~F.col("_decided"))
        pairs.append((now, with_keys(reduce(DataFrame.unionByName, [d[1] for d in derived[t.model]]), t.definition)))
    return explained_failures(spark, queue, pairs)


def explained_by_pending(spark: SparkSession, channel: Channel, last_to: int) -> tuple[int, DataFrame] | None:
    """Error transactions that failed on a conflict at a key where a change waiting in
    silver (the batches no plan has taken yet) comes first in commit order. Re-executed
    before the next plan, they are planned and applied together with that change, in one
    plan, instead of in a plan of their own after it (``explained_by_plan``, which stays
    for what this look cannot see: the changes the plan's error handlers make). A
    waiting change whose own transaction fails after all costs only a re-execution: the
    transaction it seemed to explain fails again. Returns the last waiting batch with the
    transactions (the frame may be empty); None when no silver batch waits or no conflict
    waits in the error queue. The caller has found no plan unfinished, and the last batch a
    logged plan takes (``last_to``, from ``read_run_log``)."""
    queue = _conflict_queue(spark, channel)
    if queue.limit(1).count() == 0:
        return None
    pending = pending_range(spark, channel, last_to)
    if pending is None:
        return None
    lo, hi = pending
    written = _written_change_tables(spark, channel, lo, hi)
    targets = load_targets(spark, channel)
    busy = {target_model_name(t[3].owner, t[3].name) for t in targets if t[4] in written}
    inst_rows = instantiation_rows(effective_instantiation(spark, channel))
    pairs = []
    for _model, items in sorted(_derived_changes(spark, channel, busy, targets).items()):
        tdef = items[0][2]
        # Row changes of the waiting batches above the instantiation SCN, keyed as the
        # target's first source defines its key (as the plan roots them).
        now = [with_inst_literals(with_keys(df.where(
            (F.col("_silver_batch") >= lo) & (F.col("_silver_batch") <= hi) & F.col("_error").isNull()), tdef), inst_rows,
            (source,)) for source, df, _, chg in items if chg in written]
        if not now:  # its written change table is gone (a DROP): nothing waits there
            continue
        keyed_now = reduce(DataFrame.unionByName, now).where(above_instantiation() & (F.col("_op") != "T"))
        pairs.append((keyed_now, with_keys(reduce(DataFrame.unionByName, [d[1] for d in items]), tdef)))
    return hi, explained_failures(spark, queue, pairs)
