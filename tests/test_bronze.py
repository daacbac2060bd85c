"""Bronze: every line lands in bronze or in quarantine with a reason; ingest is exactly once."""

from __future__ import annotations

import json

from conftest import make_channel, write_lines

from bronze.ingest import run_bronze
from lakestreams.spark import ensure_schemas

GOOD = {
    "source_database": "DBS1.EXAMPLE.COM", "command_type": "INSERT", "object_owner": "HR",
    "object_name": "REGIONS", "new_values": {"REGION_ID": 1, "POSTAL": "0012"}, "transaction_id": "1.2.3",
    "scn": 10, "commit_scn": 11, "position": 1, "commit_time": "2024-01-01T00:00:00Z", "tag": None,
}


def bad(**changes) -> str:
    r = dict(GOOD)
    for k, v in changes.items():
        if v is ...:
            r.pop(k)
        else:
            r[k] = v
    return json.dumps(r)


CASES = {
    '{"source_database": "X", ': "not valid JSON",
    "[1, 2]": "not a JSON object",
    "   ": "empty line",
    bad(commit_scn=...): "missing commit_scn",
    bad(command_type=...): "missing command_type",
    bad(transaction_id=...): "missing transaction_id",
    bad(commit_scn="11"): "field commit_scn is not an integer",
    bad(scn=1.5): "field scn is not an integer",
    bad(transaction_id=7): "field transaction_id is not a string",
    bad(command_type="MERGE"): "command_type MERGE is not a row command",
    bad(new_values=[1]): "field new_values is not a JSON object",
    bad(new_values=...): "INSERT without new_values",
    bad(command_type="DELETE", new_values=...): "UPDATE/DELETE without old_values",
    bad(scn=12): "scn is above commit_scn",
    bad(commit_time="yesterday"): "field commit_time is not an ISO-8601 timestamp",
    bad(tag="zz"): "field tag is not a hex string",
    bad(object_name=...): "row record without object_owner/object_name",
    bad(commit_scn=99999999999999999999): "field commit_scn does not fit a 64-bit integer",
    bad(source_database="A`B; DROP"): "field source_database is not a global database name",
    bad(commit_time=...): "missing commit_time",
}


def test_quarantine_reasons_and_exactly_once(spark, tmp_path):
    ch = make_channel(tmp_path)
    ensure_schemas(spark, ch.storage)
    ddl = dict(GOOD, command_type="SOME NEW VERB", ddl_text="GRANT SELECT ON hr.x TO y")
    ddl.pop("new_values")
    write_lines(ch, "src", "a.jsonl", [json.dumps(GOOD), json.dumps(ddl), *CASES])
    run_bronze(spark, ch)
    bronze = spark.table(ch.storage.table("bronze", "change_records").replace("`", ""))
    quarantine = spark.table(ch.storage.table("bronze", "quarantine").replace("`", ""))
    got = {r["raw"]: r["reason"] for r in quarantine.collect()}
    assert len(got) == len(CASES)
    for line, reason in CASES.items():
        assert got[line].startswith(reason), (line, got[line])
    # DDL verbs are an open set; values keep their JSON types ("0012" stays a string).
    assert bronze.count() == 2
    row = bronze.where("ddl_text IS NULL").selectExpr("to_json(new_values) AS v").first()
    assert json.loads(row["v"]) == {"POSTAL": "0012", "REGION_ID": 1}

    # Re-running with no new file writes nothing; a new file adds only its lines.
    versions = (bronze.count(), quarantine.count())
    run_bronze(spark, ch)
    assert (bronze.count(), quarantine.count()) == versions
    write_lines(ch, "src", "b.jsonl", [bad(position=2), "not json"])
    run_bronze(spark, ch)
    assert (bronze.count(), quarantine.count()) == (versions[0] + 1, versions[1] + 1)
