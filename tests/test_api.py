"""The Python API does what the channel file does, with the reference's names."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from conftest import _counter, write_lines
from records import Txn

from lakestreams.api import Streams
from lakestreams.audit import run_audit
from lakestreams.errors import ConfigError
from lakestreams.pipeline import run_pipeline

COUNTRIES_DDL = "CREATE TABLE hr.countries (country_id CHAR(2) NOT NULL, name VARCHAR2(40), CONSTRAINT c_pk PRIMARY KEY (country_id))"
JOBS_DDL = "CREATE TABLE hr.jobs (job_id VARCHAR2(10) NOT NULL, title VARCHAR2(35), CONSTRAINT j_pk PRIMARY KEY (job_id))"


def new_streams(tmp_path, **extra) -> Streams:
    return Streams.new(
        "api", [{"name": "src", "path": "landing/src"}], tmp_path,
        storage={"schema": f"t{next(_counter)}"}, **extra,
    )


def test_rule_names_sets_and_conditions(tmp_path):
    s = new_streams(tmp_path)
    assert s.add_global_rules(include_dml=True, include_ddl=True) == ("APPLY1", "APPLY2")
    assert s.add_table_rules("hr.job_history", inclusion_rule=False) == ("JOB_HISTORY1", None)
    assert s.add_schema_rules("oe", streams_type="capture", streams_name="cap", include_ddl=True, source_database="dbs1.example.com") == ("OE1", "OE2")
    rules = {r["rule_name"]: r for r in s.rules()}
    assert rules["JOB_HISTORY1"]["rule_set_type"] == "NEGATIVE"
    assert rules["OE2"]["condition"] == (
        "((:ddl.get_object_owner() = 'OE' or :ddl.get_base_table_owner() = 'OE') and "
        ":ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
    )
    with pytest.raises(ConfigError, match="this channel's apply client is 'apply', not 'other'"):
        s.add_table_rules("hr.x", streams_name="other")
    with pytest.raises(ConfigError, match="table_name"):
        s.add_table_rules("hr.x'; drop table y; --")
    with pytest.raises(ConfigError, match="non-negative integer SCN"):
        s.set_table_instantiation_scn("hr.x", "DBS1.EXAMPLE.COM", -5)


def test_channel_defined_tables_need_an_instantiation_scn(spark, tmp_path):
    s = new_streams(
        tmp_path,
        tables=[
            {"source_database": "DBS1.EXAMPLE.COM", "ddl": COUNTRIES_DDL},
            {"source_database": "DBS1.EXAMPLE.COM", "ddl": JOBS_DDL},
        ],
    )
    s.add_schema_rules("hr", source_database="DBS1.EXAMPLE.COM")
    s.set_table_instantiation_scn("hr.countries", "dbs1.example.com", 150)
    ch = s.channel
    recs = [
        *Txn("t1", 100).row("INSERT", table="COUNTRIES", new={"COUNTRY_ID": "NL", "NAME": "old"}).commit(),
        *Txn("t2", 200).row("INSERT", table="COUNTRIES", new={"COUNTRY_ID": "BE", "NAME": "Belgium"}).commit(),
        # JOBS has a definition but no instantiation SCN: the transaction is refused, as Oracle does.
        *Txn("t3", 300).row("INSERT", table="JOBS", new={"JOB_ID": "AD_PRES", "TITLE": "President"}).commit(),
    ]
    write_lines(ch, "src", "f.jsonl", recs)
    run_pipeline(spark, ch)
    gold = spark.table(f"{ch.storage.schema_name('gold')}.hr__countries").select("COUNTRY_ID", "NAME")
    assert_df_equality(gold, spark.createDataFrame([("BE", "Belgium")], "COUNTRY_ID STRING, NAME STRING"), ignore_nullable=True)
    eq = spark.table(ch.storage.table("gold", "error_queue").replace("`", "")).collect()
    assert [(r["transaction_id"], r["error"]) for r in eq] == [
        ("t3", "no instantiation SCN for HR.JOBS from DBS1.EXAMPLE.COM (set_table_instantiation_scn, a snapshot, or its CREATE TABLE record)")
    ]
    audit = run_audit(spark, ch)
    assert audit.ok, audit.problems
    assert (audit.buckets["below_instantiation"], audit.buckets["applied"], audit.buckets["error"]) == (1, 1, 1)
