"""Bronze: every line lands in bronze or in quarantine with a reason; ingest is exactly once."""

from __future__ import annotations

import json

import yaml
from bad_records import GOOD, LINES, landed_as, line
from conftest import make_channel, write_lines

from bronze.ingest import run_bronze
from lakestreams.cli import main
from lakestreams.spark import ensure_schemas

CASES = {landed_as(text): reason for _, text, reason in LINES}


def test_quarantine_reasons_and_exactly_once(spark, tmp_path, capsys):
    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    ddl = dict(GOOD, command_type="SOME NEW VERB", ddl_text="GRANT SELECT ON hr.x TO y", position=3)
    ddl.pop("new_values")
    write_lines(ch, "src", "a.jsonl", [json.dumps(GOOD), json.dumps(ddl), *(text for _, text, _ in LINES)])
    run_bronze(spark, ch)
    bronze = spark.table(ch.storage.table("bronze", "change_records").replace("`", ""))
    quarantine = spark.table(ch.storage.table("bronze", "quarantine").replace("`", ""))
    got = {r["raw"]: r["reason"] for r in quarantine.collect()}
    assert len(got) == len(CASES)
    for text, reason in CASES.items():
        assert got[text].startswith(reason), (text, got[text])
    # DDL verbs are an open set; values keep their JSON types ("0012" stays a string).
    assert bronze.count() == 2
    row = bronze.where("ddl_text IS NULL").selectExpr("to_json(new_values) AS v").first()
    assert json.loads(row["v"]) == {"ID": 1, "NAME": "0012"}

    # Re-running with no new file writes nothing; a new file adds only its lines.
    versions = (bronze.count(), quarantine.count())
    run_bronze(spark, ch)
    assert (bronze.count(), quarantine.count()) == versions
    write_lines(ch, "src", "b.jsonl", [line(position=2), "not json"])
    run_bronze(spark, ch)
    assert (bronze.count(), quarantine.count()) == (versions[0] + 1, versions[1] + 1)

    # `lakestreams maintain` (the maintenance job's task) compacts what the appends left and
    # vacuums; the rows stay.
    table = ch.storage.table("bronze", "change_records")
    before = spark.sql(f"DESCRIBE DETAIL {table}").first()["numFiles"]
    path = tmp_path / "channel.yml"
    path.write_text(yaml.safe_dump({
        "name": "t", "storage": {"warehouse": str(ch.storage.warehouse), "state": str(ch.storage.state),
                                 "schema": ch.storage.schema},
        "landing": [{"name": "src", "path": str(ch.landing[0].path)}],
    }))
    assert main(["maintain", "--channel", str(path)]) == 0
    assert f"maintained {table}" in capsys.readouterr().out
    assert before > 1 and spark.sql(f"DESCRIBE DETAIL {table}").first()["numFiles"] == 1
    ops = {r["operation"] for r in spark.sql(f"DESCRIBE HISTORY {table}").collect()}
    assert {"OPTIMIZE", "VACUUM START", "VACUUM END"} <= ops, ops
    assert (bronze.count(), quarantine.count()) == (versions[0] + 1, versions[1] + 1)
    # A table in the schema under a name the project never makes (the local catalog takes
    # letters, digits and _; Unity Catalog takes more) is named, not quoted into SQL: the
    # others are still maintained, and the command exits 1.
    odd = f"`{ch.storage.schema_name('bronze')}`.`_scratch`"
    spark.sql(f"CREATE TABLE {odd} (x INT) USING delta")
    try:
        assert main(["maintain", "--channel", str(path)]) == 1
        out, err = capsys.readouterr()
        assert f"maintained {table}" in out
        assert f"not maintained {ch.storage.schema_name('bronze')}.'_scratch': not a table name" in err
    finally:
        spark.sql(f"DROP TABLE {odd}")
