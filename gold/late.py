"""Late changes: a change that arrives after a later one on its key was applied.

Gold is a pure function of the records that arrived (DESIGN.md): a change takes effect
where its commit order puts it, whatever the order its files landed in. Each gold row
carries the stamp of the change that last wrote it (source, commit SCN, transaction,
commit time), and each key a change vacated (DELETE, or an UPDATE that moved the row)
leaves a tombstone with that change's stamp. A new change is late when the key it
leaves or takes holds a later stamp.

Late keys are re-folded: the plan takes the key's applied history from silver (the
changes of transactions the plan decided to apply, as last derived) together with the
new changes and folds them in order from no row; the apply then replaces what gold
holds at those keys. Key moves in the history link keys, so the set is closed over
them. Applied history stays applied (``_decided``): a new change that contradicts it
(a decided change would now find no row, a taken key or other values) fails its own
transaction instead.

The cheap case, a new change later than its key's stamp, is not touched: it applies on
top of gold. Driver work grows with key-move chains, never with rows.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lakestreams.delta_io import local_rows
from lakestreams.errors import ApplyError
from lakestreams.timing import step
from silver.dictionary import TableDef

TOMBSTONES_DDL = (
    "plan_id BIGINT, target STRING, key STRING, source_database STRING, commit_scn BIGINT, "
    "transaction_id STRING, commit_time TIMESTAMP"
)
STAMP = ("_h_src", "_h_scn", "_h_txn", "_h_time")
MAX_MOVE_ROUNDS = 64
#: Where a stamp is read from: a change or gold row, and a tombstone.
CHANGE_STAMP = ("_source_database", "_commit_scn", "_transaction_id", "_commit_time")
TOMBSTONE_STAMP = ("source_database", "commit_scn", "transaction_id", "commit_time")


def as_holder(names: tuple[str, ...] = CHANGE_STAMP) -> list[Column]:
    """A stamp's columns renamed to the holder side (``_h_*``) of ``later``."""
    return [F.col(c).alias(h) for c, h in zip(names, STAMP, strict=True)]


def key_text(key: Column) -> Column:
    """A key as text: what tombstones and the re-fold set are matched on (null-safe)."""
    return F.to_json(key)


def later(src: Column, scn: Column, txn: Column, time: Column) -> Column:
    """The holder stamp (``_h_*``) orders after the change's (source, SCN, transaction,
    commit time): within one source by commit SCN, across sources by commit time, then
    source name; SCNs of different sources are never compared."""
    same = F.col("_h_src") == src
    return F.when(same, (F.col("_h_scn") > scn) | ((F.col("_h_scn") == scn) & (F.col("_h_txn") > txn))).otherwise(
        (F.col("_h_time") > time) | ((F.col("_h_time") == time) & (F.col("_h_src") > src))
    )


def holder_later() -> Column:
    """``later`` of a holder stamp (``_h_*``) over a change's or gold row's stamp."""
    return later(*[F.col(c) for c in CHANGE_STAMP])


def truncate_floors(spark: SparkSession, tombstones: str, model: str, new: DataFrame | None) -> DataFrame:
    """The TRUNCATEs of a target as holder stamps (``_h_*``): those applied before (their
    tombstone has no key) and ``new`` ones (changes with ``_op`` T)."""
    earlier = spark.table(tombstones.replace("`", "")).where((F.col("target") == model) & F.col("key").isNull()).select(
        *as_holder(TOMBSTONE_STAMP))
    if new is None:
        return earlier
    return earlier.unionByName(new.select(*as_holder())).distinct()


def after_floors(rows: DataFrame, floors: DataFrame | None) -> DataFrame:
    """``rows`` (changes or gold rows) without those a TRUNCATE ordered after them removed
    (few TRUNCATEs: broadcast)."""
    if floors is None:
        return rows
    # A gold row without a stamp was not written by the apply: a TRUNCATE removes it too.
    gone = holder_later() | F.col("_source_database").isNull()
    return rows.join(F.broadcast(floors), gone, "left_anti")


def holders(spark: SparkSession, gold_table: str, tombstones: str, model: str, table: TableDef) -> DataFrame:
    """The stamp each key holds: gold's row, or a tombstone of a vacating change."""
    parts = []
    name = gold_table.replace("`", "")
    if spark.catalog.tableExists(name):
        parts.append(spark.table(name).select(
            key_text(F.struct(*[F.col(f"`{k}`") for k in table.key_columns])).alias("_kj"), *as_holder()))
    parts.append(spark.table(tombstones.replace("`", "")).where((F.col("target") == model) & F.col("key").isNotNull()).select(
        F.col("key").alias("_kj"), *as_holder(TOMBSTONE_STAMP)))
    return reduce(DataFrame.unionByName, parts)


def held_stamps(spark: SparkSession, progress: str, tombstones: str) -> DataFrame:
    """Per target and source database, the latest stamp its keys can hold: the highest
    commit SCN and commit time (epoch microseconds) the apply recorded for it
    (``apply_progress``: every gold row's stamp is a change some plan applied), and of
    its keyed tombstones; ``_tombstoned`` and ``_floor``: it has tombstones, and a TRUNCATE
    applied before (a tombstone without a key). One row per target and source: metadata."""
    applied = spark.table(progress.replace("`", "")).select(
        "target", "source_database", F.col("applied_scn").alias("_scn"),
        F.unix_micros("applied_commit_time").alias("_at"), F.lit(0).alias("_tomb"), F.lit(0).alias("_floor"))
    keyed = F.col("key").isNotNull()
    vacated = spark.table(tombstones.replace("`", "")).select(
        "target", "source_database", F.when(keyed, F.col("commit_scn")).alias("_scn"),
        F.when(keyed, F.unix_micros("commit_time")).alias("_at"), F.lit(1).alias("_tomb"),
        (~keyed).cast("int").alias("_floor"))
    return applied.unionByName(vacated).groupBy("target", "source_database").agg(
        F.max("_scn").alias("_scn"), F.max("_at").alias("_at"),
        (F.max("_tomb") > 0).alias("_tombstoned"), (F.max("_floor") > 0).alias("_floor"))


def ahead_of_holders(new: dict, held: dict) -> set:
    """The targets where no new change can be late, so their keys need no look: per
    target, ``new`` maps each source database of its new changes to their lowest (commit
    SCN, commit time), and ``held`` each source database of its stamps to the highest
    (``held_stamps``). A change is late when a stamp orders after it (``later``): of its
    own source by a higher SCN (or the same SCN), of another by a later commit time (or
    the same time). A target qualifies when each source's lowest SCN is above that
    source's highest stamp and its lowest time above every other source's.

    >>> ahead_of_holders({"t": {"A": (11, 5)}}, {"t": {"A": (10, 9)}})
    {'t'}
    >>> ahead_of_holders({"t": {"A": (10, 5)}}, {"t": {"A": (10, 1)}})
    set()
    >>> ahead_of_holders({"t": {"A": (11, 5)}}, {"t": {"A": (10, 1), "B": (99, 5)}})
    set()
    >>> ahead_of_holders({"t": {"A": (11, None)}, "u": {"A": (1, 1)}}, {"t": {"B": (3, 4)}})
    {'u'}
    """
    def after(src: str, scn, at, stamps: dict) -> bool:
        own = stamps.get(src, (None, None))[0]
        others = [t for other, (_, t) in stamps.items() if other != src and t is not None]
        return (own is None or (scn is not None and scn > own)) and (
            not others or (at is not None and at > max(others)))

    return {target for target, sources in new.items()
            if all(after(src, scn, at, held.get(target, {})) for src, (scn, at) in sources.items())}


def _touched(keyed: DataFrame, *more: str) -> DataFrame:
    """Every (key text, change) a change touches: the key it leaves and the key it takes."""
    cols = ["_source_database", "_commit_scn", "_transaction_id", "_commit_time", "_op", "_okey", "_nkey", *more]
    return keyed.select(*cols, F.explode(F.array_distinct(F.array(key_text(F.col("_okey")), key_text(F.col("_nkey"))))).alias("_kj"))


def late_keys(new: DataFrame, stamps: DataFrame) -> DataFrame:
    """Keys where a new change (above the instantiation SCN) meets a later stamp."""
    t = _touched(new)
    return t.join(stamps, "_kj").where(
        holder_later()
    ).select("_kj").distinct()


def applied_history(keyed_history: DataFrame, applied: DataFrame) -> DataFrame:
    """The changes of transactions the plan applied to this target, as last derived (a
    re-executed transaction's records are derived again in a later batch)."""
    rows = keyed_history.join(applied, ["_source_database", "_transaction_id"], "left_semi")
    last = Window.partitionBy("_source_database", "_transaction_id")
    return rows.withColumn("_last_batch", F.max("_silver_batch").over(last)).where(
        F.col("_silver_batch") == F.col("_last_batch")).drop("_last_batch")


def refold(spark: SparkSession, seeds: DataFrame, history: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The re-fold key set (``_kj``) grown from ``seeds`` over the key moves of the history,
    and the history changes touching it."""
    keys = seeds.localCheckpoint()
    # Where each applied change is, read from the history once (every change-table batch
    # of the target): the rounds below join the checkpoint, and the rows are picked by it.
    ident = ["_source_database", "_transaction_id", "_position"]
    touched = _touched(history, "_position").select(*ident, "_commit_scn", "_op", "_okey", "_nkey", "_kj").localCheckpoint()
    for _ in range(MAX_MOVE_ROUNDS):
        hit = touched.join(keys, "_kj", "left_semi")
        moved = hit.where(F.col("_op") == "U").where(~F.col("_okey").eqNullSafe(F.col("_nkey")))
        linked = _touched(moved.withColumn("_commit_time", F.lit(None).cast("timestamp"))).select("_kj").join(
            keys, "_kj", "left_anti").distinct()
        with step("plan.late.moves"):
            grown = linked.limit(1).count() > 0
        if not grown:
            break
        keys = keys.unionByName(linked).distinct().localCheckpoint()
    else:
        raise ApplyError(f"late changes: key moves still link new keys after {MAX_MOVE_ROUNDS} rounds")
    # The history changes leaving or taking a key of the set: one more read of the history,
    # joined with the few (change, key) pairs found in the checkpoint.
    picked = touched.join(keys, "_kj", "left_semi").select(*ident, "_kj")
    rows = history.withColumn("_kj_o", key_text(F.col("_okey"))).withColumn("_kj_n", key_text(F.col("_nkey")))
    hit = rows.join(picked, ident).where((F.col("_kj") == F.col("_kj_o")) | (F.col("_kj") == F.col("_kj_n"))).drop(
        "_kj").dropDuplicates(ident)
    return keys, hit.drop("_kj_o", "_kj_n")


def flag_refold(rows: DataFrame, keys: DataFrame | None) -> DataFrame:
    """``_refold_old`` / ``_refold_new``: the key a change leaves / takes is re-folded, so
    the apply replaces gold's row there rather than building on it."""
    if keys is None:
        return rows.withColumn("_refold_old", F.lit(False)).withColumn("_refold_new", F.lit(False))
    k = F.broadcast(keys)
    return (
        rows.withColumn("_kj_o", key_text(F.col("_okey"))).withColumn("_kj_n", key_text(F.col("_nkey")))
        .join(k.select(F.col("_kj").alias("_kj_o"), F.lit(True).alias("_refold_old")), "_kj_o", "left")
        .join(k.select(F.col("_kj").alias("_kj_n"), F.lit(True).alias("_refold_new")), "_kj_n", "left")
        .withColumn("_refold_old", F.coalesce("_refold_old", F.lit(False)))
        .withColumn("_refold_new", F.coalesce("_refold_new", F.lit(False)))
        .drop("_kj_o", "_kj_n")
    )


def tombstone_rows(plan_rows: DataFrame, truncates: DataFrame | None, plan_id: int, model: str) -> DataFrame:
    """A tombstone per key a new applied change vacated: a DELETE, or an UPDATE moving the
    row away. A later row at the key outranks it (the newest stamp wins). A TRUNCATE
    leaves one without a key: the floor no earlier change of the table passes."""
    vacated = plan_rows.where(F.col("_above") & ~F.col("_decided")).where(
        (F.col("_op") == "D") | ((F.col("_op") == "U") & ~F.col("_okey").eqNullSafe(F.col("_nkey")))
    ).select("_okey", "_source_database", "_commit_scn", "_transaction_id", "_commit_time").withColumn(
        "_key", key_text(F.col("_okey"))
    )
    if truncates is not None:
        vacated = vacated.unionByName(truncates.select(
            "_okey", "_source_database", "_commit_scn", "_transaction_id", "_commit_time",
            F.lit(None).cast("string").alias("_key"),
        ))
    return vacated.select(
        F.lit(plan_id).cast("bigint").alias("plan_id"), F.lit(model).alias("target"), F.col("_key").alias("key"),
        F.col("_source_database").alias("source_database"), F.col("_commit_scn").alias("commit_scn"),
        F.col("_transaction_id").alias("transaction_id"), F.col("_commit_time").alias("commit_time"),
    )


def contradictions(judged: DataFrame, decided_failures: DataFrame, table: TableDef) -> DataFrame:
    """New transactions that contradict applied history: a decided change of a re-folded
    key would now fail (``decided_failures``: its keys and ``_derr``), so every new change
    touching that key fails instead."""
    bad = decided_failures.select(
        F.explode(F.array_distinct(F.array(key_text(F.col("_okey")), key_text(F.col("_nkey"))))).alias("_kj"),
        F.col("_derr"),
    ).groupBy("_kj").agg(F.min("_derr").alias("_derr"))
    new = _touched(judged.where(~F.col("_decided") & F.col("_above")), "_seq", "_root", "_decided", "_position")
    return new.join(bad, "_kj").select(
        "_source_database", "_transaction_id",
        F.concat(
            F.lit(f"late change to {table.owner}.{table.name} at SCN "), F.col("_commit_scn").cast("string"),
            F.lit(" contradicts the history already applied at key "), F.col("_kj"), F.lit(": "), F.col("_derr"),
        ).alias("_error"),
        F.lit(None).cast("string").alias("failing_record"),
        "_seq", "_root", "_decided", "_okey", "_nkey", "_position",
    )


#: Errors a late change can explain: no row, a taken key, other values (and a late change
#: contradicting history, whose error quotes one of them).
CONFLICT_ERRORS = ("ORA-01403", "ORA-00001", "ORA-26786")


def explained_failures(spark: SparkSession, queue: DataFrame, applied: list[tuple[DataFrame, DataFrame]]) -> DataFrame:
    """Queued transactions (``queue``: source, transaction; each failed on a conflict,
    ``CONFLICT_ERRORS``) at a key where a change applied now orders before them: in commit
    order that change came first, so the conflict may not be one. A queued transaction
    later on a key of one explained so is explained too (a cascade re-executes in one
    round, in commit order). ``applied`` holds per target its changes applied now (keyed)
    and all its derived changes (keyed, every batch)."""
    conflicts = queue.select(
        F.col("source_database").alias("_source_database"), F.col("transaction_id").alias("_transaction_id")
    ).distinct()
    touched, changed = [], []
    for i, (now, derived) in enumerate(applied):
        # Keys as text, prefixed by the target: every target's keys go into one frame.
        # The queued transactions' changes of this target (few: the queue).
        touched.append(_touched(applied_history(derived, conflicts)).select(
            F.concat(F.lit(f"{i}:"), F.col("_kj")).alias("_kj"), *as_holder()))
        changed.append(_touched(now).select(F.concat(F.lit(f"{i}:"), F.col("_kj")).alias("_kj"), *CHANGE_STAMP))
    if not touched:
        return local_rows(spark, [], "source_database STRING, transaction_id STRING")
    # Finding the queued changes reads every batch of the change tables: done once, and
    # both the first look and the cascade below join the checkpoint.
    keys = reduce(DataFrame.unionByName, touched).localCheckpoint()
    found = reduce(DataFrame.unionByName, changed).join(keys, "_kj").where(
        holder_later()
    ).select("_h_src", "_h_txn").distinct().localCheckpoint()
    for _ in range(MAX_MOVE_ROUNDS):
        # Changes of explained transactions, as the earlier side of the same comparison.
        mine = keys.join(found, ["_h_src", "_h_txn"], "left_semi").select(
            "_kj", *[F.col(h).alias(c) for c, h in zip(CHANGE_STAMP, STAMP, strict=True)])
        with step("gold.retry.cascade"):
            # Evaluated once: the test and the union below read it (new to ``found``, so
            # the union stays distinct).
            more = mine.join(keys, "_kj").where(
                holder_later()
            ).select("_h_src", "_h_txn").join(found, ["_h_src", "_h_txn"], "left_anti").distinct().localCheckpoint()
            grown = more.limit(1).count() > 0
        if not grown:
            break
        found = found.unionByName(more).localCheckpoint()
    return found.select(F.col("_h_src").alias("source_database"), F.col("_h_txn").alias("transaction_id"))
