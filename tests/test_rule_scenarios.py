"""Rule scenarios as data (tests/scenarios/rules.yml): change records in, kept records out.

Each scenario's clients are read exactly as a channel file's ``capture``/``apply``
sections, then evaluated by the rules engine on a real Spark DataFrame.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pyspark.sql import functions as F

from lakestreams.config import _client
from silver import rules
from silver.rules import build_clients, evaluate

SPEC = yaml.safe_load((Path(__file__).parent / "scenarios" / "rules.yml").read_text())
SCHEMA = (
    "id STRING, source_database STRING, command_type STRING, object_owner STRING, object_name STRING, "
    "object_type STRING, base_table_owner STRING, base_table_name STRING, ddl_text STRING, tag STRING, "
    "old_json STRING, new_json STRING"
)


def record_row(r: dict) -> tuple:
    owner, name = r["table"].split(".")
    base_owner, base_name = r["base"].split(".") if r.get("base") else (None, None)
    if r.get("ddl") and not r.get("base"):
        base_owner, base_name = (owner, name) if r.get("object_type", "TABLE") == "TABLE" else (None, None)
    return (
        r["id"], r.get("source", "DBS1.EXAMPLE.COM"), r.get("command", "INSERT"),
        None if r.get("owner_null") else owner, name, r.get("object_type", "TABLE" if r.get("ddl") else None),
        base_owner, base_name, r.get("ddl"), r.get("tag"),
        json.dumps(r["old"]) if "old" in r else None, json.dumps(r["new"]) if "new" in r else None,
    )


def run_scenario(spark, scenario: dict):
    specs = [_client(t, scenario[t], t) for t in ("capture", "apply") if t in scenario]
    clients = build_clients(specs)
    df = spark.createDataFrame([record_row(r) for r in scenario["records"]], SCHEMA).select(
        "*", F.try_parse_json("old_json").alias("old_values"), F.try_parse_json("new_json").alias("new_values")
    ).drop("old_json", "new_json")
    out = evaluate(df, clients).select(
        "id", "command_type", "object_owner", "object_name", "_discard", "_rule_error", "_migrated_from",
        F.coalesce("_rule_apply", "_rule_capture").alias("rule"),
        F.to_json("old_values").alias("old"), F.to_json("new_values").alias("new"),
    )
    return {r["id"]: r.asDict() for r in out.collect()}  # a dozen test records


@pytest.mark.parametrize("via", ["columns", "parameter_table"])
@pytest.mark.parametrize("scenario", SPEC["scenarios"], ids=lambda s: s["name"])
def test_rule_scenario(spark, scenario, via, monkeypatch):
    # Both ways of evaluating system-created rules must agree on every scenario.
    monkeypatch.setattr(rules, "PARAMETER_TABLE_FROM", 10_000 if via == "columns" else 0)
    got = run_scenario(spark, scenario)
    assert set(got) == set(scenario["expect"]), "every record has an expectation"
    for rid, want in scenario["expect"].items():
        g = got[rid]
        where = f"{scenario['name']}/{rid}: {g}"
        if want == "error":
            assert g["_rule_error"], where
            continue
        assert g["_rule_error"] is None, where
        if want == "discarded" or (isinstance(want, dict) and "discarded" in want):
            assert g["_discard"] is not None, where
            if isinstance(want, dict):
                assert want["discarded"] in g["_discard"], where
            continue
        assert g["_discard"] is None, where
        if want == "kept":
            continue
        for key, value in want.items():
            if key in ("new", "old"):
                assert (json.loads(g[key]) if g[key] else None) == value, where
            else:
                field = {"command": "command_type", "owner": "object_owner", "name": "object_name",
                         "migrated_from": "_migrated_from", "rule": "rule"}[key]
                assert g[field] == value, where
