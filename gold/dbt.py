"""Run dbt in-process (dbt-spark, ``method: session``) on the tables the plan has work for.

The dbt project (``gold/dbt_project``: ``dbt_project.yml``, ``macros/``, ``models/``;
package data, so an installed wheel carries it) is copied into the channel's state folder;
the model of each target table is generated there from the source dictionary, never
hand-written, with a sibling ``.yml`` of docs and key tests.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from pyspark.sql import SparkSession

from gold.plan import Plan, TargetPlan, broadcasts
from lakestreams.config import Channel, TargetSpec
from lakestreams.errors import ApplyError
from lakestreams.faults import dbt_callbacks

SOURCE = "lakestreams_plan"
BRONZE_SOURCE = "lakestreams_bronze"
#: How old the newest bronze record may be before ``dbt source freshness`` warns or fails:
#: the replication job runs every 15 minutes, and a busy source lands files all day.
FRESHNESS = {"warn_after": {"count": 1, "period": "hour"}, "error_after": {"count": 1, "period": "day"}}
#: A description of every column of bronze's change records (``bronze.records.BRONZE_DDL``).
BRONZE_COLUMNS = {
    "source_database": "Global name of the source database",
    "command_type": "INSERT, UPDATE, DELETE, a DDL statement's verb, COMMIT or ROLLBACK",
    "object_owner": "Owner of the changed object", "object_name": "Name of the changed object",
    "object_type": "Type of the object a DDL record changes (TABLE, VIEW, ...)",
    "base_table_owner": "Owner of the base table (a DDL on an index, trigger or constraint)",
    "base_table_name": "Name of the base table", "current_schema": "Current schema the DDL ran in",
    "logon_user": "Session user that ran the DDL", "event_count": "Record count a capture's control record carries",
    "raw": "The landing line as it was read", "_txn_mode": "How the landing folder shows transactions complete",
    "transaction_id": "Source transaction", "scn": "SCN of the change",
    "commit_scn": "Commit SCN of its transaction", "position": "Order of the record in its transaction",
    "commit_time": "Commit time of its transaction", "tag": "Streams tag (hex), if any",
    "old_values": "Column values before the change (VARIANT)", "new_values": "Column values after the change (VARIANT)",
    "ddl_text": "Statement text of a DDL record", "_landing": "Landing folder the record came from",
    "_source_file": "Landing file", "_ingest_batch": "Bronze ingestion batch",
    "_ingested_at": "When bronze ingested the record (the source's freshness)",
}

#: A description of every column of a plan table (``gold.plan.build_target_plan``).
PLAN_COLUMNS = {
    "_seq": "Apply order of the change in this plan (commit time, source, commit SCN, transaction, position)",
    "_root": "Row incarnation the change belongs to (an INSERT starts one; key moves carry it)",
    "_gap": "The change meets no row this plan left on its key (gold's row is looked up)",
    "_taken": "The key the change claims holds a row already",
    "_claim_first": "The claim is the plan's first event on its key (gold decides whether it is taken)",
    "_op": "I, U, D or T (TRUNCATE)", "_okey": "Replication key before the change (null-safe match)",
    "_nkey": "Replication key after the change", "_new": "Column values after the change, typed by the target",
    "_new_present": "Columns the change carries, and those an INSERT took its default for (the others keep their values)",
    "_source_database": "Source database of the change", "_transaction_id": "Source transaction",
    "_commit_scn": "Commit SCN of the transaction", "_commit_time": "Commit time of the transaction",
    "_position": "Order of the change in its transaction",
    "_decided": "The change was judged by the plan (conflicts, handlers) before the apply",
    "_refold_old": "The key the change leaves is folded again from history (a late change)",
    "_refold_new": "The key the change takes is folded again from history (a late change)",
    "_plan_id": "Plan that wrote the row",
}
#: A description of every column of the effective instantiation table (``gold.plan.effective_instantiation``).
INSTANTIATION_COLUMNS = {
    "source_database": "Source database", "owner": "Owner of the source table", "table_name": "Source table",
    "instantiation_scn": "Changes committed at or below it are not applied (the snapshot's own transaction is)",
    "origin": "What set it: a snapshot, a table, schema or global setting, the CREATE TABLE record, the ignore SCN",
    "ignore_scn": "Floor below which no instantiation SCN may be set",
    "snapshot_transaction": "Transaction of the snapshot that instantiated the table at that SCN, if any",
}


def project_root() -> Path:
    """The dbt project shipped with lakestreams (package data of ``gold``)."""
    here = Path(__file__).resolve().parent / "dbt_project"
    if not (here / "dbt_project.yml").is_file():
        raise ApplyError(f"dbt project not found in the gold package ({here}/dbt_project.yml): "
                         "reinstall lakestreams (the wheel carries it as package data)")
    return here


def _q(value: str) -> str:
    # Owner/table names passed the dictionary's SAFE_NAME check: no quote can occur in them.
    return "'" + value.replace("'", "''") + "'"


def model_sql(t: TargetPlan, options: TargetSpec | None = None, column_mapping: bool = True) -> str:
    """The generated model: planned changes of one target above its instantiation SCN; the
    target's options (history kind, soft deletes) and the channel's gold protocol (column
    mapping or the basic protocol) go to its config."""
    cols = [[c.name, c.type.spark] for c in t.definition.columns]
    opts = options or TargetSpec(t.owner, t.table)
    # JSON as Jinja literals: only lists, strings and booleans (Jinja has no null).
    settings = {"key_columns": list(t.definition.key_columns), "columns": cols, "soft_delete": opts.soft_delete,
                "column_mapping": column_mapping}
    if opts.history is not None:
        settings["history"] = opts.history
    config = json.dumps(settings)
    # Instantiation SCNs belong to the source objects feeding the target (a transformation
    # may have renamed it); global names and owners passed their checks, no quote occurs.
    sources = " or ".join(
        f"(i.source_database = {_q(src)} and i.owner = {_q(owner)} and i.table_name = {_q(name)})"
        for src, owner, name in t.sources
    ) or "false"
    return (
        f"{{{{ config(**{config}) }}}}\n"
        f"-- Generated by lakestreams from the source dictionary of {t.owner}.{t.table}; do not edit.\n"
        "select c.*\n"
        f"from {{{{ source('{SOURCE}', '{t.plan_table}') }}}} c\n"
        f"join {{{{ source('{SOURCE}', 'instantiation') }}}} i\n"
        f"  on i.source_database = c._source_database and ({sources})\n"
        "where c._commit_scn > i.instantiation_scn\n"
        # The snapshot that instantiated the table, at that SCN (gold.snapshot).
        "   or (c._commit_scn = i.instantiation_scn and c._transaction_id = i.snapshot_transaction)\n"
    )


def model_yml(t: TargetPlan, options: TargetSpec | None = None) -> dict:
    d = t.definition
    opts = options or TargetSpec(t.owner, t.table)
    columns = []
    for c in d.columns:
        entry = {
            "name": c.name,
            "description": f"{c.type.oracle} in {t.owner}.{t.table} (Spark {c.type.spark})"
            + ("; key column" if c.name in d.key_columns else ""),
        }
        if c.name in d.key_columns and d.key_kind == "PRIMARY KEY":
            entry["data_tests"] = ["not_null"]
        columns.append(entry)
    meta = {
        "_source_database": "Source database of the change that last wrote the row",
        "_transaction_id": "Source transaction of the change that last wrote the row",
        "_commit_scn": "Commit SCN of the change that last wrote the row",
        "_commit_time": "Commit time of the change that last wrote the row",
    }
    if opts.soft_delete:
        meta["_is_deleted"] = "True once the row was deleted at the source (soft delete): the row stays"
    columns += [{"name": k, "description": v} for k, v in meta.items()]
    kept = {"scd2": f"; versions in {t.model}__history (SCD type 2)",
            "timekey": f"; every change in {t.model}__changes (TimeKey)"}.get(opts.history or "", "")
    return {
        "name": t.model,
        "description": f"Replica of {t.owner}.{t.table} ({d.key_kind} {', '.join(d.key_columns)}), applied by "
                       f"lakestreams_apply{kept}.",
        "columns": columns,
        "data_tests": [{"unique_key": {"arguments": {"columns": list(d.key_columns)}}}],
    }


def stage_project(channel: Channel, all_targets: list[TargetPlan]) -> Path:
    """Copy the dbt project into the state folder and generate the models of ``all_targets``."""
    src = project_root()
    dst = channel.storage.state / "dbt"
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / "dbt_project.yml", dst / "dbt_project.yml")
    for folder in ("macros", "models"):
        if (dst / folder).exists():
            shutil.rmtree(dst / folder)
        shutil.copytree(src / folder, dst / folder)
    gen = dst / "models" / "generated"
    gen.mkdir(parents=True, exist_ok=True)
    tables = [{"name": "instantiation", "description": "Effective instantiation SCN per source and table",
               "columns": [{"name": k, "description": v} for k, v in INSTANTIATION_COLUMNS.items()]}]
    tables += [{"name": t.plan_table, "description": f"Apply plan of {t.owner}.{t.table}",
                "columns": [{"name": k, "description": v} for k, v in PLAN_COLUMNS.items()]} for t in all_targets]
    bronze = {
        "name": "change_records",
        "description": "Change records (row and DDL LCRs, commits and rollbacks) as bronze ingested them, "
                       "append-only and exactly once per landing line",
        "columns": [{"name": k, "description": v} for k, v in BRONZE_COLUMNS.items()],
        # Fresh while records keep landing: the newest ingestion time, not the commit time.
        "config": {"loaded_at_field": "_ingested_at", "freshness": FRESHNESS},
    }
    sources = {
        "version": 2,
        "sources": [
            {
                "name": SOURCE,
                "description": "Apply plan tables written by lakestreams' plan step",
                "schema": channel.storage.schema_name("silver"),
                "tables": tables,
            },
            {
                "name": BRONZE_SOURCE,
                "description": "The bronze layer: what the captures landed",
                "schema": channel.storage.schema_name("bronze"),
                "tables": [bronze],
            },
        ],
        "models": [model_yml(t, channel.target_options(t.owner, t.table)) for t in all_targets],
    }
    (gen / "_generated.yml").write_text(yaml.safe_dump(sources, sort_keys=False))
    for t in all_targets:
        (gen / f"{t.model}.sql").write_text(model_sql(t, channel.target_options(t.owner, t.table), channel.gold_column_mapping))
    profile = {
        "lakestreams": {
            "target": "local",
            "outputs": {
                "local": {
                    "type": "spark",
                    "method": "session",
                    "host": "NA",
                    "schema": channel.storage.schema_name("gold"),
                    "threads": APPLY_THREADS,
                }
            },
        }
    }
    (dst / "profiles.yml").write_text(yaml.safe_dump(profile))
    return dst


def run_dbt(spark: SparkSession, project: Path, args: list[str], warnings: list[str] | None = None,
            ) -> list[tuple[str, str, str]]:
    """Invoke dbt in this process; returns (node, status, message) and raises on failure.
    ``warnings``, if given, receives the message of every event dbt logs at warn or error level."""
    from dbt.cli.main import dbtRunner

    callbacks = dbt_callbacks()
    if warnings is not None:
        def on_event(event) -> None:
            if event.info.level in ("warn", "error"):
                warnings.append(event.info.msg)

        callbacks.append(on_event)
    res = dbtRunner(callbacks=callbacks).invoke(
        [*args, "--project-dir", str(project), "--profiles-dir", str(project), "--quiet", "--no-use-colors"]
    )
    out = []
    if res.result is not None and hasattr(res.result, "results"):
        out = [(r.node.name, str(r.status), r.message or "") for r in res.result.results]
    if not res.success:
        detail = "; ".join(f"{n}: {s} {m}" for n, s, m in out if s not in ("success", "pass")) or str(res.exception)
        raise ApplyError(f"dbt {args[0]} failed: {detail}")
    return out


#: Models dbt applies at once. A MERGE into a small replica is mostly the driver's work
#: (analysis, planning, the Delta commit), which one model at a time leaves the cores idle for.
APPLY_THREADS = 4
#: Delta's exactly-once key (``txnAppId``/``txnVersion``) is read from session settings, and
#: dbt-spark's session cursor runs every model on the process's one session: models running
#: side by side cannot each set their own. Delta keeps the key in each table's own log, so
#: one key, (``RUN_APP_ID``, plan id), set for the whole dbt run, keys every table the run
#: writes once. A truncating model writes its replica (and history) twice, so it runs with
#: a key per statement (``gold.<table>``), in a run of one thread before the others.
RUN_APP_ID = "gold.plan"
TXN_APP_ID, TXN_VERSION = "spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion"


def apply_targets(spark: SparkSession, channel: Channel, plan: Plan, all_targets: list[TargetPlan]) -> list[tuple[str, str, str]]:
    """Stage the project and run only the models of targets with work in this plan."""
    _use_catalog(spark, channel)
    project = stage_project(channel, all_targets)
    if not plan.targets:
        return []
    truncating = [t.model for t in plan.targets if t.truncates]
    others = [t.model for t in plan.targets if not t.truncates]
    # The plan reaches the materialization as environment variables, not --vars: dbt parses
    # the whole project again whenever vars change, and the plan id changes every run.
    plan_env = {
        "LAKESTREAMS_PLAN_ID": str(plan.plan_id),
        "LAKESTREAMS_TRUNCATING": json.dumps(truncating),
        "LAKESTREAMS_REFOLDING": json.dumps([t.model for t in plan.targets if t.refolds]),
        "LAKESTREAMS_IN_PLACE": json.dumps([t.model for t in plan.targets if not t.moves]),
        "LAKESTREAMS_BROADCAST": json.dumps([t.model for t in plan.targets if broadcasts(t.rows)]),
    }
    # No manifest.json or run_results.json for an apply: writing the manifest costs about
    # 10 ms per model of the project, quiet targets' included, on every run (the results
    # come back in process; partial parsing keeps its own file). ``generate_docs`` writes them.
    run = ["run", "--no-write-json"]
    results = []
    if truncating:
        with _environ({**plan_env, "LAKESTREAMS_KEY": "statement"}):
            results += run_dbt(spark, project, [*run, "--threads", "1", "--select", *truncating])
    if others:
        with _environ({**plan_env, "LAKESTREAMS_KEY": "run"}), _run_key(spark, plan.plan_id):
            results += run_dbt(spark, project, [*run, "--select", *others])
    return results


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def _run_key(spark: SparkSession, plan_id: int) -> Iterator[None]:
    """Delta's exactly-once key (``RUN_APP_ID``, ``plan_id``) for every write while inside."""
    spark.conf.set(TXN_APP_ID, RUN_APP_ID)
    spark.conf.set(TXN_VERSION, str(plan_id))
    try:
        yield
    finally:
        spark.conf.unset(TXN_APP_ID)
        spark.conf.unset(TXN_VERSION)


def _use_catalog(spark: SparkSession, channel: Channel) -> None:
    if channel.storage.catalog:
        # dbt-spark refuses three-part names: the catalog is the session's. The catalog name
        # was checked as an identifier when the channel was loaded.
        spark.catalog.setCurrentCatalog(channel.storage.catalog)


def generate_docs(spark: SparkSession, channel: Channel, all_targets: list[TargetPlan],
                  warnings: list[str] | None = None) -> Path:
    """``dbt docs generate`` on the staged project: every gold model, its columns and the
    sources, described; returns the folder of ``index.html``, ``manifest.json`` and
    ``catalog.json``. ``warnings``, if given, receives what dbt warned of (none, cleanly)."""
    _use_catalog(spark, channel)
    project = stage_project(channel, all_targets)
    run_dbt(spark, project, ["docs", "generate"], warnings)
    return project / "target"


def source_freshness(spark: SparkSession, channel: Channel, all_targets: list[TargetPlan],
                     warnings: list[str] | None = None) -> list[tuple[str, str, str]]:
    """``dbt source freshness``: the age of the newest bronze record against ``FRESHNESS``;
    (source, status, message) with status pass, warn or error (an error raises ApplyError).
    ``warnings``, if given, receives what dbt warned of."""
    _use_catalog(spark, channel)
    if not spark.catalog.tableExists(channel.storage.table("bronze", "change_records").replace("`", "")):
        raise ApplyError("source freshness: bronze has no change records table yet (run lakestreams bronze first)")
    project = stage_project(channel, all_targets)
    return run_dbt(spark, project, ["source", "freshness"], warnings)
