"""The silver stage: bronze records → ledger, transactions, dictionary, typed change tables.

One silver batch reads the bronze versions that are new since the last batch (Delta
change data feed). The batch's range is logged *before* anything is written, and every
write carries ``txnAppId``/``txnVersion`` = (stage table, batch): a batch killed half-way
is re-run over the same range and Delta skips the writes that already committed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial, reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from bronze.formats import SNAPSHOT_MARKING_FORMATS, SNAPSHOT_MODES
from bronze.ingest import BRONZE_TABLE
from bronze.records import BRONZE_COLUMNS, BRONZE_DDL, record_hash
from lakestreams.config import Channel
from lakestreams.delta_io import append, append_rows, create_missing_tables, local_rows, log_state
from lakestreams.errors import ReplicationError
from lakestreams.faults import kill_point
from lakestreams.spark import interpreted, interpreted_records
from lakestreams.timing import step
from silver.changes import (
    REVISION_DEFAULTS_DDL,
    change_table_ddl,
    change_table_name,
    defaults_from_rows,
    fill_defaults,
    outside_channel,
    revision_default_rows,
    target_model_name,
    typed_by_revision,
)
from silver.condition import is_control_record, is_ddl_lcr
from silver.ddl_processing import Processed, not_followed, process_ddl, rule_renamed, target_names
from silver.dictionary import (
    DDL_LOG_DDL,
    DICTIONARY_DDL,
    SAFE_NAME,
    TableDef,
    parse_create_table,
    table_def_from_row,
    table_def_to_row,
)
from silver.evolution import (
    DECLARED,
    OUTSIDE,
    Revision,
    action_for,
    follow_structure,
    for_target,
    in_channel,
    mark_structure,
    read_ddl,
    target_key,
    target_structures,
)
from silver.goldengate import DdlAbend
from silver.handlers import apply_dml_handlers
from silver.rules import Client, build_clients, evaluate
from silver.transforms import transform_table_def

RUN_ROW = "silver_batch BIGINT, bronze_from BIGINT, bronze_to BIGINT, state STRING"
#: A batch's done row also says from which batch on the ledger holds every record of a
#: transaction not released yet (``open_from``): later batches read the ledger from there.
DONE_ROW = RUN_ROW + ", open_from BIGINT"
RUNS_DDL = RUN_ROW + ", at TIMESTAMP, open_from BIGINT"
TXN_DDL = (
    "source_database STRING, transaction_id STRING, status STRING, commit_scn BIGINT, "
    "commit_time TIMESTAMP, released_batch BIGINT"
)
OUTCOMES_DDL = (
    "batch BIGINT, stage STRING, source_database STRING, transaction_id STRING, owner STRING, "
    "table_name STRING, bucket STRING, reason STRING, records BIGINT"
)
TARGETS_DDL = (
    "source_database STRING, source_owner STRING, source_table STRING, owner STRING, table_name STRING, "
    "change_table STRING, columns ARRAY<STRUCT<name: STRING, oracle_type: STRING, spark_type: STRING, "
    "nullable: BOOLEAN, max_length: INT, empty_is_null: BOOLEAN, hex_binary: BOOLEAN, default_sql: STRING>>, "
    "key_columns ARRAY<STRING>, key_kind STRING, silver_batch BIGINT, revision_defaults " + REVISION_DEFAULTS_DDL
)
RULE_OUTCOMES_DDL = (
    "batch BIGINT, streams_type STRING, streams_name STRING, rule_name STRING, outcome STRING, "
    "migration STRING, source_database STRING, owner STRING, table_name STRING, records BIGINT"
)
REBUILD_ROW = (
    "batch BIGINT, request STRING, state STRING, "
    "tables ARRAY<STRUCT<source_database: STRING, owner: STRING, table_name: STRING>>, "
    "models ARRAY<STRING>, change_tables ARRAY<STRING>"
)
#: The transactions a re-execution (a silver batch) derives again.
REEXECUTIONS_DDL = "batch BIGINT, source_database STRING, transaction_id STRING"
REBUILDS_DDL = REBUILD_ROW + ", at TIMESTAMP"
#: One row per table of a snapshot transaction (a transaction of a ``snapshot`` landing).
SNAPSHOTS_DDL = (
    "silver_batch BIGINT, source_database STRING, owner STRING, table_name STRING, scn BIGINT, "
    "transaction_id STRING, commit_time TIMESTAMP, records BIGINT"
)
#: One row per DDL record after which a table's target cannot follow from the change
#: history (rows changed at the source without row changes): it needs a snapshot at or
#: above ``scn`` (``pending_refreshes``).
REFRESHES_DDL = (
    "silver_batch BIGINT, source_database STRING, owner STRING, table_name STRING, scn BIGINT, "
    "transaction_id STRING, reason STRING"
)
#: What a snapshot transaction may hold: rows, and a TRUNCATE saying a table was empty.
SNAPSHOT_COMMANDS = ("INSERT", "TRUNCATE")
TXN_ERRORS_DDL = (
    "silver_batch BIGINT, source_database STRING, transaction_id STRING, error STRING, "
    "failing_record STRING"
)


@dataclass
class SilverResult:
    batch: int | None = None
    bronze_from: int | None = None
    bronze_to: int | None = None
    tables: list[str] = field(default_factory=list)
    targets: list[dict] = field(default_factory=list)
    interpreted: bool = False  # whether the batch ran without generated code (``lakestreams.spark.interpreted``)
    #: A new batch read bronze up to its latest version: another batch in the same run would
    #: find nothing new (only a run holding the channel's lock writes bronze). A batch run
    #: again keeps its logged range, and bronze may hold more after it.
    drained: bool = False


def _t(channel: Channel, name: str) -> str:
    return channel.storage.table("silver", name)


def create_silver_tables(spark: SparkSession, channel: Channel) -> None:
    ledger_ddl = BRONZE_DDL + ", record_hash STRING, is_duplicate BOOLEAN, silver_batch BIGINT"
    create_missing_tables(spark, channel.storage, "silver", (
        ("runs", RUNS_DDL),
        ("ledger", ledger_ddl),
        ("transactions", TXN_DDL),
        ("dictionary", DICTIONARY_DDL),
        ("ddl_log", DDL_LOG_DDL),
        ("outcomes", OUTCOMES_DDL),
        ("txn_errors", TXN_ERRORS_DDL),
        ("targets", TARGETS_DDL),
        ("rule_outcomes", RULE_OUTCOMES_DDL),
        ("rebuilds", REBUILDS_DDL),
        ("reexecutions", REEXECUTIONS_DDL),
        ("snapshots", SNAPSHOTS_DDL),
        ("refreshes", REFRESHES_DDL),
    ))


def _latest_version(spark: SparkSession, table: str) -> int:
    # ``table`` is a Storage.table name (quoted, checked identifiers).
    return int(spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()["version"])


def unfinished_rebuild(spark: SparkSession, channel: Channel):
    """The logged scope row of a rebuild that has not finished, if any (one row: metadata)."""
    name = _t(channel, "rebuilds").replace("`", "")
    if not spark.catalog.tableExists(name):
        return None
    rebuilds = spark.table(name)
    # One scan: per batch, its scope row and whether a done row follows it.
    per_batch = rebuilds.groupBy("batch").agg(
        F.max(F.when(F.col("state") == "scope", F.struct(*rebuilds.columns))).alias("_scope"),
        F.max(F.col("state") == "done").alias("_done"))
    return per_batch.where(F.col("_scope").isNotNull() & ~F.col("_done")).orderBy("batch").select("_scope.*").first()


#: Requests of the re-derivation log that re-execute error transactions (the others rebuild a table).
EXECUTE_ERROR, EXECUTE_ALL_ERRORS = "execute_error", "execute_all_errors"
RETRY_CONFLICTS, RETRY_PENDING = "retry_conflicts", "retry_pending"


def retry_request(plan_id: int) -> str:
    """The logged request that re-executes the conflicts plan ``plan_id`` explained."""
    return f"{RETRY_CONFLICTS} {plan_id}"


def retry_pending_request(last_batch: int) -> str:
    """The logged request that re-executes, before a plan, the conflicts that the silver
    batches waiting up to ``last_batch`` explain."""
    return f"{RETRY_PENDING} {last_batch}"


def is_retry(request: str) -> bool:
    return request.split(" ")[0] in (RETRY_CONFLICTS, RETRY_PENDING)


def execute_error_request(source_database: str, transaction_id: str) -> str:
    """The logged request that re-executes one error transaction (``*``: source not known)."""
    return f"{EXECUTE_ERROR} {source_database} {transaction_id}"


def executed_transaction(request: str) -> tuple[str, str] | None:
    """(source database, transaction id) of a one-transaction re-execution request."""
    words = request.split(" ")
    return (words[1], words[2]) if words[0] == EXECUTE_ERROR else None


def finish_command(request: str) -> str:
    """The command that finishes a logged rebuild or re-execution request."""
    if request == EXECUTE_ALL_ERRORS:
        return "lakestreams errors execute --all"
    if is_retry(request):
        return "lakestreams run"
    one = executed_transaction(request)
    if one is not None:
        return f"lakestreams errors execute {one[1]} --source-database {one[0]}"
    table, _, src = request.partition("@")
    return f"lakestreams rebuild {table}" + (f" --source-database {src}" if src else "")


def describe_request(request: str) -> str:
    if request == EXECUTE_ALL_ERRORS:
        return "the re-execution of all error transactions"
    if request.split(" ")[0] == RETRY_PENDING:
        return f"the re-execution of the conflicts silver batches up to {request.split(' ')[1]} explained"
    if is_retry(request):
        return f"the re-execution of the conflicts plan {request.split(' ')[1]} explained"
    one = executed_transaction(request)
    if one is not None:
        return f"the re-execution of {one[1]}" + ("" if one[0] == "*" else f" from {one[0]}")
    return f"the rebuild of {request}"


def refuse_during_rebuild(spark: SparkSession, channel: Channel, what: str) -> None:
    """New batches and plans wait while a rebuild or re-execution has cleared what it has
    not re-derived yet."""
    pending = unfinished_rebuild(spark, channel)
    if pending is not None:
        raise ReplicationError(
            f"{what} waits: {describe_request(pending['request'])} (silver batch {pending['batch']}) did not finish; "
            f"run `{finish_command(pending['request'])}` again to finish it"
        )


def batch_state(spark: SparkSession, channel: Channel) -> tuple[tuple[int, int, int] | None, int, int]:
    """(the unfinished batch and its bronze range, if any; the last batch number; the last
    bronze version read). One row per silver batch: metadata."""
    runs = spark.table(_t(channel, "runs").replace("`", ""))
    state = runs.groupBy("silver_batch", "bronze_from", "bronze_to").agg(
        F.max(F.when(F.col("state") == "done", 1).otherwise(0)).alias("done")
    )
    # One row, one query: the first batch not done (a struct orders by its first field), the
    # last batch and the last bronze version.
    last = state.agg(
        F.min(F.when(F.col("done") == 0, F.struct("silver_batch", "bronze_from", "bronze_to"))).alias("u"),
        F.max("silver_batch").alias("b"), F.max("bronze_to").alias("v"),
    ).first()
    unfinished = last["u"]
    open_batch = None
    if unfinished is not None:
        open_batch = int(unfinished["silver_batch"]), int(unfinished["bronze_from"]), int(unfinished["bronze_to"])
    return open_batch, int(last["b"] or 0), int(last["v"] or 0)


def _open_batch(spark: SparkSession, channel: Channel, rebuild_clear: bool = False) -> tuple[int, int, int, bool] | None:
    """The batch to run: an unfinished one again, else the next over new bronze versions;
    with whether it is new (it then reads bronze up to its latest version). ``rebuild_clear``:
    the caller, holding the channel's lock, found no rebuild or re-execution unfinished."""
    if not rebuild_clear:
        refuse_during_rebuild(spark, channel, "silver")
    unfinished, last_batch, last_to = batch_state(spark, channel)
    if unfinished is not None:
        return (*unfinished, False)
    latest = _latest_version(spark, channel.storage.table("bronze", BRONZE_TABLE))
    if latest <= last_to:
        return None
    batch = last_batch + 1
    log_state(spark, _t(channel, "runs"), (batch, last_to + 1, latest, "started"), RUN_ROW, "silver.runs.start", batch)
    return batch, last_to + 1, latest, True


#: New records whose hashes are broadcast to find them among the ledger's earlier records.
LEDGER_BROADCAST_ROWS = 100_000


def _ledger_step(spark: SparkSession, channel: Channel, batch: int, lo: int, hi: int) -> tuple[DataFrame, int]:
    """The batch's records in the ledger, duplicates marked, and how many records the batch
    has (counted up to the larger of ``LEDGER_BROADCAST_ROWS`` and ``interpreted_records()``, plus one)."""
    ledger_name = _t(channel, "ledger")
    new = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", lo)
        .option("endingVersion", hi)
        .table(channel.storage.table("bronze", BRONZE_TABLE).replace("`", ""))
        .where("_change_type = 'insert'")
        .select(*BRONZE_COLUMNS)
        .withColumn("record_hash", record_hash())
    )
    # Records an earlier batch holds. A batch of up to LEDGER_BROADCAST_ROWS records has
    # its hashes broadcast to the ledger's scan, not every earlier hash made distinct (a
    # shuffle that grew with history). A bigger one (a first load) costs more to broadcast,
    # or to read twice, than that shuffle. The batch is counted only as far as these two
    # choices need, in the same job as the range of its commit SCNs: one row, no records.
    hashes = new.select("record_hash")
    earlier = spark.table(ledger_name.replace("`", "")).where(f"silver_batch < {batch}")
    size, lo_scn, hi_scn, no_scn = new.limit(max(LEDGER_BROADCAST_ROWS, interpreted_records()) + 1).agg(
        F.count("*"), F.min("commit_scn"), F.max("commit_scn"), F.max(F.col("commit_scn").isNull())).first()
    if size <= LEDGER_BROADCAST_ROWS:
        # A copy of a record has its commit SCN (the hash covers it): only the ledger files
        # whose statistics overlap the batch's range, or that hold records without one, are
        # read. Records land about in SCN order, so new changes skip the history's files.
        ranges = [] if lo_scn is None else [F.col("commit_scn").between(F.lit(lo_scn), F.lit(hi_scn))]
        ranges += [F.col("commit_scn").isNull()] if no_scn else []
        earlier = earlier.where(reduce(Column.__or__, ranges) if ranges else F.lit(False)).select("record_hash")
        seen = earlier.join(F.broadcast(hashes), "record_hash", "left_semi").distinct()
    else:
        seen = earlier.select("record_hash").distinct()
    w = Window.partitionBy("record_hash").orderBy("_ingest_batch", "_source_file", "raw")
    marked = (
        new.join(seen.withColumn("_seen", F.lit(True)), "record_hash", "left")
        .withColumn("is_duplicate", F.col("_seen").isNotNull() | (F.row_number().over(w) > 1))
        .drop("_seen")
        .withColumn("silver_batch", F.lit(batch).cast("bigint"))
    )
    append(marked, ledger_name, "silver.ledger", batch)
    return spark.table(ledger_name.replace("`", "")).where(f"silver_batch = {batch}"), size


def _transactions_step(spark: SparkSession, channel: Channel, batch: int, new: DataFrame, ledger: DataFrame) -> DataFrame:
    """Transactions that became complete in this batch: COMMIT/ROLLBACK seen; a COMMIT
    with ``event_count`` once that many of its records have landed too (they may land
    after it); the whole file; a snapshot once its last row has landed. ``ledger``: read
    from the first batch that can hold a waiting transaction's record (``open_from``)."""
    fresh = new.where("NOT is_duplicate")
    control = fresh.where(
        is_control_record() & F.col("command_type").isin("COMMIT", "ROLLBACK") & F.col("event_count").isNull()
    ).select(
        "source_database",
        "transaction_id",
        F.when(F.col("command_type") == "COMMIT", "COMMITTED").otherwise("ROLLED_BACK").alias("status"),
        "commit_scn",
        "commit_time",
    )
    whole = (
        fresh.where(F.col("_txn_mode").isin("whole_file", "snapshot_end"))
        .groupBy("source_database", "transaction_id")
        .agg(F.max("commit_scn").alias("commit_scn"), F.max("commit_time").alias("commit_time"))
        .select("source_database", "transaction_id", F.lit("COMMITTED").alias("status"), "commit_scn", "commit_time")
    )
    txn_name = _t(channel, "transactions")
    known = spark.table(txn_name.replace("`", "")).where(f"released_batch < {batch}").select(
        "source_database", "transaction_id"
    )
    counted = _counted_commits(spark, ledger, known)
    w = Window.partitionBy("source_database", "transaction_id").orderBy(F.col("status").desc(), "commit_scn")
    complete = (
        control.unionByName(whole).unionByName(counted)
        .withColumn("_n", F.row_number().over(w))
        .where("_n = 1")
        .drop("_n")
        .join(known, ["source_database", "transaction_id"], "left_anti")
        .withColumn("released_batch", F.lit(batch).cast("bigint"))
    )
    append(complete, txn_name, "silver.transactions", batch)
    return spark.table(txn_name.replace("`", "")).where(f"released_batch = {batch}")


#: What ``_counted_commits`` returns: transactions its COMMIT's count completes.
COUNTED_COMMITS = "source_database STRING, transaction_id STRING, status STRING, commit_scn BIGINT, commit_time TIMESTAMP"


def open_from(spark: SparkSession, channel: Channel, below: int | None = None) -> int:
    """The first silver batch that can hold a record of a transaction not released yet, as
    the last batch done (below ``below``) found it; 0 (the whole ledger) before any did.
    It only grows: a later batch releases transactions and adds records after it. One
    number from the run log (a row per batch: metadata)."""
    runs = spark.table(_t(channel, "runs").replace("`", ""))
    if "open_from" not in runs.columns:  # a log written before the bound was kept
        return 0
    done = runs.where(F.col("state") == "done")
    if below is not None:
        done = done.where(F.col("silver_batch") < below)
    return int(done.agg(F.max("open_from")).first()[0] or 0)


def first_open_batch(ledger: DataFrame, transactions: DataFrame, batch: int) -> int:
    """The first batch of ``ledger`` (read from the last bound on) holding a record whose
    transaction is not released, after ``batch``; ``batch + 1`` if none is. Every
    transaction ever released is looked at: a record landed after its transaction was
    released is late, not waiting. One number, no rows."""
    keys = ["source_database", "transaction_id"]
    waiting = ledger.where("NOT is_duplicate").join(transactions.select(*keys), keys, "left_anti")
    first = waiting.agg(F.min("silver_batch")).first()[0]
    return batch + 1 if first is None else int(first)


def _counted_commits(spark: SparkSession, ledger: DataFrame, known: DataFrame) -> DataFrame:
    """COMMIT records with ``event_count`` (Debezium END events) whose transaction is not
    released yet and now has that many records landed, whatever the order they landed in.
    The commit SCN and time come from the records where the COMMIT does not carry them.
    Such a transaction is waiting: its records, the COMMIT too, lie in ``ledger`` (read
    from the bound, ``open_from``)."""
    ledger = ledger.where(~F.col("is_duplicate"))
    keys = ["source_database", "transaction_id"]
    counting = ledger.where((F.col("command_type") == "COMMIT") & F.col("event_count").isNotNull() & is_control_record())
    # A channel that never landed such a COMMIT (most) pays one count, in which Delta skips
    # every ledger file by its null count of event_count, not two scans of the ledger.
    if counting.limit(1).count() == 0:  # one number, no rows
        return local_rows(spark, [], COUNTED_COMMITS)
    commits = (
        counting
        .join(known, keys, "left_anti")
        .groupBy(*keys)
        .agg(F.max("event_count").alias("_expected"), F.max("commit_scn").alias("_scn"), F.max("commit_time").alias("_time"))
    )
    landed = (
        ledger.where(~is_control_record())
        .join(commits.select(*keys), keys, "left_semi")
        .groupBy(*keys)
        .agg(F.count(F.lit(1)).alias("_landed"), F.max("commit_scn").alias("_rscn"), F.max("commit_time").alias("_rtime"))
    )
    return commits.join(landed, keys, "left").where(F.coalesce("_landed", F.lit(0)) >= F.col("_expected")).select(
        *keys, F.lit("COMMITTED").alias("status"), F.coalesce("_scn", "_rscn").alias("commit_scn"),
        F.coalesce("_time", "_rtime").alias("commit_time"),
    )


def late_errors(records: DataFrame, transactions: DataFrame, batch: int) -> DataFrame:
    """Records that landed after their transaction was released cannot join it any more:
    the transaction was applied without them. They go to the error queue, never lost."""
    late = records.where("NOT is_duplicate").join(
        transactions.select("source_database", "transaction_id", "released_batch"), ["source_database", "transaction_id"]
    ).where(F.col("silver_batch") > F.col("released_batch"))
    return late.select(
        F.lit(batch).cast("bigint").alias("silver_batch"),
        "source_database",
        "transaction_id",
        F.concat(
            F.lit("record landed after its transaction was complete (released in silver batch "),
            F.col("released_batch").cast("string"),
            F.lit("); the transaction was applied without it"),
        ).alias("error"),
        F.col("raw").alias("failing_record"),
    )


def _dictionary_step(
    spark: SparkSession, channel: Channel, batch: int, ddl: DataFrame, clients: list[Client],
) -> tuple[dict[tuple[str, str, str], list[Revision]], dict[tuple[str, str, str], frozenset[str]]]:
    """Read released DDL records (few: they grow with DDL, not rows) in SCN order into new
    dictionary revisions, and log each with its AdaptDDL decision. The revisions before
    this batch are the starting point, so a re-run derives the same rows. Returns the
    revisions and the (source database, owner, table) whose rows a record removed, each
    with the targets ("OWNER.NAME") whose rows every such record of the batch left."""
    rows = ddl.select(
        "source_database", "transaction_id", "scn", "commit_scn", "position", "command_type",
        "object_owner", "object_name", "ddl_text", "current_schema", "commit_time", "tag", "raw", "_discard",
    ).orderBy("source_database", "commit_scn", "transaction_id", "position").collect()  # DDL records: metadata
    revisions = load_revisions(spark, channel, before_batch=batch)
    actions, policy = channel.adapt_actions(), channel.types.number_without_precision
    declared = declared_tables(channel)
    dict_rows, log_rows, discards, reloads = [], [], [], []
    truncated: dict[tuple[str, str, str], frozenset[str]] = {}
    for r in rows:
        src, scn = r["source_database"], r["commit_scn"]
        history = {(o, n): revs for (s, o, n), revs in revisions.items() if s == src}
        # A channel's last table is the channel's, not one source database's.
        elsewhere = any(s != src and in_channel(revs) for (s, _, _), revs in revisions.items())
        owner = r["object_owner"] or r["current_schema"]
        read = read_ddl(history, r["ddl_text"], scn, owner, actions, policy, elsewhere, r["current_schema"],
                        frozenset((o, n) for s, o, n in declared if s == src))
        try:
            if read.outside:
                # A table outside the channel has no target: nothing to process or apply.
                done = Processed(read)
            elif r["_discard"] is not None:
                # The apply rules discard this DDL LCR: the target does not take it (the
                # source dictionary does), and no DDL processing sees it.
                done = Processed(not_followed(read, f"discarded by the rules: {r['_discard']}"))
            else:
                integrate = action_for(actions, owner)
                done = process_ddl(read, r["ddl_text"], r["tag"], owner, channel.ddl_processing, policy,
                                   integrate.integrate_schema if integrate else None, partial(rule_renamed, clients, src))
        except DdlAbend as e:
            raise DdlAbend(f"DDL record of transaction {r['transaction_id']} from {src} at SCN {scn} "
                           f"stops silver batch {batch}: {e}", e.failure, e.record) from e
        read = done.reading
        if read.truncates is not None:
            key, left = (src, *read.truncates), frozenset(read.truncates_excluded)
            truncated[key] = truncated.get(key, left) & left
        if read.reloads is not None:
            reloads.append((batch, src, *read.reloads, scn, r["transaction_id"], read.reason))
        if done.discard is not None:
            discards.append((batch, src, r["transaction_id"], f"DDL discarded: {done.discard}", r["raw"]))
        for (owner, name), rev in read.revisions:
            revisions.setdefault((src, owner, name), []).append(rev)
            d = table_def_to_row(rev.table)
            d.update(
                owner=owner, table_name=name, source_database=src, revision_scn=rev.scn, ddl_text=r["ddl_text"],
                transaction_id=r["transaction_id"], silver_batch=batch, status=rev.status,
                renames=dict(rev.renames), target_decision=rev.decision, keep_structure=rev.keep_structure,
                excluded_targets=list(rev.excluded),
            )
            dict_rows.append(d)
        made = ", ".join(f"{o}.{n} {rev.status.lower()} at SCN {rev.scn}" for (o, n), rev in read.revisions)
        outcome = f"{read.decision}: {read.reason}" + (f" (dictionary: {made})" if made else "")
        log_rows.append((
            src, r["transaction_id"], r["scn"], r["commit_scn"], r["command_type"], r["object_owner"],
            r["object_name"], r["ddl_text"], outcome, batch, read.statement, read.decision, read.reason,
            scn if read.revisions else None, r["position"], r["commit_time"],
            *(read.truncates or (None, None)), done.scope, done.outcome, list(done.target_ddl),
            list(read.truncates_excluded),
        ))
    if dict_rows:
        # Which columns are virtual, and the targets a record left out, came later: a
        # dictionary written before takes the fields by schema merging.
        append(local_rows(spark, dict_rows, DICTIONARY_DDL), _t(channel, "dictionary"), "silver.dictionary", batch,
               merge_schema=True)
    if log_rows:
        # The targets a TRUNCATE leaves came later: a log written before takes the field by
        # schema merging.
        append(local_rows(spark, log_rows, DDL_LOG_DDL), _t(channel, "ddl_log"), "silver.ddl_log", batch,
               merge_schema=True)
    if reloads:
        append(local_rows(spark, reloads, REFRESHES_DDL), _t(channel, "refreshes"), "silver.refreshes", batch)
    if discards:
        append(local_rows(spark, discards, TXN_ERRORS_DDL), _t(channel, "txn_errors"), "silver.txn_errors.ddl",
               batch)
    return revisions, truncated


def load_revisions(
    spark: SparkSession, channel: Channel, before_batch: int | None = None
) -> dict[tuple[str, str, str], list[Revision]]:
    """Every revision of every source table by SCN, keyed by (source_database, owner,
    table); ``before_batch``: only those earlier batches made. Tables the channel file
    declares serve (as a first revision) until a CREATE TABLE record says otherwise.
    Metadata: the rows grow with DDL, not with changes."""
    table = spark.table(_t(channel, "dictionary").replace("`", ""))
    if before_batch is not None:
        table = table.where(F.col("silver_batch") < F.lit(before_batch))
    out: dict[tuple[str, str, str], list[Revision]] = {}
    # Dictionary rows: one per DDL that changed a table (metadata), never change rows.
    for r in table.orderBy("revision_scn", "silver_batch").collect():
        out.setdefault((r["source_database"], r["owner"], r["table_name"]), []).append(Revision(
            r["revision_scn"], table_def_from_row(r), r["status"] or "TABLE",
            tuple(sorted((r["renames"] or {}).items())), r["target_decision"] or "ADD", bool(r["keep_structure"]),
            tuple(r.asDict().get("excluded_targets") or ()),  # not kept before: none
        ))
    for key, t in declared_tables(channel).items():
        revs = out.setdefault(key, [Revision(-1, t, decision=DECLARED)])
        if revs[-1].decision == OUTSIDE and revs[-1].status == "TABLE":
            # Declared after no AddTablePattern added it: in the channel from here on.
            revs[-1] = dataclasses.replace(revs[-1], decision="ADD")
    return out


def declared_tables(channel: Channel) -> dict[tuple[str, str, str], TableDef]:
    """The tables the channel file defines, keyed by (source_database, owner, table)."""
    out = {}
    for spec in channel.tables:
        t = parse_create_table(spec.ddl, channel.types.number_without_precision)
        out.setdefault((spec.source_database, t.owner, t.name), t)
    return out


def create_change_table(
    spark: SparkSession, channel: Channel, name: str, table: TableDef, revisions: list[Revision] | None = None,
    batch: int = 0,
) -> str:
    """The change table of a target, created with ``table``'s columns or made to follow
    them (``revisions``: its source table's, for renames). A change table keeps every
    column it ever had: a dropped column stops being filled."""
    qualified = _t(channel, name)
    if not spark.catalog.tableExists(qualified.replace("`", "")):
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {qualified} ({change_table_ddl(table)}) USING DELTA "
            "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true')"
        )
        if revisions:
            mark_structure(spark, qualified, revisions[-1].scn)
    elif revisions:
        follow_structure(spark, qualified, table, revisions, f"silver.{name}", ("_old", "_new"))
    return qualified


def released_records(ledger: DataFrame, transactions: DataFrame) -> DataFrame:
    """The records of complete transactions, as silver evaluates them: not duplicates, not
    landed after their transaction was released, with the transaction's commit SCN/time."""
    txns = transactions.select(
        "source_database", "transaction_id", "status", "released_batch",
        F.col("commit_scn").alias("_txn_commit_scn"), F.col("commit_time").alias("_txn_commit_time"),
    )
    return (
        ledger.where("NOT is_duplicate")
        .join(txns, ["source_database", "transaction_id"])
        .where(F.col("silver_batch") <= F.col("released_batch"))
        # The COMMIT record (or the whole file) fixes the transaction's commit SCN and time.
        .withColumn("_record_commit_scn", F.col("commit_scn"))
        .withColumn("commit_scn", F.coalesce("_txn_commit_scn", "commit_scn"))
        .withColumn("commit_time", F.coalesce("_txn_commit_time", "commit_time"))
    )


def inconsistent_records(released: DataFrame, batch: int) -> DataFrame:
    """Records that contradict their own transaction: a commit SCN other than the one
    the transaction committed at, or an SCN below that of an earlier position (SCNs do
    not go backwards inside a transaction). The transaction cannot be trusted: it goes
    to the error queue whole."""
    w = Window.partitionBy("source_database", "transaction_id").orderBy("position")
    rows = released.where(~is_control_record() & ~is_ddl_lcr() & (F.col("status") == "COMMITTED"))
    earlier_scn = F.max("scn").over(w.rowsBetween(Window.unboundedPreceding, -1))
    error = (
        F.when(
            F.col("_record_commit_scn") != F.col("commit_scn"),
            F.concat(F.lit("record at position "), F.col("position").cast("string"), F.lit(" carries commit SCN "),
                     F.col("_record_commit_scn").cast("string"), F.lit(" but its transaction committed at SCN "),
                     F.col("commit_scn").cast("string"), F.lit(": the records of one transaction disagree")),
        ).when(
            F.col("scn") < earlier_scn,
            F.concat(F.lit("SCN goes backwards inside the transaction: position "), F.col("position").cast("string"),
                     F.lit(" has SCN "), F.col("scn").cast("string"), F.lit(" below "), earlier_scn.cast("string"),
                     F.lit(" of an earlier position")),
        )
    )
    return rows.withColumn("error", error).where(F.col("error").isNotNull()).select(
        F.lit(batch).cast("bigint").alias("silver_batch"), "source_database", "transaction_id", "error",
        F.col("raw").alias("failing_record"), "position",
    )


def without_inconsistent(released: DataFrame, batch: int) -> tuple[DataFrame, DataFrame]:
    """(released records less those that contradict their transaction, their errors with
    ``position``, persisted: the caller appends them and unpersists). A record in
    ``txn_errors`` reaches no change table, so it is counted once, as an error."""
    bad = inconsistent_records(released, batch).persist()
    keys = ["source_database", "transaction_id", "position"]
    return released.join(bad.select(*keys), keys, "left_anti"), bad


def classify(released: DataFrame, clients: list[Client]) -> DataFrame:
    """Rules over released records, then one bucket per record (with the reason)."""
    return (
        evaluate(released, clients)
        .withColumn(
            "_bucket",
            F.when(is_control_record(), "control")
            .when(F.col("status") == "ROLLED_BACK", "rolled_back")
            .when(is_ddl_lcr(), "ddl")
            .when(F.col("_rule_error").isNotNull(), "rule_error")
            .when(F.col("_discard").isNotNull(), "discarded")
            .otherwise("accepted"),
        )
        .withColumn("_reason", F.when(F.col("_bucket").isin("discarded", "ddl"), F.col("_discard")))
    )


def rule_outcomes(classified: DataFrame, clients: list[Client], batch: int) -> DataFrame:
    """Per client and rule: records kept or discarded, and row migrations, by table."""
    judged = classified.where(F.col("_bucket").isin("ddl", "rule_error", "discarded", "accepted"))
    parts = []
    earlier: list[str] = []
    for c in clients:
        t = c.streams_type
        seen = judged
        for e in earlier:  # a client never sees what an earlier client discarded
            seen = seen.where(F.col("_discarded_by").isNull() | (F.col("_discarded_by") != e))
        earlier.append(t)
        parts.append(
            seen.select(
                F.lit(t).alias("streams_type"), F.lit(c.name).alias("streams_name"),
                F.coalesce(F.col(f"_rule_{t}"), F.lit("(no rule)")).alias("rule_name"),
                F.when((F.col("_discarded_by") == t) & (F.col("_bucket") == "rule_error"), "error")
                .when(F.col("_discarded_by") == t, "discarded").otherwise("kept").alias("outcome"),
                F.when(F.col("_migrated_by") == t, F.concat(F.col("_migrated_from"), F.lit(" -> "), F.col("command_type")))
                .alias("migration"),
                "source_database", F.col("_source_owner").alias("owner"), F.col("_source_name").alias("table_name"),
            )
        )
    if not parts:
        return local_rows(judged.sparkSession, [], RULE_OUTCOMES_DDL)
    return (
        reduce(DataFrame.unionByName, parts)
        .groupBy("streams_type", "streams_name", "rule_name", "outcome", "migration", "source_database", "owner",
                 "table_name")
        .count()
        .select(F.lit(batch).cast("bigint").alias("batch"), "streams_type", "streams_name", "rule_name", "outcome",
                "migration", "source_database", "owner", "table_name", F.col("count").alias("records"))
    )


_GROUP = ("source_database", "_source_owner", "_source_name", "object_owner", "object_name", "_rule_capture",
          "_rule_apply")


def _any_group(groups: list[tuple]) -> F.Column:
    cond = F.lit(False)
    for g in groups:
        cond = cond | reduce(lambda a, b: a & b, [F.col(c).eqNullSafe(F.lit(v)) for c, v in zip(_GROUP, g, strict=True)])
    return cond


def _resolve_targets(
    channel: Channel, clients: list[Client], revisions: dict, accepted: DataFrame, registry: list,
    follow_ddl: bool = True,
):
    """Target structure per (source database, target table): the source definition with
    the transformations of the rules that kept the rows, named by ``target_names`` (rule
    renames, then MAP targets, then IntegrateSchema), as that target followed the source
    table's ``revisions`` (``for_target``). Few rows: one per rule path. ``follow_ddl``: a
    registered structure that is one of the target's earlier ones changed by DDL, and the
    tables follow.

    A path is refused (its transactions go to the error queue) when its target name is
    not a plain name, when its change table or gold table would be shared with another
    target or source table, or when its structure differs from what that table holds for
    another reason than DDL (a changed rule or key)."""
    by_type = {c.streams_type: c for c in clients}
    substitute_keys = {(k.owner, k.table): k.columns for k in channel.keys}
    policy = channel.types.number_without_precision
    known_tables = {cname: (src, sowner, sname, tdef) for src, sowner, sname, tdef, cname in registry}
    known_models = {target_model_name(t.owner, t.name): ((t.owner, t.name), t) for _, _, _, t, _ in registry}
    # One row per (source object, rule path): grows with tables and rules, not rows.
    paths = [tuple(r) for r in accepted.select(*_GROUP).distinct().collect()]
    targets: dict[tuple[str, str, str], tuple] = {}
    errors: list[tuple[list[tuple], str]] = []

    def shaper(owner: str, name: str, cap_rule: str | None, app_rule: str | None):
        def shape(source: TableDef) -> TableDef:
            tdef = source
            for t, rule in (("capture", cap_rule), ("apply", app_rule)):
                c = by_type.get(t)
                if c is not None and rule is not None:
                    tdef = transform_table_def(tdef, [x for x in c.transformations if x.rule == rule], policy)
            tdef = dataclasses.replace(tdef, owner=owner, name=name)
            substitute = substitute_keys.get((owner, name))
            if substitute is not None:
                names = [c.name for c in tdef.columns]
                missing = [c for c in substitute if c not in names]
                if missing:
                    raise ReplicationError(
                        f"the substitute key of {owner}.{name} names {', '.join(missing)}, which it does not have "
                        f"(columns: {', '.join(names)})"
                    )
                virtual = [c for c in substitute if tdef.column(c).virtual]
                if virtual:
                    # No change record carries a virtual column: no row could be found by it.
                    raise ReplicationError(
                        f"the substitute key of {owner}.{name} names {', '.join(virtual)}, a virtual column that no "
                        f"change record carries"
                    )
                tdef = dataclasses.replace(tdef, key_columns=substitute, key_kind="SUBSTITUTE KEY")
            return tdef
        return shape

    def add_target(g: tuple, revs: list[Revision], owner: str, name: str) -> str | None:
        """Add path ``g`` to target ``owner.name``; else why it cannot go there."""
        src, sowner, sname, _, _, cap_rule, app_rule = g
        if not all(isinstance(n, str) and SAFE_NAME.fullmatch(n) for n in (owner, name)):
            return f"a transformation or MAP named the target of {sowner}.{sname} {owner!r}.{name!r}, which is not a plain name"
        shape = shaper(owner, name, cap_rule, app_rule)
        structures = target_structures(for_target(revs, (owner, name)))
        try:
            tdef = shape(structures[-1])
            before = [shape(t) for t in structures[:-1]] if follow_ddl else []
        except ReplicationError as e:
            return str(e)
        key, cname, model = (src, owner, name), change_table_name(src, owner, name), target_model_name(owner, name)
        held = known_tables.get(cname)
        by_ddl = held is not None and held[3] in before
        if held is not None and held[:3] != (src, sowner, sname):
            return f"change table {cname} already holds {held[1]}.{held[2]} from {held[0]}"
        if held is not None and held[3] != tdef and not by_ddl:
            return (f"{owner}.{name} from {src} now has another structure (columns or key) than its change table "
                    f"{cname}: a changed rule or key takes effect through `lakestreams rebuild {owner}.{name}`")
        if model in known_models and known_models[model][0] != (owner, name):
            return f"gold table {model} already replicates {'.'.join(known_models[model][0])}"
        if model in known_models and known_models[model][1] != tdef and not (
                by_ddl and known_models[model][1] == held[3]):
            return f"{owner}.{name} from {src} has another structure than gold table {model} has from another source"
        if key in targets and (targets[key][0] != tdef or targets[key][2] != (sowner, sname)):
            return (f"{sowner}.{sname} from {src} reaches {owner}.{name} with another structure or from another "
                    f"source table than {targets[key][2][0]}.{targets[key][2][1]}")
        if key in targets:
            targets[key][1].append(g)
        else:
            targets[key] = (tdef, [g], (sowner, sname), shape)
            known_tables[cname] = (src, sowner, sname, tdef)
            known_models[model] = ((owner, name), tdef)
        return None

    for g in sorted(paths, key=lambda g: tuple("" if v is None else v for v in g)):
        src, sowner, sname, renamed_owner, renamed, cap_rule, app_rule = g
        revs = revisions.get((src, sowner, sname))
        if not revs:
            errors.append(([g], f"table {sowner}.{sname} is not in the source dictionary of {src} "
                                "(no CREATE TABLE record seen)"))
            continue
        for owner, name in target_names(channel, sowner, renamed_owner, renamed):
            problem = add_target(g, revs, owner, name)
            if problem is not None:
                errors.append(([g], problem))
    return targets, errors


def load_targets(spark: SparkSession, channel: Channel) -> list[tuple[str, str, str, TableDef, str]]:
    """Latest target structure per change table: (source db, source owner, source table,
    target definition, change table). Metadata: one row per target and source."""
    w = Window.partitionBy("change_table").orderBy(F.col("silver_batch").desc())
    rows = (
        spark.table(_t(channel, "targets").replace("`", ""))
        .withColumn("_n", F.row_number().over(w)).where("_n = 1").collect()
    )
    return sorted(
        ((r["source_database"], r["source_owner"], r["source_table"], table_def_from_row(r), r["change_table"])
         for r in rows),
        key=lambda t: (t[0], t[1], t[2], t[4]),  # a TableDef has no order
    )


def load_revision_defaults(spark: SparkSession, channel: Channel, change_tables: list[str]) -> dict[str, list]:
    """Per change table of ``change_tables``, the target's defaults per revision from its
    latest registry row that has them (``revision_default_rows`` elements; a table missing
    here was registered before they were kept). Metadata: one row per change table."""
    table = spark.table(_t(channel, "targets").replace("`", ""))
    if "revision_defaults" not in table.columns or not change_tables:
        return {}
    w = Window.partitionBy("change_table").orderBy(F.col("silver_batch").desc())
    rows = (table.where(F.col("change_table").isin(change_tables) & F.col("revision_defaults").isNotNull())
            .withColumn("_n", F.row_number().over(w)).where("_n = 1").select("change_table", "revision_defaults")
            .collect())
    return {r["change_table"]: r["revision_defaults"] for r in rows}


def _truncate_only(
    spark: SparkSession, channel: Channel, batch: int, table: tuple[str, str, str], tdef: TableDef, cname: str,
    revisions: dict, result: SilverResult,
) -> None:
    """The TRUNCATE change of a table a DDL record emptied in a batch without its rows:
    laid out as its change table is (the change holds no values), registered as written."""
    src, sowner, sname = table
    qualified = _t(channel, cname)
    rows = truncations(spark, channel, batch, src, (sowner, sname), (tdef.owner, tdef.name))
    revs = for_target(revisions[table], (tdef.owner, tdef.name))
    typed, _ = typed_by_revision(rows, revs, target_structures(revs), lambda _: tdef, batch,
                                 spark.table(qualified.replace("`", "")).schema)
    with step("silver.change_table"):
        append(typed, qualified, f"silver.{cname}", batch)
    _register(result, tdef, table, cname, batch)


def _register(result: SilverResult, tdef: TableDef, table: tuple[str, str, str], cname: str, batch: int,
              default_rows: list[dict] | None = None) -> None:
    """Note change table ``cname`` (of source ``table``, with target ``tdef``) as written
    by ``batch``: its ``silver.targets`` row, which tells gold it has work. ``default_rows``:
    the target's defaults per revision (``revision_default_rows``); None when the batch
    wrote no values (the apply then reads those of an earlier row)."""
    row = table_def_to_row(tdef)
    row.update(source_database=table[0], source_owner=table[1], source_table=table[2], change_table=cname,
               silver_batch=batch, revision_defaults=default_rows)
    result.tables.append(cname)
    result.targets.append(row)


def derive(
    spark: SparkSession, channel: Channel, batch: int, classified: DataFrame, clients: list[Client],
    revisions: dict[tuple[str, str, str], list[Revision]], result: SilverResult,
    truncated: Mapping[tuple[str, str, str], frozenset[str]] | None = None,
) -> None:
    """What silver writes for classified records, but the dictionary: rule outcomes, change
    tables and their registry rows, transaction errors and bucket outcomes, all as ``batch``.
    ``truncated``: source tables a DDL record of ``batch`` emptied, with the targets every
    such record left (``_dictionary_step``); the other targets' change tables get the
    TRUNCATE change even when no row of the table came in this batch."""
    with step("silver.rule_outcomes"):
        append_rows(rule_outcomes(classified, clients, batch), _t(channel, "rule_outcomes"), "silver.rule_outcomes", batch)
    outside = outside_channel(revisions)
    if outside is not None:
        # Kept by the rules, but of a table outside the channel at its SCN (no AddTablePattern
        # added it): discarded, with the reason.
        dropped = (F.col("_bucket") == "accepted") & outside
        classified = classified.withColumns({
            "_bucket": F.when(dropped, F.lit("discarded")).otherwise(F.col("_bucket")),
            "_reason": F.when(dropped, F.concat(
                F.col("_source_owner"), F.lit("."), F.col("_source_name"),
                F.lit(" is not in the channel: no AdaptDDL AddTablePattern added it"))).otherwise(F.col("_reason")),
        })
    accepted = classified.where("_bucket = 'accepted'")
    snapshot_landings = [ld.name for ld in channel.landing if ld.snapshot]
    any_snapshots = bool(snapshot_landings) or any(ld.format in SNAPSHOT_MARKING_FORMATS for ld in channel.landing)
    # Records that do not belong in a snapshot go to the error queue, not a change table;
    # so do the rows of a snapshot below its table's ignore SCN (it would instantiate there).
    ignore = below_ignore_scn(channel)
    misfit = snapshot_misfits(snapshot_landings, ignore)
    errors = [
        classified.where("_bucket = 'rule_error'").select(
            F.lit(batch).cast("bigint").alias("silver_batch"), "source_database", "transaction_id",
            F.col("_rule_error").alias("error"), F.col("raw").alias("failing_record"),
        )
    ]
    registry = load_targets(spark, channel)
    handled: list[DataFrame] = []
    # Dropped tables too: changes committed before their DROP (in this very batch, say) are
    # replicated; one after it is read with the dropped revision and fails with its reason.
    targets, group_errors = _resolve_targets(channel, clients, revisions, accepted, registry)
    writes: list[tuple[DataFrame, str, str]] = []
    for (src, owner, name), (tdef, groups, source, shape) in sorted(targets.items()):
        cname = change_table_name(src, owner, name)
        revs = for_target(revisions[(src, *source)], (owner, name))
        structures = target_structures(revs)
        qualified = create_change_table(spark, channel, cname, tdef, revs, batch)
        rows = accepted.where(_any_group(groups) & ~misfit).select(*CHANGE_INPUT).unionByName(
            truncations(spark, channel, batch, src, source, (owner, name)))
        # The change table's schema, read once (its Delta log) for the typing and the defaults.
        schema = spark.table(qualified.replace("`", "")).schema
        segments, dropped = typed_by_revision(rows, revs, structures, shape, batch, schema)
        errors.append(dropped)
        typed, consumed = apply_dml_handlers(
            segments, [h for h in channel.dml_handlers if (h.owner, h.table) == (owner, name)], tdef)
        fields = schema["_new"].dataType.fieldNames()
        default_rows = revision_default_rows(revs, structures, shape, fields)
        writes.append((fill_defaults(typed, defaults_from_rows(default_rows)), qualified, cname))
        if consumed is not None:
            handled.append(consumed.select(
                "_source_database", "_transaction_id", F.lit(source[0]).alias("_owner"), F.lit(source[1]).alias("_table"),
                "_reason"))
        _register(result, tdef, (src, *source), cname, batch, default_rows)

    def write(w: tuple[DataFrame, str, str]) -> None:
        with step("silver.change_table"):
            append(w[0], w[1], f"silver.{w[2]}", batch)
        kill_point("silver.changes")

    # The change tables are written a few at a time: each small batch's write is mostly
    # the driver's Delta commit, which waits on the file system, not on the cores. Each
    # write is keyed by the batch, so a re-run after a kill writes only the ones missing.
    with ThreadPoolExecutor(max_workers=CHANGE_TABLE_THREADS) as pool:
        list(pool.map(write, writes))
    reached = {(src, *source) for (src, _, _), (_, _, source, _) in targets.items()}
    for src, sowner, sname, tdef, cname in registry:
        emptied = (truncated or {}).get((src, sowner, sname))
        if emptied is not None and (src, sowner, sname) not in reached and target_key((tdef.owner, tdef.name)) not in emptied:
            _truncate_only(spark, channel, batch, (src, sowner, sname), tdef, cname, revisions, result)
    if result.targets:
        # The column defaults (what an INSERT an error handler makes in the plan takes), and
        # then per revision, came later: a registry written before takes the fields by schema
        # merging.
        append(local_rows(spark, result.targets, TARGETS_DDL), _t(channel, "targets"), "silver.targets", batch,
               merge_schema=True)
    for groups, message in group_errors:
        errors.append(
            accepted.where(_any_group(groups) & ~misfit).select(
                F.lit(batch).cast("bigint").alias("silver_batch"), "source_database", "transaction_id",
                F.lit(message).alias("error"), F.col("raw").alias("failing_record"),
            )
        )
    if any_snapshots:
        errors.append(snapshot_errors(accepted.where(misfit), batch, ignore))
        with step("silver.snapshots"):
            append(snapshots(classified, snapshot_landings, batch, ignore), _t(channel, "snapshots"), "silver.snapshots",
                   batch)
    append_rows(reduce(DataFrame.unionByName, errors), _t(channel, "txn_errors"), "silver.txn_errors", batch)
    counted = classified.where("_bucket NOT IN ('accepted', 'rule_error')").select(
        "source_database", "transaction_id", "object_owner", "object_name", "_bucket", "_reason")
    for h in handled:  # changes a DML or error handler consumed: in no change table
        counted = counted.unionByName(h.select(
            F.col("_source_database").alias("source_database"), F.col("_transaction_id").alias("transaction_id"),
            F.col("_owner").alias("object_owner"), F.col("_table").alias("object_name"),
            F.lit("handled").alias("_bucket"), "_reason"))
    outcomes = (
        counted
        .groupBy("source_database", "transaction_id", "object_owner", "object_name", "_bucket", "_reason")
        .count()
        .select(
            F.lit(batch).cast("bigint").alias("batch"),
            F.lit("silver").alias("stage"),
            "source_database",
            "transaction_id",
            F.col("object_owner").alias("owner"),
            F.col("object_name").alias("table_name"),
            F.col("_bucket").alias("bucket"),
            F.col("_reason").alias("reason"),
            F.col("count").alias("records"),
        )
    )
    with step("silver.outcomes"):
        append_rows(outcomes, _t(channel, "outcomes"), "silver.outcomes", batch)


#: Change tables a silver batch writes at once.
CHANGE_TABLE_THREADS = 4


#: The record columns a change table is made from (``silver.changes.typed_by_revision``).
CHANGE_INPUT = ("source_database", "transaction_id", "scn", "commit_scn", "commit_time", "position", "command_type",
                "tag", "_migrated_from", "old_values", "new_values", "raw")


def ddl_made_changes(spark: SparkSession, channel: Channel) -> DataFrame:
    """The TRUNCATE changes DDL records made (``truncations``), by change-table identity
    (source, transaction, position): the DDL record counts them (bucket ``ddl``), so the
    plan's outcomes and what waits for gold leave them out. DDL-sized."""
    return spark.table(_t(channel, "ddl_log").replace("`", "")).where(F.col("truncates_table").isNotNull()).select(
        F.col("source_database").alias("_source_database"), F.col("transaction_id").alias("_transaction_id"),
        F.col("position").alias("_position"))


def truncations(spark: SparkSession, channel: Channel, batch: int, src: str, table: tuple[str, str],
                 target: tuple[str, str]) -> DataFrame:
    """A TRUNCATE change per DDL record of ``batch`` that removes the rows of ``table``
    (TRUNCATE TABLE; a dropped table created again) of ``target`` (owner, name: a record
    its DDL processing left out of that target does not), at the record's SCN."""
    log = spark.table(_t(channel, "ddl_log").replace("`", ""))
    here = ((F.col("silver_batch") == F.lit(batch)) & (F.col("source_database") == F.lit(src))
            & (F.col("truncates_owner") == F.lit(table[0])) & (F.col("truncates_table") == F.lit(table[1])))
    if "truncates_excluded" in log.columns:  # a log written before the field has none
        here &= ~F.coalesce(F.array_contains("truncates_excluded", F.lit(target_key(target))), F.lit(False))
    return log.where(here).select(
        # At the DDL's commit SCN: the SCN its revision is valid from.
        "source_database", "transaction_id", F.col("commit_scn").alias("scn"), "commit_scn", "commit_time", "position",
        F.lit("TRUNCATE").alias("command_type"), F.lit(None).cast("string").alias("tag"),
        F.lit(None).cast("string").alias("_migrated_from"), F.lit(None).cast("variant").alias("old_values"),
        F.lit(None).cast("variant").alias("new_values"), F.col("ddl_text").alias("raw"),
    )


def snapshot_record(landings: list[str]) -> Column:
    """A record of a snapshot transaction: from a ``snapshot`` landing folder, or a
    snapshot read of a capture that marks them (Debezium ``op`` r)."""
    per_record = F.col("_txn_mode").isin(*SNAPSHOT_MODES)
    return (F.col("_landing").isin(*landings) | per_record) if landings else per_record


def below_ignore_scn(channel: Channel) -> Column:
    """A record's table's ignore SCN where the record's commit SCN is below it, else NULL.
    One term per table with an ignore SCN: grows with the channel file, not rows."""
    floor = F.lit(None).cast("bigint")
    for i in channel.instantiation:
        if i.ignore_scn is not None:
            floor = F.when(
                (F.col("source_database") == i.source_database) & (F.col("_source_owner") == i.owner)
                & (F.col("_source_name") == i.table) & (F.col("commit_scn") < i.ignore_scn), F.lit(i.ignore_scn),
            ).otherwise(floor)
    return floor


def snapshot_misfits(landings: list[str], ignore: Column) -> Column:
    """Records of a snapshot transaction that a snapshot may not hold, and the rows of a
    snapshot below its table's ignore SCN (``below_ignore_scn``): an instantiation SCN may
    not be set below it, by a snapshot no more than by a setting."""
    # Only accepted rows refuse the transaction: a table the rules discard below its ignore
    # SCN is left out of the snapshot (``snapshots``) without an error to say why.
    below = ignore.isNotNull() & (F.col("_bucket") == "accepted")
    return snapshot_record(landings) & (~F.col("command_type").isin(*SNAPSHOT_COMMANDS) | below)


def snapshots(classified: DataFrame, landings: list[str], batch: int, ignore: Column) -> DataFrame:
    """A row per table of each released snapshot transaction: the source table (the
    instantiation SCN belongs to it) and the snapshot's SCN, whatever the rules kept. A
    transaction that is not a snapshot, or is below an ignore SCN (``snapshot_errors``),
    instantiates nothing."""
    rows = classified.where(snapshot_record(landings) & F.col("_bucket").isin("accepted", "discarded", "rule_error"))
    shaped = rows.groupBy("source_database", "transaction_id").agg(
        F.count_if(snapshot_misfits(landings, ignore)).alias("_other")).where("_other = 0")
    # A table below its ignore SCN is never registered, even where the rules discard it.
    return rows.join(shaped, ["source_database", "transaction_id"], "left_semi").where(ignore.isNull()).groupBy(
        "source_database", F.col("_source_owner").alias("owner"), F.col("_source_name").alias("table_name"),
        F.col("commit_scn").alias("scn"), "transaction_id",
    ).agg(F.min("commit_time").alias("commit_time"), F.count_if(F.col("command_type") == "INSERT").alias("records")).select(
        F.lit(batch).cast("bigint").alias("silver_batch"), "source_database", "owner", "table_name", "scn",
        "transaction_id", "commit_time", "records",
    )


def snapshot_errors(misfits: DataFrame, batch: int, ignore: Column) -> DataFrame:
    """A snapshot transaction holding anything but rows is not a snapshot, and one below a
    table's ignore SCN may not instantiate it: an error."""
    table = (F.col("object_owner"), F.lit("."), F.col("object_name"))
    return misfits.select(
        F.lit(batch).cast("bigint").alias("silver_batch"), "source_database", "transaction_id",
        F.when(ignore.isNotNull(), F.concat(
            # The source table: the ignore SCN is its, whatever name a transformation gives it.
            F.lit("the snapshot of "), F.col("_source_owner"), F.lit("."), F.col("_source_name"), F.lit(" at SCN "), F.col("commit_scn").cast("string"),
            F.lit(" is below its ignore SCN "), ignore.cast("string"),
            F.lit(": an instantiation SCN below the ignore SCN is refused (take a snapshot at or above it)"),
        )).otherwise(F.concat(
            F.lit("a snapshot transaction holds INSERT records (and a TRUNCATE for an empty table) only; found "),
            F.col("command_type"), F.lit(" of "), *table,
        )).alias("error"),
        F.col("raw").alias("failing_record"),
    )


def run_silver(spark: SparkSession, channel: Channel, rebuild_clear: bool = False) -> SilverResult:
    """Run one silver batch over the bronze versions not read yet (if any). ``rebuild_clear``:
    as ``_open_batch`` takes it."""
    create_silver_tables(spark, channel)
    opened = _open_batch(spark, channel, rebuild_clear)
    if opened is None:
        return SilverResult()
    batch, lo, hi, new_batch = opened
    result = SilverResult(batch, lo, hi, drained=new_batch)
    with step("silver.ledger"):
        new, size = _ledger_step(spark, channel, batch, lo, hi)
    kill_point("silver.ledger")
    # A small batch runs without generated code: compiling costs it more than it saves.
    with interpreted(spark, size) as result.interpreted:
        with step("silver.transactions"):
            # A transaction released now was waiting after the last batch: its records lie
            # from that batch's bound on, and so does every record still waiting (the
            # ledger's history before it is not read).
            ledger = spark.table(_t(channel, "ledger").replace("`", "")).where(
                F.col("silver_batch") >= open_from(spark, channel, batch))
            released_txns = _transactions_step(spark, channel, batch, new, ledger).persist()
            txns = spark.table(_t(channel, "transactions").replace("`", ""))
            released, inconsistent = without_inconsistent(released_records(ledger, released_txns), batch)
            append_rows(late_errors(new, txns, batch).unionByName(inconsistent.drop("position")),
                   _t(channel, "txn_errors"), "silver.txn_errors.late", batch)
            first_open = first_open_batch(ledger, txns, batch)
        kill_point("silver.transactions")
        clients = build_clients(channel)
        classified = classify(released, clients).persist()
        try:
            with step("silver.dictionary"):
                revisions, truncated = _dictionary_step(spark, channel, batch, classified.where("_bucket = 'ddl'"), clients)
            kill_point("silver.dictionary")
            derive(spark, channel, batch, classified, clients, revisions, result, truncated)
        finally:
            classified.unpersist()
            released_txns.unpersist()
            inconsistent.unpersist()
    kill_point("silver.done")
    # A log written before the bound was kept gains its column.
    log_state(spark, _t(channel, "runs"), (batch, lo, hi, "done", first_open), DONE_ROW, "silver.runs.done", batch,
              merge_schema=True)
    return result
