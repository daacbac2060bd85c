"""What the notebooks show, and a runner for them outside Databricks.

The notebooks in ``notebooks/`` hold no logic: they call the functions here and the
library's own (audit, status, rules, DDL log, error queue). ``run_notebook`` executes a
Databricks source-format notebook as plain Python with ``spark``, ``dbutils.widgets`` and a
``display`` that renders a DataFrame's first rows as text and saves a matplotlib figure as
a PNG file; the tests run every notebook this way.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakestreams.config import Channel
from lakestreams.delta_io import table_names

CELL = "# COMMAND ----------"
HEADER = "# Databricks notebook source"
#: Rows ``display`` renders, as Databricks' own display shows the first rows only.
DISPLAY_ROWS = 50


def _table(spark: SparkSession, channel: Channel, layer: str, name: str) -> DataFrame | None:
    q = channel.storage.table(layer, name).replace("`", "")
    return spark.table(q) if spark.catalog.tableExists(q) else None


PROGRESS_COLUMNS = (
    "plan_id BIGINT, target STRING, source_database STRING, applied_at TIMESTAMP, applied_scn BIGINT, "
    "records BIGINT, lag_seconds BIGINT"
)


def progress_over_time(spark: SparkSession, channel: Channel, plans: int = 500) -> DataFrame:
    """Per applied plan (the last ``plans`` of them), gold table and source: when it was
    applied, the highest commit SCN applied and the lag (seconds from that change's commit
    to its apply). Empty before the first plan."""
    progress = _table(spark, channel, "gold", "apply_progress")
    if progress is None:
        return spark.createDataFrame([], PROGRESS_COLUMNS)
    # Plan ids are silver batch numbers, so they skip: take the last ``plans`` ids there are.
    last = progress.select("plan_id").distinct().orderBy(F.desc("plan_id")).limit(plans)
    return progress.join(last, "plan_id", "left_semi").select(
        "plan_id", "target", "source_database", "applied_at", "applied_scn", "records",
        (F.unix_timestamp("applied_at") - F.unix_timestamp("applied_commit_time")).alias("lag_seconds"),
    ).orderBy("applied_at", "target", "source_database")


def table_revisions(spark: SparkSession, channel: Channel) -> DataFrame:
    """The source dictionary: each table's revisions in SCN order, columns by name and type."""
    d = _table(spark, channel, "silver", "dictionary")
    if d is None:
        return spark.createDataFrame([], "source_database STRING, owner STRING, table_name STRING, revision_scn BIGINT")
    return d.select(
        "source_database", "owner", "table_name", "revision_scn", "status",
        F.array_join(F.transform("columns", lambda c: F.concat_ws(" ", c["name"], c["oracle_type"])), ", ")
        .alias("columns"),
        F.array_join("key_columns", ", ").alias("key"), "key_kind", "target_decision", "ddl_text",
    ).orderBy("source_database", "owner", "table_name", "revision_scn")


LAYERS = ("bronze", "silver", "gold")


def layer_tables(spark: SparkSession, channel: Channel) -> DataFrame:
    """Every table of the channel's bronze, silver and gold schemas with its row count, in
    one job (Delta answers a count from its statistics). One row per table."""
    parts = []
    for layer in LAYERS:
        schema = channel.storage.schema_name(layer)
        if channel.storage.catalog:
            schema = f"{channel.storage.catalog}.{schema}"
        if not spark.catalog.databaseExists(schema):
            continue
        for name in sorted(table_names(spark, channel.storage, layer, views=False)):
            parts.append(spark.table(channel.storage.table(layer, name).replace("`", ""))
                         .select(F.lit(layer).alias("layer"), F.lit(name).alias("table"))
                         .groupBy("layer", "table").count().withColumnRenamed("count", "rows"))
    if not parts:
        return spark.createDataFrame([], "layer STRING, table STRING, rows BIGINT")
    order = F.array_position(F.array(*[F.lit(x) for x in LAYERS]), F.col("layer"))
    return reduce(DataFrame.unionByName, parts).orderBy(order, "table")


def recent_transactions(spark: SparkSession, channel: Channel) -> DataFrame:
    """Silver's transactions, newest commit first: each source transaction's status (open,
    committed, rolled back), commit SCN and time, and the silver batch that released it."""
    t = _table(spark, channel, "silver", "transactions")
    if t is None:
        return spark.createDataFrame([], "source_database STRING, transaction_id STRING, status STRING")
    return t.orderBy(F.desc_nulls_first("commit_scn"), "source_database", "transaction_id")


def quarantine_reasons(spark: SparkSession, channel: Channel) -> DataFrame:
    """Quarantined records per reason, most first."""
    q = _table(spark, channel, "bronze", "quarantine")
    if q is None:
        return spark.createDataFrame([], "reason STRING, records BIGINT")
    return q.groupBy("reason").agg(F.count(F.lit(1)).alias("records")).orderBy(F.desc("records"), "reason")


def error_queue_frame(spark: SparkSession, channel: Channel) -> DataFrame:
    """The error queue without the records, oldest commit SCN first."""
    q = _table(spark, channel, "gold", "error_queue")
    if q is None:
        return spark.createDataFrame([], "source_database STRING, transaction_id STRING, commit_scn BIGINT")
    return q.select("source_database", "transaction_id", "commit_scn", "error", "record_count", "plan_id").orderBy(
        "commit_scn", "source_database", "transaction_id")


def error_queue_action(spark: SparkSession, channel: Channel, action: str, transaction: str | None) -> str | None:
    """What the error-queue notebook's widgets ask: "" lists only; ``execute`` one
    transaction, or all of them when none is named; ``delete`` one transaction."""
    from lakestreams.api import Streams
    from lakestreams.errors import ConfigError

    streams = Streams(channel)
    if not action:
        return None
    if action == "execute":
        done = streams.execute_error(spark, transaction) if transaction else streams.execute_all_errors(spark)
        return f"re-executed {done.count} transaction(s)"
    if action == "delete" and transaction:
        return f"removed {streams.delete_error(spark, transaction)} transaction(s) from the error queue"
    raise ConfigError(f"error queue action {action!r}: use execute (a transaction, or all), or delete a transaction")


def plot_progress(progress: DataFrame):
    """Two panels over apply time: applied SCN and lag, one line per gold table and source.
    One row per plan and table reaches the driver (metadata)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    rows = progress.collect()  # one row per plan, table and source: metadata
    fig, (scn_ax, lag_ax) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    series: dict[tuple[str, str], list] = {}
    for r in rows:
        series.setdefault((r["target"], r["source_database"]), []).append(r)
    for (target, source), points in sorted(series.items()):
        at = [p["applied_at"] for p in points]
        label = f"{target} ({source})"
        scn_ax.plot(at, [p["applied_scn"] for p in points], marker="o", label=label)
        lag_ax.plot(at, [p["lag_seconds"] / 3600 if p["lag_seconds"] is not None else None for p in points],
                    marker="o", label=label)
    scn_ax.set_ylabel("applied SCN")
    lag_ax.set_ylabel("lag (hours)")
    for ax in (scn_ax, lag_ax):
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    lag_ax.set_xlabel("applied at")
    scn_ax.set_title("apply progress per gold table and source")
    if series:
        scn_ax.legend(fontsize="small", loc="upper left")
    fig.autofmt_xdate()
    return fig


class Widgets:
    """``dbutils.widgets`` as a notebook uses it: text widgets with defaults, values given."""

    def __init__(self, values: dict[str, str]):
        self._values = dict(values)

    def text(self, name: str, default: str, label: str | None = None) -> None:
        self._values.setdefault(name, default)

    def get(self, name: str) -> str:
        return self._values[name]


@dataclass
class Dbutils:
    widgets: Widgets


@dataclass
class NotebookRun:
    """What a notebook displayed: rendered tables (text) and figures (PNG paths)."""

    tables: list[str] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)
    figures: list = field(default_factory=list)
    printed: str = ""


def cells(path: Path) -> list[str]:
    """The code cells of a Databricks source-format notebook (markdown cells dropped)."""
    text = path.read_text()
    if not text.startswith(HEADER):
        raise ValueError(f"{path}: not a Databricks source notebook (first line is not {HEADER!r})")
    out = []
    for cell in text[len(HEADER):].split(CELL):
        lines = cell.strip("\n").splitlines()
        if lines and not all(line.startswith("# MAGIC") for line in lines if line.strip()):
            out.append("\n".join(lines))
    return out


def run_notebook(path: Path, spark: SparkSession, widgets: dict[str, str], out_dir: Path) -> NotebookRun:
    """Run a notebook's code cells in order, as Databricks would, in this process."""
    run = NotebookRun()
    out_dir.mkdir(parents=True, exist_ok=True)

    def display(obj) -> None:
        if isinstance(obj, DataFrame):
            # The first rows only, for a person to read, as Databricks' display shows them.
            shown = io.StringIO()
            with contextlib.redirect_stdout(shown):
                obj.show(DISPLAY_ROWS, truncate=40)
            run.tables.append(shown.getvalue())
        elif hasattr(obj, "savefig"):
            png = out_dir / f"{path.stem}_{len(run.images) + 1}.png"
            obj.savefig(png)
            run.images.append(png)
            run.figures.append(obj)
        else:
            run.tables.append(str(obj))

    namespace = {"spark": spark, "dbutils": Dbutils(Widgets(widgets)), "display": display,
                 "__name__": "__notebook__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for i, code in enumerate(cells(path), 1):
            exec(compile(code, f"{path.name}#cell{i}", "exec"), namespace)  # our own notebooks
    run.printed = printed.getvalue()
    return run
