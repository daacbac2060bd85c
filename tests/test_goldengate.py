"""GoldenGate's DDL procedure (silver.goldengate): per step, a record in and its outcome out."""

from __future__ import annotations

import doctest
import re

import pytest

from lakestreams.errors import ConfigError
from silver import goldengate
from silver.ddl import RenameTable
from silver.gg_params import config_from_yaml, parse_params
from silver.goldengate import (
    STEPS,
    DdlAbend,
    DdlErrorRule,
    DdlExecutionError,
    DdlFilter,
    DdlRecord,
    DdlState,
    DdlSubst,
    GgDdlConfig,
    MapRule,
    ObjectName,
    process,
)

HR_MAP = "MAP hr.*, TARGET hr_copy.*;\n"
ADD_NOTES = "ALTER TABLE hr.employees ADD (notes VARCHAR2(100))"


def run(params: str, text: str, execute=None, **record):
    return process(DdlRecord(text, **record), parse_params(params), execute)


def failing(*codes):
    """An executor that raises the given codes in turn, then succeeds; it keeps what it ran."""
    calls, pending = [], list(codes)

    def execute(target):
        calls.append(target.text)
        if pending:
            raise DdlExecutionError(pending.pop(0), "refused by the target")
    execute.calls = calls
    return execute


# -- 1, 5, 11: comments ---------------------------------------------------------------------------
COMMENTED = "ALTER TABLE hr.employees /* ticket HR-17 */ ADD (notes VARCHAR2(100)) -- by dba"


def test_comments_are_kept_when_no_removecomments():
    out = run(HR_MAP, COMMENTED)
    assert out.kind == "APPLIED"
    assert "ticket HR-17" in out.texts[0] and "by dba" in out.texts[0]


def test_removecomments_after_lets_instrcomments_see_them_then_drops_them():
    params = HR_MAP + "DDL INCLUDE INSTRCOMMENTS 'HR-17'\nDDLOPTIONS REMOVECOMMENTS AFTER\n"
    out = run(params, COMMENTED)
    assert out.kind == "APPLIED"
    assert out.texts == ("ALTER TABLE HR_COPY.EMPLOYEES ADD (notes VARCHAR2(100))",)
    assert out.reason == "included by INCLUDE INSTRCOMMENTS 'HR-17'"


def test_removecomments_before_hides_them_from_instrcomments():
    params = HR_MAP + "DDL INCLUDE INSTRCOMMENTS 'HR-17'\nDDLOPTIONS REMOVECOMMENTS BEFORE\n"
    out = run(params, COMMENTED)
    assert (out.kind, out.reason) == ("EXCLUDED", "no INCLUDE clause holds")
    assert out.targets[0].text == "ALTER TABLE HR_COPY.EMPLOYEES ADD (notes VARCHAR2(100))"


def test_instr_reads_the_statement_and_not_its_comments():
    params = HR_MAP + "DDL INCLUDE INSTR 'ticket'\n"
    assert run(params, COMMENTED).kind == "EXCLUDED"
    assert run(params.replace("'ticket'", "'notes'"), COMMENTED).kind == "APPLIED"


# -- 2: IGNOREREPLICATES ------------------------------------------------------------------------
def test_ignorereplicates_ignores_ddl_made_by_an_apply():
    out = run(HR_MAP, ADD_NOTES, tag="0A")
    assert out.kind == "IGNORED_REPLICATE" and out.targets == ()
    assert out.trail == ("separate_comments", "ignore_replicates")


def test_getreplicates_keeps_tagged_ddl_and_null_tags_always_pass():
    assert run(HR_MAP + "DDLOPTIONS GETREPLICATES\n", ADD_NOTES, tag="0A").kind == "APPLIED"
    assert run(HR_MAP, ADD_NOTES, tag=None).kind == "APPLIED"


# -- 3, 4: RENAME ---------------------------------------------------------------------------------
def test_rename_becomes_alter_table_rename_and_keeps_optype_rename():
    text = "RENAME departments_new TO emp_departments"
    out = run("DDL INCLUDE OPTYPE RENAME\n", text, owner="HR")
    assert out.kind == "APPLIED" and out.scope == "UNMAPPED"
    assert out.texts == ("ALTER TABLE departments_new RENAME TO emp_departments",)
    assert out.statements[0].actions == (RenameTable(None, "EMP_DEPARTMENTS"),)
    assert "rename_to_alter" in out.trail


def test_mapped_rename_maps_the_old_name_and_leaves_the_new_one_unqualified():
    out = run(HR_MAP, "RENAME employees TO staff", owner="HR")
    assert out.texts == ("ALTER TABLE HR_COPY.EMPLOYEES RENAME TO STAFF",)


# -- 3, 6: scope ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, scope, target", [
    (ADD_NOTES, "MAPPED", ObjectName("HR_COPY", "EMPLOYEES")),
    ("TRUNCATE TABLE hr.job_history", "MAPPED", ObjectName("HR_COPY", "JOB_HISTORY")),
    ("GRANT SELECT ON hr.departments TO hr_reader", "MAPPED", ObjectName("HR_COPY", "DEPARTMENTS")),
    ("ALTER TABLE scott.emp ADD (bonus NUMBER(8,2))", "UNMAPPED", ObjectName("SCOTT", "EMP")),
    ("CREATE USER hr_reader IDENTIFIED BY secret", "OTHER", None),
    ("CREATE ROLE hr_admin", "OTHER", None),
    ("ALTER TABLESPACE users ADD DATAFILE 'users02.dbf' SIZE 100M", "OTHER", None),
])
def test_scope(text, scope, target):
    out = process(DdlRecord(text), parse_params(HR_MAP + "DDLERROR PARSE IGNORE\n"))
    assert (out.scope, out.targets[0].name) == (scope, target)


def test_unqualified_names_take_the_records_owner():
    out = run(HR_MAP, "ALTER TABLE employees ADD (notes VARCHAR2(100))", owner="HR")
    assert out.scope == "MAPPED"
    assert out.texts == ("ALTER TABLE HR_COPY.EMPLOYEES ADD (notes VARCHAR2(100))",)


# -- 7: MAP ---------------------------------------------------------------------------------------
def test_wildcard_map_target_star_takes_the_source_name():
    params = "MAP hr.emp*, TARGET hr_bak.bak_*;\n"
    out = run(params, "CREATE TABLE hr.employees (employee_id NUMBER(6) PRIMARY KEY, "
                      "last_name VARCHAR2(25))")
    assert out.targets[0].name == ObjectName("HR_BAK", "BAK_EMPLOYEES")
    assert out.statements[0].table.owner == "HR_BAK" and out.statements[0].name == "BAK_EMPLOYEES"
    assert run(params, "DROP TABLE hr.departments").scope == "UNMAPPED"


def test_two_maps_give_two_targets_each_parsed():
    params = HR_MAP + "MAP hr.employees, TARGET hr_hist.employees_h;\n"
    out = run(params, ADD_NOTES)
    assert [t.name for t in out.targets] == [
        ObjectName("HR_COPY", "EMPLOYEES"), ObjectName("HR_HIST", "EMPLOYEES_H")]
    assert [(s.owner, s.name, s.actions[0].column.name) for s in out.statements] == [
        ("HR_COPY", "EMPLOYEES", "NOTES"), ("HR_HIST", "EMPLOYEES_H", "NOTES")]


def test_map_replaces_only_the_base_object_in_the_tree():
    text = ("ALTER TABLE hr.employees ADD CONSTRAINT emp_dept_fk FOREIGN KEY (department_id) "
            "REFERENCES hr.departments (department_id)")
    out = run("MAP hr.employees, TARGET hr_copy.employees;\n", text)
    assert out.texts[0].startswith("ALTER TABLE HR_COPY.EMPLOYEES ADD CONSTRAINT emp_dept_fk")
    assert "REFERENCES hr.departments" in out.texts[0]


# -- 8: MAPDERIVED --------------------------------------------------------------------------------
INDEX = "CREATE INDEX hr.emp_name_ix ON hr.employees (last_name, first_name)"
EMP_MAP = "MAP hr.employees, TARGET hr_copy.employees;\n"


@pytest.mark.parametrize("params, text, expected", [
    (EMP_MAP, INDEX,
     "CREATE INDEX HR_COPY.EMP_NAME_IX ON HR_COPY.EMPLOYEES (last_name, first_name)"),
    (EMP_MAP + "MAP hr.emp_name_ix, TARGET hr_idx.emp_name_ix2;\n", INDEX,
     "CREATE INDEX HR_IDX.EMP_NAME_IX2 ON HR_COPY.EMPLOYEES (last_name, first_name)"),
    (EMP_MAP + "DDLOPTIONS NOMAPDERIVED\n", INDEX,
     "CREATE INDEX HR.EMP_NAME_IX ON HR_COPY.EMPLOYEES (last_name, first_name)"),
    (EMP_MAP, "CREATE UNIQUE INDEX emp_email_uk ON employees (email)",
     "CREATE UNIQUE INDEX HR_COPY.EMP_EMAIL_UK ON HR_COPY.EMPLOYEES (email)"),
])
def test_mapderived(params, text, expected):
    out = run(params, text, owner="HR")
    assert (out.scope, out.texts) == ("MAPPED", (expected,))
    assert out.statements[0].object_type.endswith("INDEX")


def test_derived_object_of_an_unmapped_table_keeps_its_names():
    out = run(EMP_MAP, "CREATE INDEX hr.dept_loc_ix ON hr.departments (location_id)")
    assert out.scope == "UNMAPPED"
    assert out.texts == ("CREATE INDEX hr.dept_loc_ix ON hr.departments (location_id)",)


# -- 9: DDL INCLUDE / EXCLUDE ------------------------------------------------------------
def test_every_criterion_of_an_include_must_hold():
    params = HR_MAP + "DDL INCLUDE OPTYPE CREATE OBJTYPE 'INDEX'\n"
    out = run(params, "CREATE TABLE hr.regions (region_id NUMBER PRIMARY KEY)")
    assert (out.kind, out.reason) == ("EXCLUDED", "no INCLUDE clause holds")
    assert run(params, INDEX).kind == "APPLIED"


def test_an_exclude_that_holds_wins_over_an_include():
    params = HR_MAP + "DDL INCLUDE MAPPED, EXCLUDE OPTYPE DROP OBJTYPE 'TABLE'\n"
    out = run(params, "DROP TABLE hr.job_history")
    assert (out.kind, out.reason) == ("EXCLUDED", "excluded by EXCLUDE OPTYPE DROP OBJTYPE 'TABLE'")
    assert run(params, "DROP INDEX hr.emp_name_ix").kind == "APPLIED"
    assert "filter_ddl" == out.trail[-1]


def test_without_clauses_every_ddl_is_included():
    out = run(HR_MAP, "DROP TABLE hr.job_history")
    assert (out.kind, out.reason) == ("APPLIED", "no INCLUDE or EXCLUDE clause")


def test_scope_criteria_and_objname_on_the_target_name():
    params = HR_MAP + "DDL INCLUDE UNMAPPED INCLUDE MAPPED OBJNAME hr_copy.emp*\n"
    assert run(params, ADD_NOTES).kind == "APPLIED"
    assert run(params, "ALTER TABLE scott.emp ADD (bonus NUMBER)").kind == "APPLIED"
    assert run(params, "DROP TABLE hr.departments").kind == "EXCLUDED"
    # Replicat maps before it filters: OBJNAME names the MAP's target, not the source.
    assert run(HR_MAP + "DDL INCLUDE OBJNAME hr.employees\n", ADD_NOTES).kind == "EXCLUDED"


def test_one_target_excluded_the_other_applied():
    params = HR_MAP + "MAP hr.employees, TARGET hr_hist.employees;\nDDL INCLUDE OBJNAME hr_hist.*\n"
    out = run(params, ADD_NOTES)
    assert out.kind == "APPLIED"
    assert [t.kind for t in out.targets] == ["EXCLUDED", "APPLIED"]
    assert out.reason == ("HR_COPY.EMPLOYEES: no INCLUDE clause holds; "
                          "HR_HIST.EMPLOYEES: included by INCLUDE OBJNAME HR_HIST.*")
    assert out.texts == ("ALTER TABLE HR_HIST.EMPLOYEES ADD (notes VARCHAR2(100))",)


# -- 10, 12: DDLSUBST and re-parse ------------------------------------------------------
CREATE_REGIONS = ("CREATE TABLE hr.regions (region_id NUMBER PRIMARY KEY, "
                  "region_name VARCHAR2(25)) TABLESPACE users")


def test_ddlsubst_runs_in_file_order_each_with_its_own_clauses():
    params = HR_MAP + (
        "DDLSUBST 'tablespace users' WITH 'TABLESPACE hr_data'\n"
        "DDLSUBST 'hr_data' WITH 'hr_data_big' INCLUDE INSTR 'TABLESPACE hr_data'\n"
        "DDLSUBST 'VARCHAR2(25)' WITH 'VARCHAR2(50)' INCLUDE OBJTYPE 'INDEX'\n")
    out = run(params, CREATE_REGIONS)
    assert out.texts == ("CREATE TABLE HR_COPY.REGIONS (region_id NUMBER PRIMARY KEY, "
                         "region_name VARCHAR2(25)) TABLESPACE hr_data_big",)


def test_a_bad_substitution_fails_the_reparse_and_goes_to_ddlerror():
    params = HR_MAP + "DDLSUBST 'VARCHAR2(25)' WITH 'VARCHAR2(' \nDDLERROR PARSE DISCARD\n"
    out = run(params, CREATE_REGIONS)
    assert out.kind == "DISCARDED"
    assert out.errors[0].code == "PARSE" and out.record.text == CREATE_REGIONS
    assert out.trail[-4:] == ("remove_comments_after", "reparse", "handle_errors", "conclude")
    with pytest.raises(DdlAbend, match="PARSE on HR_COPY.REGIONS"):
        run(params.replace("DDLERROR PARSE DISCARD\n", ""), CREATE_REGIONS)


def test_a_mapped_statement_read_only_as_a_command_cannot_be_mapped():
    text = "CREATE BITMAP INDEX hr.emp_dept_bx ON hr.employees (department_id)"
    out = run(HR_MAP + "DDLERROR PARSE IGNORE\n", text, owner="HR", name="EMPLOYEES")
    assert (out.scope, out.kind) == ("MAPPED", "IGNORED_ERROR")
    assert "the MAP cannot replace its names" in out.errors[0].message
    # the filters come first: an excluded statement never needs its names mapped
    out = run(HR_MAP + "DDL INCLUDE OBJTYPE 'TABLE'\n", text, owner="HR", name="EMPLOYEES")
    assert out.kind == "EXCLUDED"


def test_a_statement_that_does_not_tokenize_goes_to_ddlerror():
    out = run("DDLERROR PARSE DISCARD\n", "CREATE TABLE hr.t (c VARCHAR2(10) DEFAULT 'x)")
    assert out.kind == "DISCARDED" and "does not tokenize" in out.errors[0].message
    assert out.trail == ("separate_comments", "ignore_replicates", "identify", "handle_errors",
                         "conclude")


# -- 13, 14: execute and DDLERROR -------------------------------------------------------
def test_execute_runs_each_target_statement():
    seen = []
    out = run(HR_MAP + "MAP hr.*, TARGET hr_hist.*;\n", ADD_NOTES, execute=seen.append)
    assert out.kind == "APPLIED"
    assert [(t.name.owner, t.statement.kind) for t in seen] == [
        ("HR_COPY", "ALTER TABLE"), ("HR_HIST", "ALTER TABLE")]


@pytest.mark.parametrize("code, kind", [("ORA-00942", "DISCARDED"), ("1430", "IGNORED_ERROR")])
def test_a_rule_for_the_code_wins_over_default_wherever_it_stands(code, kind):
    params = HR_MAP + "DDLERROR DEFAULT IGNORE\nDDLERROR 942 DISCARD\n"
    out = run(params, ADD_NOTES, execute=failing(code))
    assert out.kind == kind and out.errors[0].code == code


def test_rules_for_one_code_apply_in_file_order_with_their_clauses():
    params = HR_MAP + "DDLERROR 942 IGNORE INCLUDE OBJNAME hr_copy.job*\nDDLERROR 942 DISCARD\n"
    assert run(params, "DROP TABLE hr.job_history", execute=failing("942")).kind == "IGNORED_ERROR"
    assert run(params, "DROP TABLE hr.employees", execute=failing("942")).kind == "DISCARDED"


@pytest.mark.parametrize("rules, kind", [
    ("DDLERROR 955 IGNORE\n", "IGNORED_ERROR"),
    ("DDLERROR 955 DISCARD\n", "DISCARDED"),
    ("DDLERROR 955 ABEND\n", None),
    ("", None),  # no rule at all: GoldenGate abends
])
def test_ddlerror_actions(rules, kind):
    text = "CREATE TABLE hr.countries (country_id CHAR(2) PRIMARY KEY)"
    if kind is None:
        with pytest.raises(DdlAbend, match="955 on HR_COPY.COUNTRIES") as e:
            run(HR_MAP + rules, text, execute=failing("955"))
        assert e.value.failure.code == "955" and e.value.record.text == text
        return
    out = run(HR_MAP + rules, text, execute=failing("955"))
    assert out.kind == kind and out.texts == ()
    assert out.targets[0].kind == kind and "955" in out.reason


def test_retryop_runs_the_statement_again():
    execute = failing("54", "54")
    out = run(HR_MAP + "DDLERROR 54 DISCARD RETRYOP MAXRETRIES 2\n", ADD_NOTES, execute=execute)
    assert out.kind == "APPLIED" and len(execute.calls) == 3
    params = HR_MAP + "DDLERROR 54 DISCARD RETRYOP MAXRETRIES 1\n"
    out = run(params, ADD_NOTES, execute=failing("54", "54"))
    assert out.kind == "DISCARDED"


def test_a_ddl_error_from_the_executor_has_code_ddl():
    def execute(target):
        from lakestreams.errors import DdlError
        raise DdlError("HR_COPY.EMPLOYEES already has a column NOTES")
    out = run(HR_MAP + "DDLERROR DDL IGNORE\n", ADD_NOTES, execute=execute)
    assert out.kind == "IGNORED_ERROR" and out.errors[0].code == "DDL"


def test_docstring_examples():
    result = doctest.testmod(goldengate)
    assert result.attempted > 0 and result.failed == 0


# -- the procedure --------------------------------------------------------------------------------
def test_steps_follow_the_reference_order():
    assert [s.__name__ for s in STEPS] == [
        "separate_comments", "ignore_replicates", "identify", "rename_to_alter",
        "remove_comments_before", "determine_scope", "map_base", "map_derived", "filter_ddl",
        "substitute", "remove_comments_after", "reparse", "execute", "handle_errors", "conclude"]


def test_a_settled_record_passes_through_every_later_step():
    state = DdlState(DdlRecord(ADD_NOTES), ADD_NOTES, outcome="EXCLUDED", reason="r",
                     trail=("filter_ddl",))
    config = parse_params(HR_MAP)
    for step in STEPS:
        assert step(state, config) is state


# -- configuration: parameter text and YAML ---------------------------------------------
PARAMS = """\
-- Replicat rhr: HR to its copy and its history
DDL INCLUDE MAPPED OBJNAME hr_copy.* &
    EXCLUDE OPTYPE TRUNCATE &  -- truncates are run by hand
    EXCLUDE OBJTYPE 'INDEX' INSTR 'BITMAP'
MAP hr.*, TARGET hr_copy.*;
MAP hr.employees,
    TARGET hr_hist.employees;
DDLSUBST 'TABLESPACE users' WITH 'TABLESPACE hr_data' INCLUDE OBJTYPE 'TABLE'
DDLSUBST 'it''s' WITH 'it is'
DDLERROR 942 IGNORE INCLUDE OPTYPE DROP
DDLERROR PARSE DISCARD
DDLERROR DEFAULT ABEND RETRYOP MAXRETRIES 3
DDLOPTIONS REMOVECOMMENTS AFTER, NOMAPDERIVED, GETREPLICATES
"""
YAML = {
    "ddl": [
        {"include": {"scope": "MAPPED", "objname": "hr_copy.*"}},
        {"exclude": {"optype": "TRUNCATE"}},
        {"exclude": {"objtype": "INDEX", "instr": "BITMAP"}},
    ],
    "maps": [{"source": "hr.*", "target": "hr_copy.*"},
             {"source": "HR.EMPLOYEES", "target": "hr_hist.employees"}],
    "ddlsubst": [
        {"search": "TABLESPACE users", "replace": "TABLESPACE hr_data",
         "filters": [{"include": {"objtype": "table"}}]},
        {"search": "it's", "replace": "it is"},
    ],
    "ddlerror": [
        {"error": 942, "action": "IGNORE", "filters": [{"include": {"optype": "drop"}}]},
        {"error": "PARSE", "action": "DISCARD"},
        {"error": "DEFAULT", "action": "ABEND", "retries": 3},
    ],
    "ddloptions": {"remove_comments": "AFTER", "mapderived": False, "ignore_replicates": False},
}


def test_parameter_text_and_yaml_give_the_same_configuration():
    expected = GgDdlConfig(
        filters=(DdlFilter("INCLUDE", scope="MAPPED", objname="HR_COPY.*"),
                 DdlFilter("EXCLUDE", optype="TRUNCATE"),
                 DdlFilter("EXCLUDE", objtype="INDEX", instr="BITMAP")),
        maps=(MapRule("hr.*", "hr_copy.*"), MapRule("hr.employees", "hr_hist.employees")),
        mapderived=False,
        substs=(DdlSubst("TABLESPACE users", "TABLESPACE hr_data",
                         (DdlFilter("INCLUDE", objtype="TABLE"),)),
                DdlSubst("it's", "it is")),
        error_rules=(DdlErrorRule("942", "IGNORE", (DdlFilter("INCLUDE", optype="DROP"),)),
                     DdlErrorRule("PARSE", "DISCARD"), DdlErrorRule("DEFAULT", "ABEND", retries=3)),
        remove_comments="AFTER", ignore_replicates=False)
    assert parse_params(PARAMS) == config_from_yaml(YAML) == expected


def test_error_codes_are_compared_as_oracle_numbers():
    assert DdlErrorRule("ORA-00942", "IGNORE") == DdlErrorRule(942, "ignore")
    assert DdlErrorRule("942", "IGNORE").error == "942"


def test_quoted_names_in_patterns_are_case_sensitive():
    rule = MapRule('"hr"."Emp*"', 'hr_copy.*')
    assert rule.matches(ObjectName("hr", "Employees"))
    assert not rule.matches(ObjectName("HR", "EMPLOYEES"))
    record = DdlRecord('ALTER TABLE "hr"."Employees" ADD (notes VARCHAR2(10))')
    out = process(record, GgDdlConfig(maps=(rule,)))
    assert out.texts == ('ALTER TABLE HR_COPY."Employees" ADD (notes VARCHAR2(10))',)


@pytest.mark.parametrize("params, message", [
    ("DDL INCLUDE MAPPED\nREPLICAT rhr\n", "line 2: unknown keyword 'REPLICAT'"),
    ("DDL INCLUDE MAPPED OBJECTNAME hr.*\n", "line 1: unknown keyword 'OBJECTNAME' in DDL"),
    ("DDL INCLUDE OPTYPE CRATE\n", "line 1: INCLUDE OPTYPE: 'CRATE' is not one of CREATE"),
    ("DDL EXCLUDE OPTYPE TRUNCATE\n", "EXCLUDE without any INCLUDE"),
    ("DDL INCLUDE\n", "INCLUDE needs a criterion"),
    ("DDL INCLUDE MAPPED UNMAPPED\n", "SCOPE is given twice"),
    ("DDL INCLUDE MAPPED\nDDL INCLUDE OTHER\n", "line 2: a second DDL parameter"),
    ("DDL INCLUDE MAPPED OBJNAME\n", "line 1: DDL: expected OBJNAME's value, found the end"),
    ("DDL MAPPED\n", "unknown keyword 'MAPPED' in DDL (expected INCLUDE or EXCLUDE"),
    ("DDL INCLUDE MAPPED & EXCLUDE OTHER\n", "line 1: & continues a parameter"),
    ("MAP hr.*, TARGET hr_copy.*\n", "line 1: MAP must end with ;"),
    ("MAP hr.*, TARGET hr_copy.*, COLMAP (USEDEFAULTS);\n", "unknown keyword 'COLMAP'"),
    ("MAP hr, TARGET hr_copy.*;\n", "line 1: MAP source: 'hr' is not an owner.name pattern"),
    ("MAP hr.*, TARGET hr_copy.emp?;\n", "a target takes *"),
    ("DDLSUBST 'users WITH 'hr_data'\n", "line 1: a quoted string is not closed"),
    ("DDLSUBST users WITH 'hr_data'\n", "expected 'search string'"),
    ("DDLERROR 942 RETRY\n", "DDLERROR 942: 'RETRY' is not one of ABEND, IGNORE, DISCARD"),
    ("DDLERROR DEFAULT IGNORE RETRYOP MAXRETRIES 3 RETRYDELAY 10\n",
     "unknown keyword 'RETRYDELAY'"),
    ("DDLERROR DEFAULT IGNORE EXCLUDE OPTYPE DROP\n", "EXCLUDE without any INCLUDE"),
    ("DDLOPTIONS REMOVECOMMENTS DURING\n", "REMOVECOMMENTS: 'DURING' is not one of BEFORE, AFTER"),
    ("DDLOPTIONS ADDTRANDATA\n", "unknown keyword 'ADDTRANDATA' in DDLOPTIONS"),
])
def test_refused_parameter_text(params, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_params(params)


@pytest.mark.parametrize("yaml, message", [
    ({"ddl": [{"include": {"scope": "MAPPED"}}], "map": []}, "unknown key 'map'"),
    ({"ddl": [{"include": {"objname": "hr.*", "owner": "HR"}}]},
     r"ddl\[0\].include: unknown key 'owner'"),
    ({"ddl": [{"include": {"scope": "MAPPED"}, "exclude": {"optype": "DROP"}}]},
     "exactly one of include, exclude"),
    ({"ddlsubst": [{"search": "a", "replace": "b", "filters": [{"exclude": {"optype": "DROP"}}]}]},
     r"ddlsubst\[0\].filters: EXCLUDE without any INCLUDE"),
    ({"maps": [{"source": "hr.*"}]}, r"maps\[0\]: 'target' is required"),
    ({"ddlerror": [{"error": "942", "action": "SKIP"}]}, "'SKIP' is not one of ABEND"),
    ({"ddlerror": [{"error": "942", "action": "IGNORE", "retries": -1}]}, "is not a count"),
    ({"ddloptions": {"mapderived": "yes"}}, "mapderived: 'yes' is not true or false"),
    ({"ddlsubst": [{"search": "", "replace": "x"}]}, "DDLSUBST search string"),
])
def test_refused_yaml(yaml, message):
    with pytest.raises(ConfigError, match=message):
        config_from_yaml(yaml)
