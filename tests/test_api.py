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


@pytest.mark.extended  # covered in the core: test_instantiation refuses a table with no instantiation SCN; test_error_queue declares a table through the API and instantiates it
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


def test_api_and_channel_file_make_the_same_rules(tmp_path):
    """Every kind of rule request, once through the API and once through YAML."""
    s = new_streams(tmp_path)
    s.add_schema_rules("hr", include_ddl=True, source_database="dbs1.example.com")
    s.add_table_rules("hr.departments", include_ddl=True, include_tagged_lcr=True,
                      and_condition=":lcr.get_tag() = HEXTORAW('02')")
    assert s.add_subset_rules("hr.regions", "region_id=2", source_database="dbs1.example.com") == (
        "REGIONS1", "REGIONS2", "REGIONS3"
    )
    assert s.add_rule(":dml.get_object_owner() = 'OE'", rule_name="oe_all", inclusion_rule=False) == "OE_ALL"
    s.rename_schema("HR1", "hr", "hr_copy")
    from_yaml = new_streams(tmp_path, apply={
        "rules": [
            {"schema": "hr", "include_ddl": True, "source_database": "dbs1.example.com"},
            {"table": "hr.departments", "include_ddl": True, "include_tagged_lcr": True,
             "and_condition": ":lcr.get_tag() = HEXTORAW('02')"},
            {"table": "hr.regions", "subset": "region_id=2", "source_database": "dbs1.example.com"},
            {"condition": ":dml.get_object_owner() = 'OE'", "name": "oe_all", "inclusion_rule": False},
        ],
        "transformations": [{"rule": "HR1", "rename_schema": {"from": "hr", "to": "hr_copy"}}],
    })
    assert s.rules() == from_yaml.rules()
    assert s.channel.clients == from_yaml.channel.clients
    assert len(s.rules()) == 8


def test_api_refuses_what_oracle_refuses(tmp_path):
    s = new_streams(tmp_path)
    with pytest.raises(ConfigError, match="positive rule set only"):
        s.add_subset_rules("hr.regions", "region_id=2", inclusion_rule=False)
    with pytest.raises(ConfigError, match="SYSDATE"):
        s.add_rule(":dml.get_object_name() = SYSDATE")
    with pytest.raises(ConfigError, match="not in the positive rule set"):
        s.rename_table("NO_SUCH_RULE", "hr.a", "hr.b")
    assert s.rules() == []  # nothing half-added


def test_set_key_columns_matches_the_channel_file_and_refuses_bad_lists(tmp_path):
    s = new_streams(tmp_path)
    s.set_key_columns("hr.regions", "region_name, zone")
    s.set_key_columns("hr.jobs", ["title"])
    filed = new_streams(tmp_path, keys=[{"table": "hr.regions", "columns": ["region_name", "zone"]},
                                        {"table": "hr.jobs", "columns": "title"}])
    assert s.channel.keys == filed.channel.keys
    assert [(k.owner, k.table, k.columns) for k in s.channel.keys] == [
        ("HR", "REGIONS", ("REGION_NAME", "ZONE")), ("HR", "JOBS", ("TITLE",))]
    s.set_key_columns("hr.jobs", None)  # NULL removes the substitute key
    assert [k.table for k in s.channel.keys] == ["REGIONS"]
    with pytest.raises(ConfigError, match="column_list: a column appears twice in ZONE, ZONE"):
        s.set_key_columns("hr.regions", "zone, ZONE")
    with pytest.raises(ConfigError, match="column_list: 'zone;' is not a valid identifier"):
        s.set_key_columns("hr.regions", ["zone;"])
    with pytest.raises(ConfigError, match="keys\\[1\\]: HR.JOBS is given a substitute key twice"):
        new_streams(tmp_path, keys=[{"table": "hr.jobs", "columns": ["title"]}, {"table": "HR.JOBS", "columns": ["x"]}])
    with pytest.raises(ConfigError, match="keys\\[0\\].columns: expected a list of column names"):
        new_streams(tmp_path, keys=[{"table": "hr.jobs", "columns": []}])


def test_update_conflict_handlers_and_compare_settings_match_the_channel_file(tmp_path):
    s = new_streams(tmp_path)
    s.set_update_conflict_handler("hr.regions", "maximum", "updated", "name, updated")
    s.set_update_conflict_handler("hr.regions", "DISCARD", None, ["note"])
    s.compare_old_values("hr.regions", "*", operation="DELETE", compare=False)
    filed = new_streams(
        tmp_path,
        update_conflict_handlers=[
            {"table": "hr.regions", "method": "MAXIMUM", "resolution_column": "UPDATED", "columns": ["name", "updated"]},
            {"table": "hr.regions", "method": "discard", "columns": "note"},
        ],
        compare_old_values=[{"table": "hr.regions", "columns": "*", "operation": "delete"}],
    )
    assert s.channel.conflict_handlers == filed.channel.conflict_handlers
    assert s.channel.compare_old_values == filed.channel.compare_old_values
    assert [(h.method, h.resolution_column, h.columns) for h in s.channel.conflict_handlers] == [
        ("MAXIMUM", "UPDATED", ("NAME", "UPDATED")), ("DISCARD", "NOTE", ("NOTE",))]
    # The same resolution column replaces its handler; no method removes it.
    s.set_update_conflict_handler("hr.regions", "OVERWRITE", "NOTE", ["note"])
    s.set_update_conflict_handler("hr.regions", None, "UPDATED", ["name", "updated"])
    assert [(h.method, h.columns) for h in s.channel.conflict_handlers] == [("OVERWRITE", ("NOTE",))]
    with pytest.raises(ConfigError, match="column NOTE of HR.REGIONS already has an update conflict handler"):
        s.set_update_conflict_handler("hr.regions", "DISCARD", "CODE", ["code", "note"])
    with pytest.raises(ConfigError, match="resolution_column: AMOUNT is not in the column list \\(NAME\\)"):
        s.set_update_conflict_handler("hr.regions", "MAXIMUM", "amount", ["name"])
    with pytest.raises(ConfigError, match="MAXIMUM compares a resolution column"):
        new_streams(tmp_path, update_conflict_handlers=[{"table": "hr.x", "method": "MAXIMUM", "columns": ["a"]}])
    with pytest.raises(ConfigError, match="'LATEST' is not one of OVERWRITE, DISCARD, MAXIMUM, MINIMUM"):
        s.set_update_conflict_handler("hr.regions", "latest", "code", ["code"])
    with pytest.raises(ConfigError, match="operation: 'INSERT' is not one of UPDATE, DELETE"):
        s.compare_old_values("hr.regions", ["note"], operation="insert")
    assert [h.method for h in s.channel.conflict_handlers] == ["OVERWRITE"]  # nothing half-set


def test_conflict_policy_of_a_target_refuses_columns_it_lacks(tmp_path):
    from gold.conflicts import Group, policy_for
    from lakestreams.errors import ApplyError
    from silver.dictionary import parse_create_table

    jobs = parse_create_table(JOBS_DDL.replace("title VARCHAR2(35)", "title VARCHAR2(35), note VARCHAR2(9)"))
    s = new_streams(tmp_path)
    s.set_update_conflict_handler("hr.jobs", "DISCARD", None, ["note"])
    s.compare_old_values("hr.jobs", ["title"], operation="*", compare=False)
    s.compare_old_values("hr.jobs", ["title"], operation="DELETE", compare=True)  # later settings win
    policy = policy_for(s.channel, jobs)
    assert policy.groups == (Group("DISCARD", "NOTE", ("NOTE",)), Group(None, None, ("TITLE",)))
    assert policy.update_compared == {"NOTE"} and policy.delete_compared == {"NOTE", "TITLE"}
    s.set_update_conflict_handler("hr.jobs", "OVERWRITE", None, ["salary"])
    with pytest.raises(ApplyError, match="OVERWRITE update conflict handler of HR.JOBS names SALARY, which is not a "
                                         "comparable column of the target \\(comparable: TITLE, NOTE\\)"):
        policy_for(s.channel, jobs)
    s.set_update_conflict_handler("hr.jobs", None, "SALARY", ["salary"])
    s.compare_old_values("hr.jobs", ["job_id"], compare=False)
    with pytest.raises(ApplyError, match="names key column JOB_ID: rows are found by it"):
        policy_for(s.channel, jobs)
