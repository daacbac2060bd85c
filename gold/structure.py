"""Gold target tables follow their target structure before the dbt apply runs.

dbt-spark cannot rename or drop a column of a Delta table, so lakestreams does it: the
gold tables are created with column mapping (``gold/dbt_project/macros/lakestreams_apply.sql``),
and each known target is made to hold its current definition before the plan reads it
(``lakestreams evolve``, the gold stage's first step), with
``silver.evolution.follow_structure``: renames and drops in place, new columns, widened
types; a type Delta cannot widen rewrites the table (the values converted, a value that does
not convert stops the apply with the reason). History tables (SCD2 versions, the
TimeKey log) get the renames, new columns and types too, but keep every column.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from gold.plan import TargetPlan, history_tables
from lakestreams.config import Channel
from lakestreams.timing import step
from silver.evolution import ColumnChanges, follow_structure
from silver.run import load_revisions


def follow_targets(spark: SparkSession, channel: Channel, targets: list[TargetPlan]) -> dict[str, ColumnChanges]:
    """Make the gold tables of ``targets`` follow their definitions before the plan reads
    them; returns what changed per table (nothing for tables that follow already).
    Metadata work, but for a rewrite."""
    if not targets:
        return {}
    revisions = load_revisions(spark, channel)
    out: dict[str, ColumnChanges] = {}
    with step("gold.structure"):
        for t in targets:
            revs = revisions.get(t.sources[0], []) if t.sources else []
            for name, drop in ((t.model, True), *((h, False) for h in history_tables(t.model))):
                table = channel.storage.table("gold", name)
                if not spark.catalog.tableExists(table.replace("`", "")):
                    continue
                changes = follow_structure(spark, table, t.definition, revs, f"gold.{name}", (), drop)
                if changes:
                    out[name] = changes
    return out
