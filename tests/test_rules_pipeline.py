"""Subset rules, row migration and transformations, end to end into gold (one pipeline run)."""

from __future__ import annotations

import pytest
import yaml
from chispa import assert_df_equality
from conftest import make_channel, write_lines
from pyspark.sql import functions as F
from records import Txn

from lakestreams.audit import run_audit
from lakestreams.cli import main
from lakestreams.config import load_channel
from lakestreams.pipeline import rule_report, run_pipeline
from silver.simulate import format_simulation, simulate

REGIONS = (
    "CREATE TABLE hr.regions (region_id NUMBER(4) NOT NULL, region_name VARCHAR2(25), zone NUMBER(2), "
    "CONSTRAINT reg_pk PRIMARY KEY (region_id))"
)
EMPLOYEES = (
    "CREATE TABLE hr.employees (employee_id NUMBER(6) NOT NULL, name VARCHAR2(20), salary NUMBER(8,2), "
    "ssn VARCHAR2(11), CONSTRAINT emp_pk PRIMARY KEY (employee_id))"
)
APPLY = {
    "rules": [
        {"table": "hr.regions", "subset": "zone=2", "source_database": "dbs1.example.com"},
        {"table": "hr.employees", "source_database": "dbs1.example.com"},
    ],
    "transformations": [
        {"rule": "EMPLOYEES1", "rename_column": {"table": "hr.employees", "from": "salary", "to": "pay"}},
        {"rule": "EMPLOYEES1", "delete_column": {"table": "hr.employees", "column": "ssn"}},
        {"rule": "EMPLOYEES1", "add_column": {"table": "hr.employees", "column": "origin", "type": "VARCHAR2(64)",
                                              "expression": ":lcr.get_source_database_name()"}},
        {"rule": "EMPLOYEES1", "rename_table": {"from": "hr.employees", "to": "hr.staff"}},
    ],
}


def records() -> list[dict]:
    def region(cmd, old=None, new=None):
        return ("row", cmd, "REGIONS", old, new)

    txns = [
        [("ddl", REGIONS, "REGIONS"), ("ddl", EMPLOYEES, "EMPLOYEES")],
        [region("INSERT", new={"REGION_ID": 1, "REGION_NAME": "Europe", "ZONE": 1}),
         region("INSERT", new={"REGION_ID": 2, "REGION_NAME": "Americas", "ZONE": 2}),
         region("INSERT", new={"REGION_ID": 3, "REGION_NAME": "Asia", "ZONE": 1})],
        # 3: outside → inside: an INSERT of the whole row (old ∪ new)
        [region("UPDATE", old={"REGION_ID": 3, "REGION_NAME": "Asia", "ZONE": 1}, new={"ZONE": 2})],
        # 4: inside → outside: a DELETE
        [region("UPDATE", old={"REGION_ID": 2, "ZONE": 2}, new={"ZONE": 1})],
        # 5: zone unchanged (only in the old image, use_old = 'Y'): an UPDATE inside the subset
        [region("UPDATE", old={"REGION_ID": 3, "REGION_NAME": "Asia", "ZONE": 2}, new={"REGION_NAME": "APAC"})],
        # 6: outside → outside: discarded
        [region("UPDATE", old={"REGION_ID": 1, "ZONE": 1}, new={"REGION_NAME": "EU"})],
        # 7: moves in, but REGION_NAME is in neither image: the whole transaction errors
        [region("UPDATE", old={"REGION_ID": 1, "ZONE": 1}, new={"ZONE": 2}),
         region("INSERT", new={"REGION_ID": 5, "REGION_NAME": "Oceania", "ZONE": 2})],
        # 8: ZONE in neither image: cannot be placed in or out of the subset
        [region("UPDATE", old={"REGION_ID": 1}, new={"REGION_NAME": "X"})],
        [("row", "INSERT", "EMPLOYEES", None, {"EMPLOYEE_ID": 1, "NAME": "King", "SALARY": 100, "SSN": "x"})],
        [("row", "UPDATE", "EMPLOYEES", {"EMPLOYEE_ID": 1, "SALARY": 100}, {"SALARY": 200})],
    ]
    out = []
    for i, ops in enumerate(txns, start=1):
        t = Txn(f"R.{i}", 100 * i)
        for op in ops:
            if op[0] == "ddl":
                t.ddl(op[1], name=op[2])
            else:
                t.row(op[1], table=op[2], old=op[3], new=op[4])
        out += t.commit()
    return out


@pytest.fixture(scope="module")
def channel(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rules_pipeline")
    ch = make_channel(tmp, apply=APPLY)
    write_lines(ch, "src", "changes.jsonl", records())
    run_pipeline(spark, ch)
    return ch


def test_subset_table_holds_the_subset(spark, channel):
    gold = spark.table(f"{channel.storage.schema_name('gold')}.hr__regions").select("REGION_ID", "REGION_NAME", "ZONE")
    expected = spark.createDataFrame([(3, "APAC", 2)], "REGION_ID INT, REGION_NAME STRING, ZONE INT")
    assert_df_equality(gold, expected, ignore_row_order=True, ignore_nullable=True)


def test_unplaceable_and_half_rows_go_to_the_error_queue(spark, channel):
    queue = {r["transaction_id"]: r for r in spark.table(channel.storage.table("gold", "error_queue").replace("`", "")).collect()}
    assert set(queue) == {"R.7", "R.8"}
    assert "REGION_NAME are in neither the old nor the new image" in queue["R.7"]["error"]
    assert queue["R.7"]["record_count"] == 3  # both row LCRs and the COMMIT: nothing of it applied
    assert "ZONE in neither the old nor the new image" in queue["R.8"]["error"]


def test_transformed_target(spark, channel):
    gold_schema = channel.storage.schema_name("gold")
    assert not spark.catalog.tableExists(f"{gold_schema}.hr__employees")
    staff = spark.table(f"{gold_schema}.hr__staff")
    assert staff.columns[:4] == ["EMPLOYEE_ID", "NAME", "PAY", "ORIGIN"]
    expected = spark.createDataFrame(
        [(1, "King", 200, "DBS1.EXAMPLE.COM")], "EMPLOYEE_ID INT, NAME STRING, PAY INT, ORIGIN STRING"
    ).withColumn("PAY", F.col("PAY").cast("decimal(8,2)"))
    assert_df_equality(staff.select(*expected.columns), expected, ignore_nullable=True)


def test_rule_outcomes_and_accounting(spark, channel):
    report = {(r["rule_name"], r["outcome"], r["migration"]): r["records"] for r in rule_report(spark, channel)}
    assert report[("REGIONS1", "kept", "UPDATE -> INSERT")] == 2  # transactions 3 and 7
    assert report[("REGIONS3", "kept", "UPDATE -> DELETE")] == 1
    assert report[("REGIONS2", "kept", None)] == 1
    # two inserts in zone 1, transaction 6, and both CREATE TABLE records (no DDL rule;
    # they still feed the source dictionary and count as DDL in the audit)
    assert report[("(no rule)", "discarded", None)] == 5
    assert report[("(no rule)", "error", None)] == 1
    assert report[("EMPLOYEES1", "kept", None)] == 2
    audit = run_audit(spark, channel)
    assert audit.ok, audit.problems
    assert audit.buckets["discarded"] == 3


def test_the_rule_audit_notebook_shows_what_each_rule_kept_discarded_and_migrated(spark, channel, tmp_path):
    from conftest import REPO

    from lakestreams.explore import run_notebook

    path = tmp_path / "channel.yml"
    path.write_text(yaml.safe_dump({
        "name": channel.name, "apply": APPLY,
        "storage": {"warehouse": str(channel.storage.warehouse), "state": str(channel.storage.state),
                    "schema": channel.storage.schema},
        "landing": [{"name": "src", "path": str(channel.landing[0].path)}],
    }))
    run = run_notebook(REPO / "notebooks" / "rule_audit.py", spark, {"channel": str(path)}, tmp_path / "nb")
    # The rules with their Oracle conditions, then per batch what each kept or discarded.
    assert all(rule in run.tables[0] for rule in ("REGIONS1", "REGIONS2", "REGIONS3", "EMPLOYEES1"))
    lines = [line.split() for line in run.printed.splitlines()]
    assert ["REGIONS1", "kept", "2", "migrated", "UPDATE", "->", "INSERT"] in [x[3:] for x in lines if len(x) > 3]
    assert ["(no", "rule)", "discarded", "5"] in [x[3:] for x in lines if len(x) > 3]


def test_simulate_reports_what_a_proposed_channel_changes(spark, channel, tmp_path):
    proposed = channel.replace(clients=load_channel_with(tmp_path, {"rules": [{"schema": "hr"}]}).clients)
    rows = simulate(spark, channel, proposed)
    by = {(r["rule_name"], r["outcome"], r["table_name"]): (r["current"], r["proposed"]) for r in rows}
    assert by[("HR1", "kept", "REGIONS")] == (0, 10)
    assert by[("(no rule)", "discarded", "REGIONS")] == (4, 1)  # its CREATE TABLE: no DDL rule either way
    assert ("EMPLOYEES1", "kept", "EMPLOYEES") in by
    assert simulate(spark, channel, channel) == []
    printed = format_simulation(rows).splitlines()
    assert printed[0].split() == ["table", "client", "rule", "outcome", "migration", "current", "proposed"]
    assert any("HR.REGIONS" in line and "UPDATE -> INSERT" in line and line.endswith(" 0") for line in printed)


def load_channel_with(tmp_path, apply: dict):
    path = tmp_path / "proposed.yml"
    path.write_text(yaml.safe_dump({"name": "p", "landing": [{"name": "src", "path": "landing"}], "apply": apply}))
    return load_channel(path)


def test_rules_command_prints_oracle_conditions(tmp_path, capsys):
    path = tmp_path / "c.yml"
    path.write_text(yaml.safe_dump({"name": "c", "landing": [{"name": "src", "path": "landing"}], "apply": APPLY}))
    assert main(["rules", "--channel", str(path)]) == 0
    out = capsys.readouterr().out
    assert "apply apply  positive rule set APPLY_RULESET" in out
    assert "REGIONS1  (DML subset INSERT)" in out
    assert ":dml.get_value('NEW','\"ZONE\"').AccessNumber()=2" in out
    assert "transformation on EMPLOYEES1: rename_table" in out
