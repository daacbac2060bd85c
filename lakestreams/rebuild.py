"""``lakestreams rebuild TABLE``: re-derive a table's silver and gold from bronze under the
rules the channel has now.

**Scope.** A table cannot be re-decided alone: a transaction applies to all its tables or
to none, and a gold table may be fed by several source tables. The scope is the closure
of the requested table over three relations between source tables:

- one transaction wrote both (in the silver ledger);
- both feed one gold table now (the silver ``targets`` registry);
- the current rules route both into one gold table.

Every transaction touching the scope touches only the scope, so everything outside it
stays as it is and is not rewritten. The requested name may be a source table or a
target (gold) table.

**Steps**, each safe to kill and re-run (the scope is logged first; a re-run resumes it):

1. log the scope as a new silver batch B in ``silver.rebuilds``;
2. clear what was derived for it: its change, plan and gold tables are dropped; its rows
   in the targets registry, rule outcomes, transaction errors, bucket outcomes, error
   queue and apply progress are deleted; then ``cleared`` is logged;
3. re-derive silver for the scope's transactions from the ledger as batch B, under the
   current clients (ledger, transactions and dictionary do not depend on rules and stay);
4. log B done; the next plan, run right away, applies B into new gold tables.

New silver batches and plans wait while a rebuild is unfinished.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from gold.handled import handled_table_name
from gold.plan import create_gold_tables, history_tables, plan_table_name, unfinished_plan
from lakestreams.config import Channel, check_global_name, split_table_name
from lakestreams.delta_io import append, drop_table, local_rows, log_state
from lakestreams.errors import ConfigError, ReplicationError
from lakestreams.timing import step
from silver.changes import target_model_name
from silver.rules import build_clients
from silver.run import (
    EXECUTE_ALL_ERRORS,
    REBUILD_ROW,
    RUN_ROW,
    SilverResult,
    batch_state,
    classify,
    create_silver_tables,
    derive,
    describe_request,
    execute_error_request,
    executed_transaction,
    finish_command,
    late_errors,
    load_revisions,
    load_targets,
    released_records,
    unfinished_rebuild,
    without_inconsistent,
)
from silver.simulate import released_history

Obj = tuple[str, str, str]  # (source database, owner, table)
SCOPE_DDL = "source_database STRING, owner STRING, table_name STRING"


@dataclass
class Scope:
    tables: list[Obj] = field(default_factory=list)  # source tables re-derived
    models: list[str] = field(default_factory=list)  # gold tables held now or reached under the current rules
    change_tables: list[str] = field(default_factory=list)  # silver change tables held now


@dataclass
class RebuildResult:
    request: str
    batch: int
    scope: Scope
    resumed: bool = False
    silver: SilverResult = field(default_factory=SilverResult)


def _t(channel: Channel, layer: str, name: str) -> str:
    return channel.storage.table(layer, name).replace("`", "")


def _scope_records(spark: SparkSession, channel: Channel) -> DataFrame:
    """(source database, transaction, object) of every ledger record naming an object; a
    DDL record on an index or constraint also names its base table."""
    ledger = spark.table(_t(channel, "silver", "ledger")).where("NOT is_duplicate")
    objects = ledger.select("source_database", "transaction_id", F.col("object_owner").alias("owner"),
                            F.col("object_name").alias("table_name"))
    bases = ledger.select("source_database", "transaction_id", F.col("base_table_owner").alias("owner"),
                          F.col("base_table_name").alias("table_name"))
    return objects.unionByName(bases).where("owner IS NOT NULL AND table_name IS NOT NULL").distinct()


class _Components:
    """Union-find over source tables and gold models (driver side: grows with tables)."""

    def __init__(self) -> None:
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def find_scope(spark: SparkSession, channel: Channel, owner: str, table: str, source_database: str | None = None) -> Scope:
    """The closure of ``owner.table`` (a source table or a target table; of one source
    database if given) over shared transactions and shared gold tables, now and under
    the current rules."""
    records = _scope_records(spark, channel).persist()
    try:
        a, b = records.alias("a"), records.alias("b")
        # Pairs of objects written by one transaction: bounded by tables², not rows.
        pairs = (
            a.join(b, (F.col("a.source_database") == F.col("b.source_database"))
                   & (F.col("a.transaction_id") == F.col("b.transaction_id")))
            .where(F.struct("a.owner", "a.table_name") < F.struct("b.owner", "b.table_name"))
            .select("a.source_database", F.col("a.owner").alias("o1"), F.col("a.table_name").alias("t1"),
                    F.col("b.owner").alias("o2"), F.col("b.table_name").alias("t2"))
            .distinct().collect()
        )
        # One row per source table: metadata.
        objects = [tuple(r) for r in records.select("source_database", "owner", "table_name").distinct().collect()]
    finally:
        records.unpersist()
    # One row per source object and target it is routed to under the current rules: metadata.
    routed = [
        tuple(r) for r in classify(released_history(spark, channel), build_clients(channel)).where("_bucket = 'accepted'")
        .select("source_database", "_source_owner", "_source_name", "object_owner", "object_name")
        .distinct().collect()
    ]
    registry = load_targets(spark, channel)
    uf = _Components()
    for obj in objects:
        uf.find(("table", obj))
    for src, o1, t1, o2, t2 in pairs:
        uf.join(("table", (src, o1, t1)), ("table", (src, o2, t2)))
    for src, sowner, sname, tdef, _ in registry:
        uf.join(("table", (src, sowner, sname)), ("model", target_model_name(tdef.owner, tdef.name)))
    for src, sowner, sname, towner, tname in routed:
        if towner is not None and tname is not None:
            uf.join(("table", (src, sowner, sname)), ("model", target_model_name(towner, tname)))
    seeds = [n for n in uf.parent if n[0] == "table" and n[1][1:] == (owner, table)
             and source_database in (None, n[1][0])]
    model = ("model", target_model_name(owner, table))
    if source_database is None and model in uf.parent:
        seeds.append(model)
    if not seeds:
        known = sorted({f"{o}.{t}" for _, o, t in objects})
        where = f" from {source_database}" if source_database else ""
        raise ConfigError(
            f"rebuild: {owner}.{table}{where} is neither a source table silver has records of nor a target table"
            f" (known source tables: {', '.join(known[:20]) or 'none'}{' …' if len(known) > 20 else ''})"
        )
    roots = {uf.find(s) for s in seeds}
    members = [n for n in uf.parent if uf.find(n) in roots]
    tables = sorted(n[1] for n in members if n[0] == "table")
    in_scope = set(tables)
    return Scope(
        tables=tables,
        models=sorted(n[1] for n in members if n[0] == "model"),
        change_tables=sorted({cname for src, so, sn, _, cname in registry if (src, so, sn) in in_scope}),
    )


def _scope_transactions(spark: SparkSession, channel: Channel, tables: list[Obj]) -> DataFrame:
    """The transactions with a record on a table of the scope (Spark side: grows with rows)."""
    scope = local_rows(spark, tables, SCOPE_DDL)
    return _scope_records(spark, channel).join(F.broadcast(scope), ["source_database", "owner", "table_name"]).select(
        "source_database", "transaction_id"
    ).distinct()


def _delete_matching(spark: SparkSession, table: str, keys: DataFrame, on: dict[str, str], also: Column | None = None) -> None:
    """Delete the rows of ``table`` whose columns (``on``: table column → key column) match a
    row of ``keys``, through a delete-only MERGE (the keys are a DataFrame, never SQL text)."""
    cond = None
    for tcol, kcol in on.items():
        c = F.col(f"t.{tcol}").eqNullSafe(F.col(f"k.{kcol}"))
        cond = c if cond is None else cond & c
    if also is not None:
        cond = cond & also
    DeltaTable.forName(spark, table).alias("t").merge(keys.alias("k"), cond).whenMatchedDelete().execute()


def _clear(spark: SparkSession, channel: Channel, batch: int, scope: Scope) -> None:
    st = channel.storage
    # Names below come from the registry and checked target names.
    for cname in scope.change_tables:
        drop_table(spark, st.table("silver", cname))
    for model in scope.models:
        drop_table(spark, st.table("silver", plan_table_name(model)))
        drop_table(spark, st.table("silver", handled_table_name(model)))
        for name in (model, *history_tables(model)):
            drop_table(spark, st.table("gold", name))
    tables = local_rows(spark, scope.tables, SCOPE_DDL)
    txns = _scope_transactions(spark, channel, scope.tables).localCheckpoint()
    by_txn = {"source_database": "source_database", "transaction_id": "transaction_id"}
    before = F.col("t.silver_batch") < batch
    _delete_matching(spark, _t(channel, "silver", "targets"), tables,
                     {"source_database": "source_database", "source_owner": "owner", "source_table": "table_name"}, before)
    _delete_matching(spark, _t(channel, "silver", "rule_outcomes"), tables,
                     {"source_database": "source_database", "owner": "owner", "table_name": "table_name"},
                     F.col("t.batch") < batch)
    if txns.limit(1).count() > 0:  # a MERGE with no keys would still commit a version
        _delete_matching(spark, _t(channel, "silver", "outcomes"), txns, by_txn, F.col("t.batch") < batch)
        _delete_matching(spark, _t(channel, "silver", "txn_errors"), txns, by_txn, before)
        _delete_matching(spark, _t(channel, "gold", "error_queue"), txns, by_txn, F.col("t.plan_id") < batch)
    if scope.models:
        DeltaTable.forName(spark, _t(channel, "gold", "apply_progress")).delete(F.col("target").isin(scope.models))


def _rederive(spark: SparkSession, channel: Channel, batch: int, txns: DataFrame) -> SilverResult:
    """Derive silver again for ``txns`` (source database, transaction id) as ``batch``."""
    ledger = spark.table(_t(channel, "silver", "ledger"))
    transactions = spark.table(_t(channel, "silver", "transactions"))
    mine = ledger.join(txns, ["source_database", "transaction_id"], "left_semi")
    result = SilverResult(batch)
    clients = build_clients(channel)
    released, inconsistent = without_inconsistent(released_records(mine, transactions), batch)
    classified = classify(released, clients).persist()
    try:
        append(late_errors(mine, transactions, batch).unionByName(inconsistent.drop("position")),
               channel.storage.table("silver", "txn_errors"), "silver.txn_errors.late", batch)
        derive(spark, channel, batch, classified, clients, load_revisions(spark, channel), result)
    finally:
        classified.unpersist()
        inconsistent.unpersist()
    return result


def parse_request(text: str, source_database: str | None = None) -> tuple[str, str, str | None]:
    owner, table = split_table_name(text, "rebuild TABLE")
    src = check_global_name(source_database, "--source-database") if source_database is not None else None
    return owner, table, src


def _begin(spark: SparkSession, channel: Channel, name: str):
    """The unfinished request of this name to resume (its logged scope row) or None for a new
    one, with the last silver batch and bronze version. Refuses while another request, a
    silver batch or a plan is unfinished. The caller has created the silver and gold tables."""
    pending = unfinished_rebuild(spark, channel)
    unfinished, last_batch, last_to = batch_state(spark, channel)
    what = describe_request(name)
    if pending is not None and pending["request"] != name:
        raise ReplicationError(
            f"{what} waits: {describe_request(pending['request'])} (silver batch {pending['batch']}) "
            f"did not finish; run `{finish_command(pending['request'])}` again first"
        )
    if pending is None and unfinished is not None:
        raise ReplicationError(f"{what} waits: silver batch {unfinished[0]} did not finish; run `lakestreams silver` first")
    if pending is None:
        plan = unfinished_plan(spark, channel)
        if plan is not None:
            raise ReplicationError(f"{what} waits: apply plan {plan[0]} did not finish; run `lakestreams gold` first")
    return pending, last_batch, last_to


def _finish(spark: SparkSession, channel: Channel, name: str, batch: int, last_to: int, clear, txns) -> SilverResult:
    """Clear (once: ``cleared`` is logged), re-derive ``txns()`` as ``batch`` and log it done."""
    rebuilds = channel.storage.table("silver", "rebuilds")
    # The few log rows of this request (scope, cleared, done): metadata.
    states = {r["state"] for r in spark.table(rebuilds.replace("`", "")).where(F.col("batch") == batch).collect()}
    if "cleared" not in states:
        with step("rebuild.clear"):
            clear()
        log_state(spark, rebuilds, (batch, name, "cleared", None, None, None), REBUILD_ROW,
                  "silver.rebuilds.cleared", batch)
    with step("rebuild.silver"):
        silver = _rederive(spark, channel, batch, txns())
    log_state(spark, channel.storage.table("silver", "runs"), (batch, last_to + 1, last_to, "done"), RUN_ROW,
              "silver.runs.done", batch)
    log_state(spark, rebuilds, (batch, name, "done", None, None, None), REBUILD_ROW, "silver.rebuilds.done", batch)
    return silver


def rebuild(spark: SparkSession, channel: Channel, request: str, source_database: str | None = None) -> RebuildResult:
    """Re-derive the silver of ``request`` (``owner.table``) and its scope under the current
    rules; the caller runs the gold stage next. Resumes an unfinished rebuild of the same request."""
    owner, table, src = parse_request(request, source_database)
    name = f"{owner}.{table}" + (f"@{src}" if src else "")
    create_silver_tables(spark, channel)
    create_gold_tables(spark, channel)
    pending, last_batch, last_to = _begin(spark, channel, name)
    if pending is not None:
        batch = int(pending["batch"])
        scope = Scope([tuple(t) for t in pending["tables"]], list(pending["models"]), list(pending["change_tables"]))
    else:
        with step("rebuild.scope"):
            scope = find_scope(spark, channel, owner, table, src)
        batch = last_batch + 1
        row = (batch, name, "scope", [list(t) for t in scope.tables], scope.models, scope.change_tables)
        log_state(spark, channel.storage.table("silver", "rebuilds"), row, REBUILD_ROW, "silver.rebuilds.scope", batch)
    silver = _finish(spark, channel, name, batch, last_to, lambda: _clear(spark, channel, batch, scope),
                     lambda: _scope_transactions(spark, channel, scope.tables))
    return RebuildResult(name, batch, scope, pending is not None, silver)


@dataclass
class ExecuteResult:
    request: str
    batch: int
    count: int  # transactions re-executed
    sample: list[tuple[str, str]] = field(default_factory=list)  # the first few, oldest commit first
    resumed: bool = False
    silver: SilverResult = field(default_factory=SilverResult)


KEYS = ["source_database", "transaction_id"]
SAMPLE = 20  # transactions a re-execution lists by id


def _queue(spark: SparkSession, channel: Channel) -> DataFrame:
    return spark.table(_t(channel, "gold", "error_queue"))


def _one(spark: SparkSession, channel: Channel, transaction_id: str, source_database: str | None) -> tuple[str, str]:
    """The queued transaction of this id (and source), refused when absent or ambiguous."""
    if not isinstance(transaction_id, str) or not transaction_id or " " in transaction_id:
        raise ConfigError(f"transaction id {transaction_id!r}: expected a transaction id such as 2.6.1043")
    found = _queue(spark, channel).where(F.col("transaction_id") == transaction_id)
    if source_database is not None:
        found = found.where(F.col("source_database") == source_database)
    # At most one row per source database: metadata.
    sources = sorted(r[0] for r in found.select("source_database").distinct().collect())
    if not sources:
        where = f" from {source_database}" if source_database else ""
        raise ConfigError(f"transaction {transaction_id}{where} is not in the error queue "
                          "(`lakestreams errors` lists it)")
    if len(sources) > 1:
        raise ConfigError(f"transaction {transaction_id} is in the error queue from {', '.join(sources)}: "
                          "name its source database")
    return sources[0], transaction_id


def execute_errors(
    spark: SparkSession, channel: Channel, transaction_id: str | None = None, source_database: str | None = None
) -> ExecuteResult:
    """Re-execute one error transaction (or all, ``transaction_id=None``) after its cause
    was fixed: its queue entry and outcomes are cleared and its records derived again under
    the current channel as a new silver batch, which the next plan applies once, in SCN
    order, on what gold holds now. A transaction that fails again is queued again with the
    new error. Resumes an unfinished re-execution of the same request. The transactions
    stay in Spark (``silver.reexecutions``): driver work does not grow with them."""
    src = None if source_database is None else check_global_name(source_database, "--source-database")
    create_silver_tables(spark, channel)
    create_gold_tables(spark, channel)
    pending = unfinished_rebuild(spark, channel)
    resuming = executed_transaction(pending["request"]) if pending is not None else None
    if transaction_id is None:
        name = EXECUTE_ALL_ERRORS
    elif resuming is not None and resuming[1] == transaction_id and src in (None, resuming[0]):
        name = pending["request"]  # resume it: its queue entry is cleared already
    elif pending is not None:
        name = execute_error_request(src or "*", transaction_id)  # _begin refuses: another is unfinished
    else:
        name = execute_error_request(*_one(spark, channel, transaction_id, src))
    queued = _queue(spark, channel).select(*KEYS).distinct()
    one = executed_transaction(name)
    if one is not None:
        queued = queued.where((F.col("source_database") == one[0]) & (F.col("transaction_id") == one[1]))
    return _execute(spark, channel, name, queued)


def retry_explained(spark: SparkSession, channel: Channel, name: str, explained: DataFrame | None) -> ExecuteResult:
    """Re-execute, as request ``name`` (``retry_request``, ``retry_pending_request``), the
    error transactions a plan or the waiting silver batches explained (``gold.plan.
    explained_by_plan``, ``explained_by_pending``): they failed on a conflict at a key
    where a change that landed later comes first. Same steps as ``execute_errors``;
    resumes the request when ``explained`` is None."""
    create_silver_tables(spark, channel)
    create_gold_tables(spark, channel)
    queued = _queue(spark, channel).select(*KEYS).distinct()
    # Resuming, the set is the one logged; a new request without one has nothing to do.
    queued = queued.join(explained, KEYS, "left_semi") if explained is not None else queued.limit(0)
    return _execute(spark, channel, name, queued)


def _execute(spark: SparkSession, channel: Channel, name: str, queued: DataFrame) -> ExecuteResult:
    """Re-execute request ``name`` over the queued transactions ``queued`` (read only when
    the request is new; a resumed one has its set in ``silver.reexecutions``)."""
    pending, last_batch, last_to = _begin(spark, channel, name)
    scope = spark.table(_t(channel, "silver", "reexecutions"))
    batch = int(pending["batch"]) if pending is not None else last_batch + 1
    if pending is None:
        if queued.limit(1).count() == 0:
            return ExecuteResult(name, 0, 0)
        # The set first (once per batch), then the scope row that makes it the request.
        append(queued.select(F.lit(batch).cast("bigint").alias("batch"), *KEYS), _t(channel, "silver", "reexecutions"),
               "silver.reexecutions", batch)
        log_state(spark, channel.storage.table("silver", "rebuilds"), (batch, name, "scope", None, None, None),
                  REBUILD_ROW, "silver.rebuilds.scope", batch)

    def txns() -> DataFrame:
        return scope.where(F.col("batch") == batch).select(*KEYS)

    def clear() -> None:
        by_txn = {k: k for k in KEYS}
        _delete_matching(spark, _t(channel, "silver", "outcomes"), txns(), by_txn, F.col("t.batch") < batch)
        _delete_matching(spark, _t(channel, "silver", "txn_errors"), txns(), by_txn, F.col("t.silver_batch") < batch)
        _delete_matching(spark, _t(channel, "gold", "error_queue"), txns(), by_txn, F.col("t.plan_id") < batch)

    silver = _finish(spark, channel, name, batch, last_to, clear, txns)
    # The count and the oldest few, for the report: bounded.
    commit = spark.table(_t(channel, "silver", "transactions")).select(*KEYS, "commit_scn")
    listed = txns().join(commit, KEYS, "left")
    sample = [(r[0], r[1]) for r in listed.orderBy("commit_scn", *KEYS).limit(SAMPLE).collect()]
    return ExecuteResult(name, batch, listed.count(), sample, pending is not None, silver)


def delete_errors(
    spark: SparkSession, channel: Channel, transaction_id: str | None = None, source_database: str | None = None
) -> int:
    """Remove one error transaction (or all) from the error queue: it is never applied, and
    its records stay counted as errors. Returns how many were removed."""
    src = None if source_database is None else check_global_name(source_database, "--source-database")
    create_gold_tables(spark, channel)
    keys = _queue(spark, channel).select(*KEYS).distinct()
    if transaction_id is not None:
        one = _one(spark, channel, transaction_id, src)
        keys = keys.where((F.col("source_database") == one[0]) & (F.col("transaction_id") == one[1]))
    keys = keys.localCheckpoint()
    removed = keys.count()
    if removed:
        _delete_matching(spark, _t(channel, "gold", "error_queue"), keys, {k: k for k in KEYS})
    return removed


def format_execute(r: ExecuteResult) -> str:
    if not r.count:
        return "the error queue is empty: nothing to re-execute"
    lines = [f"re-execution{' (resumed)' if r.resumed else ''} of {r.count} transaction(s): silver batch {r.batch}"]
    lines += [f"    {src}  {txn}" for src, txn in r.sample]
    if r.count > len(r.sample):
        lines.append(f"    … and {r.count - len(r.sample)} more")
    return "\n".join(lines)


def format_rebuild(r: RebuildResult) -> str:
    lines = [f"rebuild of {r.request}{' (resumed)' if r.resumed else ''}: silver batch {r.batch}"]
    lines.append("  source tables re-derived (they share transactions or gold tables):")
    lines += [f"    {src}  {o}.{t}" for src, o, t in r.scope.tables]
    lines.append("  gold tables rebuilt: " + (", ".join(r.scope.models) or "none"))
    return "\n".join(lines)
