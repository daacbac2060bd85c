"""`lakestreams rebuild TABLE`: a table re-derived under changed rules equals a replica built
under those rules from the start; what shares no transaction or gold table is left alone;
a rebuild killed on the way finishes when run again."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml
from chispa import assert_df_equality
from conftest import write_lines
from pyspark.sql import functions as F
from records import Txn

import lakestreams.rebuild as rebuild_module
from lakestreams.audit import run_audit
from lakestreams.cli import main
from lakestreams.config import load_channel
from lakestreams.delta_io import drop_table, table_names
from lakestreams.errors import ConfigError, ReplicationError
from lakestreams.pipeline import run_pipeline
from lakestreams.rebuild import find_scope, rebuild

SRC = "DBS1.EXAMPLE.COM"
DDL = {
    "REGIONS": "CREATE TABLE hr.regions (region_id NUMBER(4) NOT NULL, region_name VARCHAR2(25), zone NUMBER(2), "
               "CONSTRAINT reg_pk PRIMARY KEY (region_id))",
    "EMPLOYEES": "CREATE TABLE hr.employees (employee_id NUMBER(6) NOT NULL, name VARCHAR2(20), salary NUMBER(8,2), "
                 "region_id NUMBER(4), CONSTRAINT emp_pk PRIMARY KEY (employee_id))",
    "COUNTRIES": "CREATE TABLE hr.countries (country_id CHAR(2) NOT NULL, country_name VARCHAR2(40), "
                 "CONSTRAINT c_pk PRIMARY KEY (country_id))",
    "JOBS": "CREATE TABLE hr.jobs (job_id VARCHAR2(10) NOT NULL, title VARCHAR2(35), "
            "CONSTRAINT job_pk PRIMARY KEY (job_id))",
}
# Before: every table of HR as it is. After: regions in zone 2 only (a subset rule), and
# employees as hr.staff with salary renamed to pay. Countries and jobs keep what they had:
# they share no transaction with regions or employees, so their tables must stay untouched.
BEFORE = {"rules": [{"schema": "hr", "source_database": SRC}]}
AFTER = {
    "rules": [
        {"table": "hr.regions", "subset": "zone=2", "source_database": SRC},
        {"table": "hr.employees", "source_database": SRC},
        {"table": "hr.countries", "source_database": SRC},
        {"table": "hr.jobs", "source_database": SRC},
    ],
    "transformations": [
        {"rule": "EMPLOYEES1", "rename_column": {"table": "hr.employees", "from": "salary", "to": "pay"}},
        {"rule": "EMPLOYEES1", "rename_table": {"from": "hr.employees", "to": "hr.staff"}},
    ],
}


def history() -> list[dict]:
    def reg(i, name, zone):
        return {"REGION_ID": i, "REGION_NAME": name, "ZONE": zone}

    out: list[dict] = []
    scn = 100
    for name, text in DDL.items():
        out += Txn(f"D.{name}", scn).ddl(text, name=name).commit()
        scn += 10
    out += Txn("T.1", 200).row("INSERT", new=reg(1, "Europe", 1)).row("INSERT", new=reg(2, "Americas", 2)) \
        .row("INSERT", new=reg(3, "Asia", 1)).commit()
    out += Txn("T.2", 210).row("INSERT", "COUNTRIES", new={"COUNTRY_ID": "UK", "COUNTRY_NAME": "United Kingdom"}) \
        .row("INSERT", "COUNTRIES", new={"COUNTRY_ID": "US", "COUNTRY_NAME": "United States"}).commit()
    # One transaction writes an employee and a region: the two tables are rebuilt together.
    out += Txn("T.3", 220).row("INSERT", "EMPLOYEES", new={"EMPLOYEE_ID": 7, "NAME": "King", "SALARY": 100,
                                                            "REGION_ID": 2}) \
        .row("UPDATE", old={"REGION_ID": 2, "ZONE": 2}, new={"REGION_NAME": "America"}).commit()
    out += Txn("T.4", 230).row("UPDATE", old=reg(3, "Asia", 1), new={"ZONE": 2}).commit()  # into zone 2
    out += Txn("T.5", 240).row("UPDATE", "EMPLOYEES", old={"EMPLOYEE_ID": 7, "SALARY": 100}, new={"SALARY": 150}) \
        .commit()
    out += Txn("T.6", 250).row("DELETE", "COUNTRIES", old={"COUNTRY_ID": "US"}).commit()
    out += Txn("T.7", 260).row("INSERT", "JOBS", new={"JOB_ID": "AD", "TITLE": "President"}).commit()
    # An update of a row that never was inserted: an error under either rule set.
    out += Txn("T.8", 270).row("UPDATE", "EMPLOYEES", old={"EMPLOYEE_ID": 9, "SALARY": 1}, new={"SALARY": 2}).commit()
    # Zone 2 → 1: a DELETE once regions are a subset.
    out += Txn("T.9", 280).row("UPDATE", old={"REGION_ID": 3, "ZONE": 2}, new={"ZONE": 1}).commit()
    return out


def channel_file(root: Path, schema: str, warehouse: str, apply: dict) -> Path:
    path = root / f"{schema}.yml"
    path.write_text(yaml.safe_dump({
        "name": "rb",
        "storage": {"warehouse": warehouse, "state": f"state_{schema}", "schema": schema},
        "landing": [{"name": "src", "path": "landing/src", "transactions": "commit_records"}],
        "apply": apply,
    }))
    return path


@pytest.fixture(scope="module")
def setup(spark, tmp_path_factory):
    """A replica built under BEFORE, and one built under AFTER from the start (the expectation)."""
    root = tmp_path_factory.mktemp("rebuild")
    warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    before = load_channel(channel_file(root, "rb_before", warehouse, BEFORE))
    write_lines(before, "src", "changes_1.jsonl", history()[:16])
    run_pipeline(spark, before)
    write_lines(before, "src", "changes_2.jsonl", history()[16:])
    run_pipeline(spark, before)
    expected = load_channel(channel_file(root, "rb_expected", warehouse, AFTER))
    run_pipeline(spark, expected)
    after_file = channel_file(root, "rb_before", warehouse, AFTER)  # same tables, the rules changed
    return root, before, load_channel(after_file), after_file, expected


def gold(spark, channel, table):
    return spark.table(f"{channel.storage.schema_name('gold')}.{table}")


def versions(spark, channel, names):
    return {n: spark.sql(f"DESCRIBE HISTORY {channel.storage.table(*n)} LIMIT 1").first()["version"] for n in names}


def assert_same_replica(spark, actual, expected):
    st = actual.storage
    tables = sorted(table_names(spark, st, "gold"))
    assert tables == sorted(table_names(spark, expected.storage, "gold"))
    views = set(tables) - table_names(spark, st, "gold", views=False)
    for t in tables:
        # Progress, watermarks and conflict logs carry plan ids and times; views show tables.
        if t in views or t in ("apply_progress", "apply_watermarks", "apply_conflicts"):
            continue
        a, e = gold(spark, actual, t), gold(spark, expected, t)
        if t == "error_queue":
            a, e = (df.select("source_database", "transaction_id", "error", "records") for df in (a, e))
        assert_df_equality(a, e, ignore_row_order=True, ignore_nullable=True)
    audit, want = run_audit(spark, actual), run_audit(spark, expected)
    assert audit.ok, audit.problems
    assert audit.buckets == want.buckets

    # Rules per record of the rebuilt tables as if the new rules had always been in force
    # (countries and jobs keep the outcomes of the rule that judged them then).
    def rule_totals(ch):
        df = spark.table(ch.storage.table("silver", "rule_outcomes").replace("`", ""))
        rows = df.where(F.col("table_name").isin("REGIONS", "EMPLOYEES")).groupBy(
            "rule_name", "outcome", "migration").agg(F.sum("records").alias("n")).collect()
        return {(r["rule_name"], r["outcome"], r["migration"]): r["n"] for r in rows}

    assert rule_totals(actual) == rule_totals(expected)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.fixture(scope="module")
def rebuilt(spark, setup, monkeypatch_module):
    """Rebuild HR.REGIONS under AFTER, killed twice on the way (while clearing, after
    re-deriving silver), then run again by the command, which also applies it."""
    root, before, after, after_file, _ = setup
    untouched = [("gold", "hr__countries"), ("silver", "chg__dbs1_example_com__hr__countries")]
    kept_versions = versions(spark, before, untouched)
    kept_rows = gold(spark, before, "hr__countries").collect()

    calls = {"n": 0}
    real_delete = rebuild_module._delete_matching

    def killed_on_third(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed while clearing")
        return real_delete(*args, **kwargs)

    monkeypatch_module.setattr(rebuild_module, "_delete_matching", killed_on_third)
    with pytest.raises(KeyboardInterrupt):
        rebuild(spark, after, "hr.regions")
    monkeypatch_module.setattr(rebuild_module, "_delete_matching", real_delete)
    with pytest.raises(ReplicationError, match=r"the rebuild of HR.REGIONS \(silver batch \d+\) did not finish"):
        run_pipeline(spark, after)
    with pytest.raises(ReplicationError, match="run `lakestreams rebuild HR.REGIONS` again first"):
        rebuild(spark, after, "hr.jobs")

    real_derive = rebuild_module.derive

    def killed_after(*args, **kwargs):
        real_derive(*args, **kwargs)
        raise KeyboardInterrupt("killed after re-deriving silver")

    monkeypatch_module.setattr(rebuild_module, "derive", killed_after)
    with pytest.raises(KeyboardInterrupt):
        rebuild(spark, after, "hr.regions")
    monkeypatch_module.setattr(rebuild_module, "derive", real_derive)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["rebuild", "hr.regions", "--channel", str(after_file)])
    return code, out.getvalue(), kept_versions, kept_rows, untouched


def test_scope_is_the_tables_sharing_transactions_and_gold_tables(spark, setup, rebuilt):
    code, out, *_ = rebuilt
    assert code == 0, out
    assert out.splitlines()[:5] == [
        "rebuild of HR.REGIONS (resumed): silver batch 3",
        "  source tables re-derived (they share transactions or gold tables):",
        "    DBS1.EXAMPLE.COM  HR.EMPLOYEES",
        "    DBS1.EXAMPLE.COM  HR.REGIONS",
        "  gold tables rebuilt: hr__employees, hr__regions, hr__staff",
    ]
    assert "accounting          balanced" in out
    # By its target's name, after the rename: the same source tables.
    scope = find_scope(spark, setup[2], "HR", "STAFF")
    assert scope.tables == [(SRC, "HR", "EMPLOYEES"), (SRC, "HR", "REGIONS")]
    assert scope.models == ["hr__regions", "hr__staff"]
    assert scope.change_tables == ["chg__dbs1_example_com__hr__regions", "chg__dbs1_example_com__hr__staff"]


def test_rebuilt_replica_equals_one_built_under_the_new_rules(spark, setup, rebuilt):
    _, _, after, _, expected = setup
    assert not spark.catalog.tableExists(f"{after.storage.schema_name('gold')}.hr__employees")
    assert_same_replica(spark, after, expected)
    regions = {r["REGION_ID"]: r["REGION_NAME"] for r in gold(spark, after, "hr__regions").collect()}
    assert regions == {2: "America"}
    assert [tuple(r) for r in gold(spark, after, "hr__staff").select("EMPLOYEE_ID", "PAY").collect()] == [(7, 150)]


def test_tables_outside_the_scope_are_not_rewritten(spark, setup, rebuilt):
    _, _, after, _, _ = setup
    *_, kept_versions, kept_rows, untouched = rebuilt
    assert versions(spark, after, untouched) == kept_versions
    assert gold(spark, after, "hr__countries").collect() == kept_rows


def test_dropping_an_external_table_removes_its_folder(spark, tmp_path):
    """A new process registers warehouse folders as external tables; a table dropped by a
    rebuild and created again must not find its old log."""
    spark.sql("CREATE SCHEMA IF NOT EXISTS rb_drop")
    spark.range(3).write.format("delta").save(str(tmp_path / "t"))
    spark.catalog.createTable("rb_drop.t", path=str(tmp_path / "t"), source="delta")
    drop_table(spark, "`rb_drop`.`t`")
    assert not spark.catalog.tableExists("rb_drop.t")
    assert not (tmp_path / "t").exists()
    drop_table(spark, "`rb_drop`.`t`")  # again: nothing to do


def test_unknown_or_malformed_tables_are_refused(spark, setup, capsys):
    _, _, after, after_file, _ = setup
    with pytest.raises(ConfigError, match=r"HR.NOTHING is neither a source table .* \(known source tables: HR.COUNTRIES, "):
        rebuild(spark, after, "hr.nothing")
    assert main(["rebuild", "hr.regions;drop", "--channel", str(after_file)]) == 2
    assert "is not a valid identifier" in capsys.readouterr().err
