"""Gold target tables follow their target structure before the dbt apply runs.

dbt-spark cannot rename or drop a column of a Delta table, so lakestreams does it: the
gold tables are created with column mapping (``gold/dbt_project/macros/lakestreams_apply.sql``),
and each known target is made to hold its current definition before the plan reads it
(``lakestreams evolve``, the gold stage's first step), with
``silver.evolution.follow_structure``: renames and drops in place, new columns, widened
types; a type Delta cannot widen rewrites the table (the values converted, a value that does
not convert stops the apply with the reason), or, under AdaptDDL
``on_preserve_alter_table_fail: FAIL_INTEG_JOB``, stops the apply before it. History tables (SCD2 versions, the
TimeKey log) get the renames, new columns and types too, but keep every column.

A target whose source tables were all dropped under OnDropTable=DROP_FROM_CHANNEL_AND_TARGET
is dropped, history tables included, here and again after the apply (changes of the plan
from before the DROP would otherwise make it anew). Created again at the source, the table
gets a new, empty target from its new rows.
"""

from __future__ import annotations

import os
from functools import partial

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from gold.plan import DDL_APPLIED, DDL_APPLIED_DDL, TargetPlan, history_tables
from lakestreams.config import Channel
from lakestreams.delta_io import append, create_missing_tables, drop_table, local_rows, table_names
from lakestreams.timing import step
from silver.evolution import (
    DROPS_TARGET,
    ColumnChanges,
    Revision,
    action_for,
    channel_life,
    follow_structure,
    for_target,
)
from silver.run import load_revisions


def follow_targets(spark: SparkSession, channel: Channel, targets: list[TargetPlan],
                   gone: set[str] | None = None) -> dict[str, ColumnChanges]:
    """Make the gold tables of ``targets`` follow their definitions before the plan reads
    them; returns what changed per table (nothing for tables that follow already).
    Targets dropped with their source tables are dropped; ``gone``, if given, receives
    their model names. Metadata work, but for a rewrite."""
    if not targets:
        return {}
    revisions = load_revisions(spark, channel)
    dropped = dropped_targets(revisions, targets)
    dropped_models = {t.model for t in dropped}
    if gone is not None:
        gone.update(dropped_models)
    out: dict[str, ColumnChanges] = {}
    for t in dropped:
        # Logged before the drop, under the DROP's revision (keyed by it: once).
        drop_scn = channel_life(revisions[t.sources[0]])[-1].scn
        for name in (t.model, *history_tables(t.model)):
            if spark.catalog.tableExists(channel.storage.table("gold", name).replace("`", "")):
                out[name] = ColumnChanges(table_dropped=True)
                log_applied(spark, channel, name, t.sources[0], out[name], drop_scn)
        drop_gold_tables(spark, channel, [t])
    actions = channel.adapt_actions()
    # The gold tables, listed once (a target's history tables exist only with a history setting).
    existing = table_names(spark, channel.storage, "gold")
    with step("gold.structure"):
        for t in targets:
            if t.model in dropped_models:
                continue
            revs = for_target(revisions.get(t.sources[0], []), (t.owner, t.table)) if t.sources else []
            action = action_for(actions, t.sources[0][1]) if t.sources else None
            policy = action.on_preserve_alter_table_fail if action else "CREATE_AS_SELECT"
            for name, drop in ((t.model, True), *((h, False) for h in history_tables(t.model))):
                if name not in existing:  # model names are lower case (target_model_name)
                    continue
                table = channel.storage.table("gold", name)
                log = partial(log_applied, spark, channel, name, t.sources[0] if t.sources else None)
                changes = follow_structure(spark, table, t.definition, revs, f"gold.{name}", (), drop, policy, log)
                if changes:
                    out[name] = changes
    return out


def log_applied(spark: SparkSession, channel: Channel, gold_table: str, source: tuple[str, str, str] | None,
                changes: ColumnChanges, revision_scn: int) -> None:
    """Log what the DDL step did to ``gold_table`` to follow ``source``'s revision at
    ``revision_scn``: once per table and revision (a re-run after a kill adds nothing)."""
    create_missing_tables(spark, channel.storage, "gold", ((DDL_APPLIED, DDL_APPLIED_DDL),))
    src, owner, name = source or (None, None, None)
    row = [(gold_table, src, owner, name, revision_scn, changes.describe())]
    df = local_rows(spark, row, DDL_APPLIED_DDL.replace(", applied_at TIMESTAMP", "")).withColumn(
        "applied_at", F.current_timestamp())
    append(df, channel.storage.table("gold", DDL_APPLIED), f"gold.ddl_applied.{gold_table}", revision_scn)


def dropped_targets(revisions: dict[tuple[str, str, str], list[Revision]], targets: list[TargetPlan]) -> list[TargetPlan]:
    """The targets every source table of which was last dropped with its target (a target
    another source still feeds stays; one the DROP's DDL processing left out stays too)."""
    def gone(source: tuple[str, str, str], target: tuple[str, str]) -> bool:
        # A table back outside the channel since (no AddTablePattern adds it) does not
        # bring its target back.
        revs = channel_life(for_target(revisions.get(source, []), target))
        return bool(revs) and revs[-1].status == "DROPPED" and revs[-1].decision == DROPS_TARGET

    return [t for t in targets if t.sources and all(gone(s, (t.owner, t.table)) for s in t.sources)]


def drop_gold_tables(spark: SparkSession, channel: Channel, targets: list[TargetPlan]) -> list[str]:
    """Drop the gold tables (replica and history tables) of ``targets`` that exist, data
    folders included (``drop_table``); their names."""
    out = []
    for t in targets:
        for name in (t.model, *history_tables(t.model)):
            # Model names are the project's own (target_model_name), quoted by Storage.table.
            if drop_table(spark, channel.storage.table("gold", name)):
                out.append(name)
    return out


#: A replica whose files hold more than this many bytes takes deletion vectors after a
#: MERGE, for the next ones (``LAKESTREAMS_GOLD_DELETION_VECTOR_BYTES``; 0 never). A MERGE
#: of new records with keys spread over the table touches every file: without deletion
#: vectors it rewrites them all, with them it marks the rows it replaces and writes only
#: those. bench/incremental.py, a 1% run at 1,000,000 records: into one 17.6 MiB replica
#: (495,114 rows) the MERGE took 5.3 and 6.0 s with them against 8.3 and 9.0 s without.
#: Into ten 2.1 MiB ones (49,515 rows each; bench/one_file.py, alternated) the ten MERGEs
#: took 41.6 and 42.6 s summed with them against 48.7 and 50.7 s without, but the runs
#: did not end sooner (56.1 and 58.1 s against 55.7 and 56.9 s): every read of a table
#: with the feature on costs Delta one more file-listing job (``PreprocessTableWithDVs``
#: asks whether any file has a vector, even when none has), and the plan reads each busy
#: replica in every conflict round (841 Spark jobs against 751: one more per such read,
#: seven more per MERGE, which writes the vectors). bench/dv_reads.py: a filtered count of
#: a 50,000-row table took 5 jobs and 0.32 s (median of 8) with the feature on, 4 and
#: 0.22 s without. The limit sits between the two replica sizes; where they break even
#: was not measured more finely.
DELETION_VECTOR_BYTES = 8 * 1024 * 1024
#: Which replicas' sizes a plan looks at: all of its targets on every this-many-th plan (by
#: plan id), and a target it applied at least ``DELETION_VECTOR_CHECK_RECORDS`` records to
#: (a first load; only a big plan grows a replica by much). A size costs a Spark job per
#: table version (about 0.3 s), and every busy replica has a new version after each plan.
DELETION_VECTOR_CHECK_EVERY = 16
DELETION_VECTOR_CHECK_RECORDS = 20_000


def deletion_vector_bytes() -> int:
    """The replica size from which ``enable_deletion_vectors`` turns them on (0: never)."""
    return int(os.environ.get("LAKESTREAMS_GOLD_DELETION_VECTOR_BYTES", DELETION_VECTOR_BYTES))


def enable_deletion_vectors(spark: SparkSession, channel: Channel, plan_id: int, targets: list[TargetPlan]) -> list[str]:
    """After a plan's MERGEs: turn deletion vectors on for the replicas of ``targets`` (the
    plan's) that it looks at (``DELETION_VECTOR_CHECK_EVERY``) and finds past
    ``deletion_vector_bytes()`` without them; their names. Once on, they stay on. A channel
    that keeps gold on Delta's first protocol (``gold.column_mapping: false``) never gets
    them: they raise the protocol too."""
    limit = deletion_vector_bytes()
    if limit <= 0 or not channel.gold_column_mapping:
        return []
    every_target = plan_id % DELETION_VECTOR_CHECK_EVERY == 0
    out = []
    for t in targets:
        applied = sum(records for _source, _scn, _at, records in t.progress)
        if not every_target and applied < DELETION_VECTOR_CHECK_RECORDS:
            continue
        # Model names are the project's own (target_model_name), quoted by Storage.table.
        table = channel.storage.table("gold", t.model)
        if not spark.catalog.tableExists(table.replace("`", "")):
            continue  # dropped after its changes were applied (a DROP in the same plan)
        # One row of table metadata (size and properties), not table rows.
        detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
        if detail["properties"].get("delta.enableDeletionVectors") == "true" or detail["sizeInBytes"] < limit:
            continue
        # The same quoted name; the property and its value are fixed text.
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
        out.append(t.model)
    return out
