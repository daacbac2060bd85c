"""An operator's view of a channel: per gold table and source, how far the apply has got
and what still waits (``lakestreams status``).

Per target table and source database:

- applied SCN and time: the highest commit SCN applied to it (its high watermark) and when;
- waiting: records silver released (their transaction is complete) that no applied plan
  has taken yet;
- open: records of transactions not complete yet (no commit seen, or records still missing);
- errors: transactions in the error queue holding changes of it (changes it is missing);
- last DDL: the newest DDL record about its source table, and what was decided;
- refresh: the SCN from which its target waits for a snapshot, and why (a DDL record
  changed rows without row changes: ``gold.snapshot.pending_refreshes``).

For the channel: per source database the SCN up to which every gold table holds every
change (the low watermark of the last applied plan) and the oldest SCN still pending; the
records bronze holds that silver has not read; the error queue's size.

The pending records add up to the audit's pending bucket: unread + open + waiting (each
table's, and the records no table owns: control records of open transactions, and
transactions silver failed that the next plan sends to the error queue). Everything here
is read with aggregations: one row per table, source or plan reaches the driver.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from functools import reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakestreams.config import Channel
from lakestreams.delta_io import table_names


@dataclass
class TableStatus:
    """One source table and the gold table it feeds (two source tables of one database
    merged into one target share that target's applied SCN, which is kept per source)."""

    target: str  # gold table, e.g. hr__regions
    source_database: str
    source_table: str  # OWNER.TABLE at the source
    applied_scn: int | None = None
    applied_at: datetime | None = None
    waiting: int = 0
    open: int = 0
    errors: int = 0
    last_ddl: str | None = None  # "SCN n STATEMENT → decision"
    refresh_since: int | None = None  # the target waits for a snapshot at or above this SCN
    refresh_reason: str | None = None


@dataclass
class SourceStatus:
    source_database: str
    consistent_scn: int | None
    oldest_pending_scn: int | None


@dataclass
class ChannelStatus:
    channel: str
    landed: bool = False  # bronze holds records (or held: it is append-only)
    tables: list[TableStatus] = field(default_factory=list)
    sources: list[SourceStatus] = field(default_factory=list)
    last_plan: int | None = None
    last_plan_at: datetime | None = None
    unread: int = 0  # bronze records silver has not read yet
    open_elsewhere: int = 0  # open records of no table (control records, tables not known yet)
    failed_in_silver: int = 0  # transactions silver failed, for the next plan's error queue
    error_queue: int = 0  # transactions
    errors_elsewhere: int = 0  # queued transactions with no change of a gold table (only unknown tables)

    @property
    def pending(self) -> int:
        """Records not applied or decided yet: what the audit counts as pending."""
        return (self.unread + self.open_elsewhere + self.failed_in_silver
                + sum(t.waiting + t.open for t in self.tables))

    def as_dict(self) -> dict:
        return {**asdict(self), "pending": self.pending}


def _table(spark: SparkSession, channel: Channel, layer: str, name: str) -> DataFrame | None:
    q = channel.storage.table(layer, name).replace("`", "")
    return spark.table(q) if spark.catalog.tableExists(q) else None


def channel_status(spark: SparkSession, channel: Channel) -> ChannelStatus:
    """The channel's status (module docstring); empty before its first run."""
    from silver.changes import target_model_name
    from silver.run import ddl_made_changes, load_targets

    status = ChannelStatus(channel.name)
    bronze = _table(spark, channel, "bronze", "change_records")
    ledger = _table(spark, channel, "silver", "ledger")
    targets = _table(spark, channel, "silver", "targets")
    if bronze is None:
        return status
    status.landed = True
    if ledger is None or targets is None:
        status.unread = bronze.count()
        return status
    status.unread = bronze.count() - ledger.count()
    runs = _table(spark, channel, "silver", "gold_runs")
    applied = runs.where("state = 'applied'") if runs is not None else None
    last = applied.orderBy(F.desc("plan_id")).first() if applied is not None else None  # one row: metadata
    # As the audit reads it: the highest silver batch an applied plan took.
    applied_to = int(applied.agg(F.max("silver_to")).first()[0] or 0) if applied is not None else 0
    if last is not None:
        status.last_plan, status.last_plan_at = int(last["plan_id"]), last["at"]

    # A change table a killed rebuild dropped before its targets rows: nothing waits in it.
    existing = table_names(spark, channel.storage, "silver")
    current = [t for t in load_targets(spark, channel) if t[4] in existing]
    rows: dict[tuple[str, str, str], TableStatus] = {}
    for src, sowner, sname, tdef, _chg in current:
        rows[(src, sowner, sname)] = TableStatus(target_model_name(tdef.owner, tdef.name), src, f"{sowner}.{sname}")
    by_target: dict[tuple[str, str], list[TableStatus]] = {}
    for t in rows.values():
        by_target.setdefault((t.source_database, t.target), []).append(t)

    # Waiting: released to a change table after the last applied plan. One job over all
    # change tables; one row per change table reaches the driver.
    # A TRUNCATE change a DDL record made is that record (counted as DDL), not a waiting one.
    from_ddl = ddl_made_changes(spark, channel)
    waiting = [
        spark.table(channel.storage.table("silver", chg).replace("`", ""))
        .where(F.col("_silver_batch") > applied_to)
        .join(from_ddl, ["_source_database", "_transaction_id", "_position"], "left_anti")
        .select(F.lit(src).alias("s"), F.lit(sowner).alias("o"), F.lit(sname).alias("t"))
        for src, sowner, sname, _tdef, chg in current
    ]
    if waiting:
        for r in reduce(DataFrame.unionByName, waiting).groupBy("s", "o", "t").count().collect():
            rows[(r["s"], r["o"], r["t"])].waiting = int(r["count"])

    # Open: ledger records of transactions silver has not released. One row per table.
    txns = _table(spark, channel, "silver", "transactions")
    unreleased = ledger.where("NOT is_duplicate")
    if txns is not None:
        unreleased = unreleased.join(txns.select("source_database", "transaction_id"),
                                     ["source_database", "transaction_id"], "left_anti")
    for r in unreleased.groupBy("source_database", "object_owner", "object_name").count().collect():
        row = rows.get((r["source_database"], r["object_owner"], r["object_name"]))
        if row is not None:
            row.open = int(r["count"])
        else:
            status.open_elsewhere += int(r["count"])

    txn_errors = _table(spark, channel, "silver", "txn_errors")
    if txn_errors is not None:
        status.failed_in_silver = txn_errors.where(F.col("silver_batch") > applied_to).count()

    # Applied: the highest commit SCN per target and source, and when it was applied.
    progress = _table(spark, channel, "gold", "apply_progress")
    if progress is not None:
        for r in progress.groupBy("target", "source_database").agg(
                F.max("applied_scn").alias("scn"), F.max("applied_at").alias("at")).collect():
            for row in by_target.get((r["source_database"], r["target"]), []):
                row.applied_scn, row.applied_at = int(r["scn"]), r["at"]

    # Errors: queued transactions, tied by the plan outcomes to the targets they hold changes of.
    queue = _table(spark, channel, "gold", "error_queue")
    outcomes = _table(spark, channel, "silver", "outcomes")
    if queue is not None and outcomes is not None:
        status.error_queue = queue.count()
        keys = queue.select("source_database", "transaction_id")
        holding = outcomes.where((F.col("stage") == "plan") & (F.col("bucket") == "error")
                                   & F.col("owner").isNotNull()).select(
            "source_database", "transaction_id", "owner", "table_name").distinct().join(
            keys, ["source_database", "transaction_id"], "left_semi")
        for r in holding.groupBy("source_database", "owner", "table_name").count().collect():
            for row in by_target.get((r["source_database"], target_model_name(r["owner"], r["table_name"])), []):
                row.errors = int(r["count"])
        status.errors_elsewhere = keys.join(holding, ["source_database", "transaction_id"], "left_anti").count()

    # Last DDL per source table: the newest record of the DDL log about it.
    ddl_log = _table(spark, channel, "silver", "ddl_log")
    if ddl_log is not None:
        w = Window.partitionBy("source_database", "object_owner", "object_name").orderBy(
            F.desc("commit_scn"), F.desc("position"))
        for r in ddl_log.withColumn("_n", F.row_number().over(w)).where("_n = 1").select(
                "source_database", "object_owner", "object_name", "commit_scn", "statement", "decision").collect():
            row = rows.get((r["source_database"], r["object_owner"], r["object_name"]))
            if row is not None:
                row.last_ddl = f"SCN {r['commit_scn']} {r['statement']} → {r['decision']}"

    # Refresh: targets waiting for a snapshot. One row per such table.
    # As the last plan instantiated the tables (a snapshot landed since is not in gold yet).
    inst = _table(spark, channel, "silver", "instantiation")
    if inst is not None:
        from gold.snapshot import pending_refreshes

        for r in pending_refreshes(spark, channel, inst).collect():
            row = rows.get((r["source_database"], r["owner"], r["table_name"]))
            if row is not None:
                row.refresh_since, row.refresh_reason = int(r["since_scn"]), r["reason"]

    # Per source: the watermarks of the last applied plan.
    marks = _table(spark, channel, "gold", "apply_watermarks")
    if marks is not None:
        w = Window.partitionBy("source_database").orderBy(F.desc("plan_id"))
        for r in marks.withColumn("_n", F.row_number().over(w)).where("_n = 1").orderBy("source_database").collect():
            status.sources.append(SourceStatus(
                r["source_database"],
                int(r["low_watermark"]) if r["low_watermark"] is not None else None,
                int(r["oldest_pending_scn"]) if r["oldest_pending_scn"] is not None else None))
    status.tables = sorted(rows.values(), key=lambda t: (t.target, t.source_database, t.source_table))
    return status


def _when(at: datetime | None) -> str:
    return f"{at:%Y-%m-%d %H:%M:%S}" if at is not None else "-"


def format_status(s: ChannelStatus) -> str:
    if not s.landed:
        return f"channel {s.channel}: nothing landed yet"
    plan = (f"last applied plan {s.last_plan} at {_when(s.last_plan_at)}" if s.last_plan is not None
            else "no plan applied yet")
    lines = [f"channel {s.channel}: {plan}"]
    for src in s.sources:
        oldest = f", oldest pending SCN {src.oldest_pending_scn}" if src.oldest_pending_scn is not None else ""
        lines.append(f"  {src.source_database}: every gold table consistent at SCN "
                     f"{src.consistent_scn if src.consistent_scn is not None else '-'}{oldest}")
    lines.append(f"  pending records {s.pending}: not read by silver {s.unread}, open transactions "
                 f"{sum(t.open for t in s.tables) + s.open_elsewhere}, waiting for gold "
                 f"{sum(t.waiting for t in s.tables) + s.failed_in_silver}")
    queued = f"  error queue {s.error_queue} transaction(s)"
    if s.errors_elsewhere:
        queued += f", {s.errors_elsewhere} of them with no change of a gold table (see lakestreams errors)"
    lines.append(queued)
    if s.tables:
        width = max(len(t.target) for t in s.tables)
        swidth = max(len(f"{t.source_database} {t.source_table}") for t in s.tables)
        lines.append(f"  {'target':<{width}}  {'source':<{swidth}}  {'applied SCN':>11}  {'applied at':<19}  "
                     f"{'waiting':>7}  {'open':>6}  {'errors':>6}  last DDL")
        for t in s.tables:
            scn = str(t.applied_scn) if t.applied_scn is not None else "-"
            lines.append(f"  {t.target:<{width}}  {t.source_database + ' ' + t.source_table:<{swidth}}  {scn:>11}  "
                         f"{_when(t.applied_at):<19}  {t.waiting:>7}  {t.open:>6}  {t.errors:>6}  {t.last_ddl or '-'}")
    waiting = [t for t in s.tables if t.refresh_since is not None]
    if waiting:
        lines.append("  waiting for a snapshot (land one at or above the SCN: a snapshot landing, or "
                     "lakestreams compare TABLE SNAPSHOT --resnapshot):")
        lines.extend(f"    {t.target} ({t.source_database} {t.source_table}) since SCN {t.refresh_since}: {t.refresh_reason}"
                     for t in waiting)
    return "\n".join(lines)
