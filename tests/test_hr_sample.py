"""The bundled HR sample end to end: gold equals an independent replay of the history."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from chispa import assert_df_equality
from conftest import REPO, make_channel, table_versions, write_lines
from pyspark.sql import functions as F
from records import REGIONS_DDL, Txn

from lakestreams.audit import run_audit
from lakestreams.config import channel_from_dict
from lakestreams.delta_io import table_names
from lakestreams.errors import ApplyError
from lakestreams.pipeline import run_pipeline
from lakestreams.sample import generate_hr_sample
from lakestreams.spark import interpreted_records
from lakestreams.status import channel_status
from lakestreams.timing import listening

EXPECTED_COUNTS = {"records": 1002, "pending_transactions": 1}


HR_CHANNEL = {
    "name": "hr",
    # Three-part names, as on Unity Catalog: the local session's catalog is spark_catalog
    # (dbt runs with it as the session's current catalog: dbt-spark refuses three-part names).
    "storage": {"schema": "hr_test", "catalog": "spark_catalog"},
    "landing": [
        {"name": "dbs1", "path": "landing/dbs1", "transactions": "commit_records"},
        {"name": "dbs2", "path": "landing/dbs2", "transactions": "whole_file"},
    ],
    # Every source, tagged records included, so the replica is the whole history.
    "apply": {"rules": [{"global": True, "include_ddl": True, "include_tagged_lcr": True}]},
}


#: The catalog the HR run's session starts in (not the channel's).
PROBE_CATALOG = "lakestreams_probe"

#: The stage and step events of the fixture's run, as a progress display receives them.
EVENTS: list[tuple[str, str, bool]] = []
#: The fixture's run result.
RESULTS: list = []


@pytest.fixture(scope="module")
def hr(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("hr")
    counts = generate_hr_sample(root / "landing")
    ch = channel_from_dict(HR_CHANNEL, root)
    EVENTS.clear()
    # The session starts in another catalog, as a job's may (the workspace default): the
    # pipeline makes the channel's catalog the session's current one, as it starts and again
    # before dbt (two-part names only), or dbt would look for its tables in this one. A JDBC
    # catalog that is never connected to.
    spark.conf.set(f"spark.sql.catalog.{PROBE_CATALOG}", "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog")
    spark.conf.set(f"spark.sql.catalog.{PROBE_CATALOG}.url", "jdbc:derby:memory:lakestreams_probe;create=true")
    spark.catalog.setCurrentCatalog(PROBE_CATALOG)
    try:
        RESULTS.clear()
        with listening(lambda kind, name, done: EVENTS.append((kind, name, done))):
            RESULTS.append(run_pipeline(spark, ch))
        current = spark.catalog.currentCatalog()
    finally:
        spark.catalog.setCurrentCatalog("spark_catalog")
    return ch, root, counts, current


def test_the_run_makes_the_channel_catalog_the_session_s_current_one_for_dbt(hr):
    assert hr[3] == "spark_catalog"


def test_run_announces_its_stages_and_steps(hr):
    stages = [(name, done) for kind, name, done in EVENTS if kind == "stage"]
    assert stages == [("bronze", False), ("bronze", True), ("silver", False), ("silver", True),
                      ("gold", False), ("gold", True)]
    at = {(name, done): i for i, (kind, name, done) in enumerate(EVENTS) if kind == "stage"}

    def steps(name: str) -> list[tuple[str, bool]]:
        return [(n, d) for k, n, d in EVENTS[at[(name, False)]:at[(name, True)]] if k == "step"]

    assert {"silver.ledger", "silver.transactions", "silver.change_table"} <= {n for n, _ in steps("silver")}
    assert {"gold.plan", "gold.dbt", "gold.progress"} <= {n for n, _ in steps("gold")}
    # Every step that starts ends, inside its stage.
    for name in ("silver", "gold"):
        started = sorted(n for n, d in steps(name) if not d)
        assert started == sorted(n for n, d in steps(name) if d)


def test_bundled_sample_is_the_generator_output(tmp_path):
    generate_hr_sample(tmp_path)
    for sub in ("dbs1", "dbs2"):
        for f in sorted((tmp_path / sub).iterdir()):
            assert f.read_bytes() == (REPO / "sample_data" / "landing" / sub / f.name).read_bytes(), f.name


@pytest.mark.parametrize("table", ["REGIONS", "COUNTRIES", "LOCATIONS", "DEPARTMENTS", "EMPLOYEES", "JOB_HISTORY"])
def test_gold_equals_replay(spark, hr, table):
    ch, root, _, _ = hr
    gold = spark.table(f"{ch.storage.schema_name('gold')}.hr__{table.lower()}")
    rows = []
    for src in ("DBS1.EXAMPLE.COM", "DBS2.EXAMPLE.COM"):
        path = root / "landing" / "expected" / src / f"{table}.jsonl"
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines()]
    cols = [c for c in gold.columns if not c.startswith("_")]
    expected = spark.createDataFrame([json.dumps(r) for r in rows], "string").select(
        F.from_json("value", ", ".join(f"`{c}` STRING" for c in cols)).alias("j")
    ).select(*[F.col(f"j.`{c}`").cast(gold.schema[c].dataType).alias(c) for c in cols])
    assert_df_equality(gold.select(*cols), expected, ignore_row_order=True, ignore_nullable=True)
    assert gold.count() > 0


def test_the_sample_s_small_batches_run_without_generated_code(hr):
    # 1,002 records: each silver batch and the plan are under the limit (unless a
    # LAKESTREAMS_INTERPRETED_RECORDS below that says otherwise), and ran interpreted.
    _, _, counts, _ = hr
    small = 0 < counts["records"] <= interpreted_records()
    (result,) = RESULTS
    assert result.silver and all(r.interpreted is small for r in result.silver)
    assert result.plan.plan_id is not None and result.plan.interpreted is small


def test_accounting_and_second_run(spark, hr):
    ch, _, counts, _ = hr
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert audit.landed == counts["records"] and audit.quarantined == 0
    assert audit.buckets["discarded"] == 0
    assert audit.buckets["rolled_back"] > 0 and audit.buckets["pending"] > 0
    before = table_versions(spark, ch)
    run_pipeline(spark, ch)
    assert table_versions(spark, ch) == before


def test_dbt_tests_pass_on_gold(spark, hr):
    from gold.dbt import run_dbt

    ch, _, _, _ = hr
    results = run_dbt(spark, ch.storage.state / "dbt", ["test"])
    # not_null and unique_key on every replicated table's key columns.
    assert len(results) >= 12 and all(status == "pass" for _, status, _ in results)


def test_demo_channel_loads():
    from lakestreams.config import load_channel

    ch = load_channel(REPO / "sample_data" / "hr_demo.yml")
    assert [ld.transactions for ld in ch.landing] == ["commit_records", "whole_file"]


def test_status_per_table_and_source(spark, hr):
    """`lakestreams status`: every change table's records applied up to its newest commit
    SCN; the pending records are the audit's (the open transaction)."""
    ch, _, _, _ = hr
    status = channel_status(spark, ch)
    assert status.pending == run_audit(spark, ch).buckets["pending"] > 0
    assert sum(t.open for t in status.tables) + status.open_elsewhere == status.pending
    view = spark.table(ch.storage.table("gold", "apply_consistency").replace("`", "")).orderBy("source_database")
    assert [(s.source_database, s.consistent_scn, s.oldest_pending_scn) for s in status.sources] == [
        (r["source_database"], r["consistent_scn"], r["oldest_pending_scn"]) for r in view.collect()]
    assert [s.source_database for s in status.sources] == ["DBS1.EXAMPLE.COM", "DBS2.EXAMPLE.COM"]
    # The open transaction holds the oldest pending SCN of its source.
    assert any(s.oldest_pending_scn is not None for s in status.sources)
    silver = ch.storage.schema_name("silver")
    newest = {}
    for name in table_names(spark, ch.storage, "silver"):
        if name.startswith("chg__"):
            row = spark.table(f"{silver}.{name}").agg(F.max("_commit_scn"), F.first("_source_database")).first()
            newest[(name.split("__", 2)[2], row[1])] = row[0]
    assert {(t.target, t.source_database): t.applied_scn for t in status.tables} == newest
    assert all(t.waiting == 0 and t.errors == 0 and t.last_ddl.endswith("CREATE TABLE → ADD") for t in status.tables)


NOTEBOOKS = sorted((REPO / "notebooks").glob("*.py"))
#: What each notebook must show of the HR sample (printed text or a displayed table).
NOTEBOOK_SHOWS = {
    "explore_pipeline": ["accounting          balanced", "consistent at SCN", "COMMITTED"],
    "rule_audit": ["APPLY1", "kept"],
    "ddl_log": ["CREATE TABLE", "EMPLOYEE_ID NUMBER"],
    "error_queue": ["the error queue is empty"],
    "apply_progress": ["pending records", "every gold table consistent at SCN"],
}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebooks_run_on_the_sample(spark, hr, notebook, tmp_path):
    """Each notebook runs as plain Python (cells in order, `display` rendering tables and
    saving figures) against the HR sample channel, as a Databricks job would run it."""
    from lakestreams.config import load_channel
    from lakestreams.explore import run_notebook

    ch, root, _, _ = hr
    # The catalog and schema come from the notebook's widgets, as a deployment names them;
    # the channel file's would find nothing.
    channel_file = root / f"channel_{notebook.stem}.yml"
    channel_file.write_text(yaml.safe_dump({**HR_CHANNEL, "storage": {"schema": "not_deployed"}}))
    assert load_channel(channel_file).storage != ch.storage
    widgets = {"channel": str(channel_file), "catalog": ch.storage.catalog, "schema": ch.storage.schema}
    run = run_notebook(notebook, spark, widgets, tmp_path)
    shown = run.printed + "".join(run.tables)
    for text in NOTEBOOK_SHOWS[notebook.stem]:
        assert text in shown, f"{notebook.name} does not show {text!r}"
    if notebook.stem == "explore_pipeline":
        # The tables of every layer with their rows, as one table (rows: layer, table, count).
        listed = {tuple(cell.strip() for cell in line.strip("|").split("|"))
                  for line in run.tables[0].splitlines() if line.startswith("|") and "layer" not in line}
        bronze = spark.table(ch.storage.table("bronze", "change_records").replace("`", "")).count()
        assert ("bronze", "change_records", str(bronze)) in listed, run.tables[0]
        assert {layer for layer, _, _ in listed} == {"bronze", "silver", "gold"}
        assert {(layer, t) for layer, t, _ in listed} >= {("silver", "transactions"), ("silver", "ledger")} | {
            ("gold", t.target) for t in channel_status(spark, ch).tables}
    if notebook.stem == "apply_progress":
        # The progress table and the plot: a line per gold table and source, in each panel.
        progress = spark.table(ch.storage.table("gold", "apply_progress").replace("`", ""))
        pairs = {(r["target"], r["source_database"]) for r in progress.collect()}
        assert all(f"{target}|{src}|" in run.tables[0] for target, src in pairs), run.tables[0]
        assert len(run.images) == 1 and run.images[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        scn_panel, lag_panel = run.figures[0].axes
        assert {line.get_label() for line in scn_panel.get_lines()} == {f"{t} ({src})" for t, src in pairs}
        assert len(lag_panel.get_lines()) == len(pairs) > 5


def test_notebooks_install_the_synced_repository_and_default_to_its_sample():
    """On Databricks a notebook runs in its folder: its first code cell installs the synced
    repository (this folder's parent), and its channel widget defaults to the sample there."""
    from lakestreams.explore import CELL, HEADER

    for notebook in NOTEBOOKS:
        text = notebook.read_text()
        pip = text.index("# MAGIC %pip install --quiet ..\n")
        assert text.startswith(HEADER) and pip < text.index("dbutils.widgets"), notebook.name
        assert CELL in text[pip - len(CELL) - 2:pip], notebook.name  # a cell of its own
        default = re.search(r'dbutils.widgets.text\("channel", "([^"]+)"\)', text).group(1)
        assert (notebook.parent / default).resolve() == REPO / "sample_data" / "hr_demo.yml", notebook.name


def test_dbt_docs_describe_every_model_and_column_and_bronze_is_fresh(spark, hr, capsys):
    from gold.dbt import BRONZE_SOURCE, SOURCE
    from lakestreams.cli import main
    from lakestreams.pipeline import known_targets

    ch, root, _, _ = hr
    targets = known_targets(spark, ch)
    # As an operator makes them: `lakestreams docs` on the channel file (the fixture's).
    channel_file = root / "hr_channel.yml"
    channel_file.write_text(yaml.safe_dump(HR_CHANNEL))
    assert main(["docs", "--channel", str(channel_file)]) == 0
    printed = capsys.readouterr()
    assert "dbt docs warning" not in printed.err, printed.err
    folder = Path(printed.out.split("dbt docs: ", 1)[1].splitlines()[0]).parent
    manifest = json.loads((folder / "manifest.json").read_text())
    catalog = json.loads((folder / "catalog.json").read_text())
    assert (folder / "index.html").is_file()
    models = {n["name"]: n for n in manifest["nodes"].values() if n["resource_type"] == "model"}
    assert set(models) == {t.model for t in targets} and len(models) == 6
    for name, node in models.items():
        assert node["description"], name
        described = {c.lower(): v["description"] for c, v in node["columns"].items()}
        # Every column the gold table has (the catalog read it from Spark) is described.
        columns = catalog["nodes"][node["unique_id"]]["columns"]
        assert columns and {c.lower() for c in columns} <= set(described), name
        assert all(described.values()), name
    sources = {n["name"]: n for n in manifest["sources"].values() if n["source_name"] == BRONZE_SOURCE}
    assert sources["change_records"]["loaded_at_field"] == "_ingested_at"
    # Every column bronze has (the catalog read it from Spark) is described.
    bronze = catalog["sources"][sources["change_records"]["unique_id"]]["columns"]
    described = {c: v["description"] for c, v in sources["change_records"]["columns"].items()}
    assert bronze and set(bronze) <= set(described) and all(described.values())
    # So is every column of the plan tables and of the instantiation table the models read.
    plan_sources = [n for n in manifest["sources"].values() if n["source_name"] == SOURCE]
    assert len(plan_sources) == len(targets) + 1
    for node in plan_sources:
        columns = catalog["sources"][node["unique_id"]]["columns"]
        described = {c: v["description"] for c, v in node["columns"].items()}
        assert columns and set(columns) <= set(described) and all(described.values()), node["name"]
    # The run ingested just now: bronze is fresh.
    assert "freshness of change_records: pass" in printed.out


def test_bronze_turns_stale_after_an_hour_and_fails_freshness_after_a_day(spark, tmp_path):
    """The bronze source's freshness is its newest ingestion time: an hour old warns (and
    dbt's warning reaches the caller), a day old is an error."""
    from gold.dbt import source_freshness

    ch = make_channel(tmp_path)
    write_lines(ch, "src", "f1.jsonl", Txn("t1", 100).ddl(REGIONS_DDL).commit())
    run_pipeline(spark, ch, stages=("bronze",))
    bronze = ch.storage.table("bronze", "change_records")
    fresh: list[str] = []
    assert [s for _, s, _ in source_freshness(spark, ch, [], fresh)] == ["pass"]
    assert not [w for w in fresh if "change_records" in w], fresh
    # Ageing the landing (bronze is append-only: this scratch channel's table lets it go).
    spark.sql(f"ALTER TABLE {bronze} SET TBLPROPERTIES ('delta.appendOnly' = 'false')")
    spark.sql(f"UPDATE {bronze} SET _ingested_at = _ingested_at - INTERVAL 2 HOURS")
    stale: list[str] = []
    assert [s for _, s, _ in source_freshness(spark, ch, [], stale)] == ["warn"]
    assert [w for w in stale if "change_records" in w], stale
    spark.sql(f"UPDATE {bronze} SET _ingested_at = _ingested_at - INTERVAL 1 DAY")
    with pytest.raises(ApplyError, match="dbt source failed: change_records: error"):
        source_freshness(spark, ch, [])


def test_every_bronze_column_has_a_description():
    from bronze.records import BRONZE_DDL
    from gold.dbt import BRONZE_COLUMNS

    assert set(BRONZE_COLUMNS) == {c.split()[0] for c in BRONZE_DDL.split(",")}
    assert all(BRONZE_COLUMNS.values())
