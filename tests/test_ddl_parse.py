"""DDL records parse (sqlglot, Oracle dialect extended) into structured statements, and
each ALTER TABLE makes the next dictionary revision. Pure Python: no Spark here."""

from __future__ import annotations

import pytest

from lakestreams.errors import DdlError
from silver.adaptddl import AdaptDdl
from silver.ddl import (
    AddColumn,
    AddConstraint,
    ColumnSpec,
    DropColumn,
    DropConstraint,
    ModifyColumn,
    Physical,
    Redefinition,
    RenameColumn,
    RenameConstraint,
    RenameTable,
    evolve,
    parse_ddl,
)
from silver.dictionary import parse_create_table, table_def_from_row, table_def_to_row
from silver.evolution import Revision, read_ddl
from silver.types import ColumnType

PLAIN = """CREATE TABLE hr.employees (
  employee_id NUMBER(6), first_name VARCHAR2(20), last_name VARCHAR2(25) NOT NULL,
  email VARCHAR2(25) NOT NULL, hire_date DATE NOT NULL, salary NUMBER(8,2) DEFAULT 0, resume CLOB,
  CONSTRAINT emp_salary_min CHECK (salary > 0), CONSTRAINT emp_email_uk UNIQUE (email),
  CONSTRAINT emp_emp_id_pk PRIMARY KEY (employee_id),
  CONSTRAINT emp_dept_fk FOREIGN KEY (email) REFERENCES hr.departments (department_id))"""

#: The same table as DBMS_METADATA.GET_DDL prints it.
METADATA = """CREATE TABLE "HR"."EMPLOYEES"
   (    "EMPLOYEE_ID" NUMBER(6,0),
    "FIRST_NAME" VARCHAR2(20 BYTE),
    "LAST_NAME" VARCHAR2(25) CONSTRAINT "EMP_LAST_NAME_NN" NOT NULL ENABLE,
    "EMAIL" VARCHAR2(25) CONSTRAINT "EMP_EMAIL_NN" NOT NULL ENABLE,
    "HIRE_DATE" DATE CONSTRAINT "EMP_HIRE_DATE_NN" NOT NULL ENABLE,
    "SALARY" NUMBER(8,2) DEFAULT 0,
    "RESUME" CLOB,
     CONSTRAINT "EMP_SALARY_MIN" CHECK (salary > 0) ENABLE,
     CONSTRAINT "EMP_EMAIL_UK" UNIQUE ("EMAIL")
  USING INDEX PCTFREE 10 INITRANS 2 MAXTRANS 255 COMPUTE STATISTICS
  STORAGE(INITIAL 65536 NEXT 1048576 MINEXTENTS 1 MAXEXTENTS 2147483645
  PCTINCREASE 0 FREELISTS 1 FREELIST GROUPS 1 BUFFER_POOL DEFAULT FLASH_CACHE DEFAULT CELL_FLASH_CACHE DEFAULT)
  TABLESPACE "EXAMPLE"  ENABLE,
     CONSTRAINT "EMP_EMP_ID_PK" PRIMARY KEY ("EMPLOYEE_ID")
  USING INDEX PCTFREE 10 INITRANS 2 MAXTRANS 255 COMPUTE STATISTICS TABLESPACE "EXAMPLE"  ENABLE,
     CONSTRAINT "EMP_DEPT_FK" FOREIGN KEY ("EMAIL")
      REFERENCES "HR"."DEPARTMENTS" ("DEPARTMENT_ID") ENABLE,
     SUPPLEMENTAL LOG DATA (ALL) COLUMNS,
     SUPPLEMENTAL LOG GROUP "GGS_1" ("EMPLOYEE_ID") ALWAYS
   ) SEGMENT CREATION IMMEDIATE
  PCTFREE 10 PCTUSED 40 INITRANS 1 MAXTRANS 255
 NOCOMPRESS LOGGING
  STORAGE(INITIAL 65536 NEXT 1048576 MINEXTENTS 1 MAXEXTENTS 2147483645
  PCTINCREASE 0 FREELISTS 1 FREELIST GROUPS 1 BUFFER_POOL DEFAULT FLASH_CACHE DEFAULT CELL_FLASH_CACHE DEFAULT)
  TABLESPACE "EXAMPLE"
 LOB ("RESUME") STORE AS SECUREFILE (
  TABLESPACE "EXAMPLE" ENABLE STORAGE IN ROW CHUNK 8192
  NOCACHE LOGGING  NOCOMPRESS  KEEP_DUPLICATES
  STORAGE(INITIAL 106496 NEXT 1048576 MINEXTENTS 1 MAXEXTENTS 2147483645))
  PARTITION BY RANGE ("HIRE_DATE")
 (PARTITION "P1" VALUES LESS THAN (TO_DATE(' 2000-01-01 00:00:00', 'SYYYY-MM-DD HH24:MI:SS', 'NLS_CALENDAR=GREGORIAN'))
  SEGMENT CREATION IMMEDIATE TABLESPACE "USERS",
  PARTITION "P2" VALUES LESS THAN (MAXVALUE))""".replace("\n    ", "\n\t")  # GET_DDL indents with tabs

EMP = parse_create_table(PLAIN)


def vc(n: int) -> ColumnType:
    return ColumnType(f"VARCHAR2({n})", "STRING", n, True, False)


def test_metadata_form_gives_the_same_table_as_the_plain_form():
    stmt = parse_ddl(METADATA)
    assert (stmt.kind, stmt.object_type, stmt.owner, stmt.name) == ("CREATE TABLE", "TABLE", "HR", "EMPLOYEES")
    assert stmt.table == EMP
    assert EMP.key_columns == ("EMPLOYEE_ID",) and EMP.key_kind == "PRIMARY KEY"
    assert EMP.column("SALARY").default == "0"
    assert [c.name for c in EMP.columns if not c.nullable] == ["EMPLOYEE_ID", "LAST_NAME", "EMAIL", "HIRE_DATE"]
    assert EMP.constraints == (("EMP_EMAIL_UK", "UNIQUE", ("EMAIL",)), ("EMP_EMP_ID_PK", "PRIMARY KEY", ("EMPLOYEE_ID",)))


@pytest.mark.parametrize("text, kind, actions", [
    ("ALTER TABLE hr.employees ADD (bonus NUMBER(4) DEFAULT 5 NOT NULL, note VARCHAR2(9))", "ALTER TABLE", (
        AddColumn(ColumnSpec("BONUS", ColumnType("NUMBER(4)", "INT", None, False, False), False, "5")),
        AddColumn(ColumnSpec("NOTE", vc(9))))),
    ("ALTER TABLE hr.employees ADD note VARCHAR2(9)", "ALTER TABLE", (AddColumn(ColumnSpec("NOTE", vc(9))),)),
    # Keys declared with the column they are on: as ADD CONSTRAINT after the column.
    ("ALTER TABLE hr.employees ADD (note VARCHAR2(9) CONSTRAINT emp_note_uk UNIQUE, code VARCHAR2(9) PRIMARY KEY)",
     "ALTER TABLE", (AddColumn(ColumnSpec("NOTE", vc(9))), AddConstraint("UNIQUE", ("NOTE",), "EMP_NOTE_UK"),
                     AddColumn(ColumnSpec("CODE", vc(9), False)), AddConstraint("PRIMARY KEY", ("CODE",)))),
    ("ALTER TABLE hr.employees DROP COLUMN resume", "ALTER TABLE", (DropColumn("RESUME"),)),
    ("ALTER TABLE hr.employees DROP (resume, first_name) CASCADE CONSTRAINTS", "ALTER TABLE",
     (DropColumn("RESUME"), DropColumn("FIRST_NAME"))),
    ('ALTER TABLE "HR"."EMPLOYEES" RENAME COLUMN "EMAIL" TO "MAIL"', "ALTER TABLE", (RenameColumn("EMAIL", "MAIL"),)),
    ("ALTER TABLE hr.employees MODIFY (first_name VARCHAR2(50) NOT NULL, last_name NULL)", "ALTER TABLE", (
        ModifyColumn(ColumnSpec("FIRST_NAME", vc(50), False)), ModifyColumn(ColumnSpec("LAST_NAME", None, True)))),
    ("ALTER TABLE hr.employees MODIFY first_name VARCHAR2(50)", "ALTER TABLE",
     (ModifyColumn(ColumnSpec("FIRST_NAME", vc(50))),)),
    ("ALTER TABLE hr.employees MODIFY salary DEFAULT 1", "ALTER TABLE", (ModifyColumn(ColumnSpec("SALARY", default="1")),)),
    ("ALTER TABLE hr.employees ADD CONSTRAINT emp_uk2 UNIQUE (first_name, last_name) ENABLE NOVALIDATE", "ALTER TABLE",
     (AddConstraint("UNIQUE", ("FIRST_NAME", "LAST_NAME"), "EMP_UK2"),)),
    ("ALTER TABLE hr.employees ADD PRIMARY KEY (email) USING INDEX TABLESPACE users ENABLE", "ALTER TABLE",
     (AddConstraint("PRIMARY KEY", ("EMAIL",)),)),
    ("ALTER TABLE hr.employees ADD CONSTRAINT fk FOREIGN KEY (email) REFERENCES hr.d (x)", "ALTER TABLE",
     (AddConstraint("FOREIGN KEY", ("EMAIL",), "FK"),)),
    ("ALTER TABLE hr.employees DROP CONSTRAINT emp_email_uk", "ALTER TABLE", (DropConstraint("EMP_EMAIL_UK"),)),
    ("ALTER TABLE hr.employees DROP PRIMARY KEY KEEP INDEX", "ALTER TABLE", (DropConstraint(kind="PRIMARY KEY"),)),
    ("ALTER TABLE hr.employees DROP UNIQUE (email)", "ALTER TABLE", (DropConstraint(kind="UNIQUE", columns=("EMAIL",)),)),
    ("ALTER TABLE hr.employees RENAME TO staff", "ALTER TABLE", (RenameTable(None, "STAFF"),)),
    ('ALTER TABLE hr.employees RENAME CONSTRAINT "EMP_EMAIL_UK" TO emp_mail_uk', "ALTER TABLE",
     (RenameConstraint("EMP_EMAIL_UK", "EMP_MAIL_UK"),)),
    ("ALTER TABLE hr.employees MOVE TABLESPACE users", "ALTER TABLE", (Physical("MOVE TABLESPACE USERS"),)),
    ("ALTER TABLE hr.employees ADD PARTITION p3 VALUES LESS THAN (10)", "ALTER TABLE",
     (Physical("ADD PARTITION P3 VALUES LESS THAN"),)),
    ("ALTER TABLE hr.employees TRUNCATE PARTITION p1", "ALTER TABLE", (Physical("TRUNCATE PARTITION P1"),)),
    ("ALTER TABLE hr.employees ADD SUPPLEMENTAL LOG DATA (PRIMARY KEY) COLUMNS", "ALTER TABLE",
     (Physical("ADD SUPPLEMENTAL LOG DATA COLUMNS"),)),
    ("ALTER TABLE hr.employees ENABLE ROW MOVEMENT", "ALTER TABLE", (Physical("ENABLE ROW MOVEMENT"),)),
    ("DROP TABLE hr.employees CASCADE CONSTRAINTS PURGE", "DROP TABLE", ()),
    ("TRUNCATE TABLE hr.employees", "TRUNCATE TABLE", ()),
    ("TRUNCATE TABLE hr.employees REUSE STORAGE", "TRUNCATE TABLE", ()),
    ('TRUNCATE TABLE "HR"."EMPLOYEES" PURGE MATERIALIZED VIEW LOG DROP ALL STORAGE', "TRUNCATE TABLE", ()),
    ("ALTER TABLE hr.employees SET UNUSED (resume, first_name) CASCADE CONSTRAINTS", "ALTER TABLE",
     (DropColumn("RESUME"), DropColumn("FIRST_NAME"))),
    ("ALTER TABLE hr.employees SET UNUSED COLUMN resume ONLINE", "ALTER TABLE", (DropColumn("RESUME"),)),
    ("ALTER TABLE hr.employees DROP UNUSED COLUMNS", "ALTER TABLE", (Physical("DROP UNUSED COLUMNS"),)),
    ("ALTER TABLE hr.employees DROP (resume) CASCADE CONSTRAINTS CHECKPOINT 250", "ALTER TABLE", (DropColumn("RESUME"),)),
    ("ALTER TABLE hr.employees DROP COLUMNS CONTINUE", "ALTER TABLE", (Physical("DROP COLUMNS CONTINUE"),)),
    ("ALTER TABLE hr.employees MODIFY PARTITION BY RANGE (hire_date) (PARTITION p1 VALUES LESS THAN (MAXVALUE)) ONLINE",
     "ALTER TABLE", (Physical("MODIFY PARTITION BY RANGE ONLINE"),)),
    ("CREATE TABLE hr.employees AS SELECT * FROM hr.staff", "CREATE TABLE AS SELECT", ()),
])
def test_statements_parse_to_their_structure(text, kind, actions):
    stmt = parse_ddl(text)
    assert (stmt.kind, stmt.object_type, stmt.owner, stmt.name, stmt.actions) == (kind, "TABLE", "HR", "EMPLOYEES", actions)


def test_rename_statement_is_alter_table_rename():
    """RENAME a TO b (Oracle's own statement) reads as ALTER TABLE a RENAME TO b; it
    names no owner (the caller takes the record's)."""
    stmt = parse_ddl("RENAME employees TO staff")
    assert (stmt.kind, stmt.owner, stmt.name, stmt.actions, stmt.operation) == (
        "ALTER TABLE", None, "EMPLOYEES", (RenameTable(None, "STAFF"),), "RENAME")
    assert parse_ddl("ALTER TABLE employees RENAME TO staff").actions == stmt.actions


def test_a_key_added_with_its_column_becomes_the_replication_key():
    created = read_ddl({}, "CREATE TABLE hr.e (name VARCHAR2(9), note CLOB)", 100, "HR", (AdaptDdl(),))
    history = {("HR", "E"): [rev for _, rev in created.revisions]}
    assert history[("HR", "E")][-1].table.key_kind == "ALL COLUMNS"
    added = read_ddl(history, "ALTER TABLE hr.e ADD (id NUMBER(4) CONSTRAINT e_pk PRIMARY KEY)", 110, "HR", (AdaptDdl(),))
    table = added.revisions[-1][1].table
    assert (table.key_columns, table.key_kind) == (("ID",), "PRIMARY KEY")


def test_a_renamed_key_constraint_is_dropped_by_its_new_name():
    created = read_ddl({}, "CREATE TABLE hr.e (id NUMBER NOT NULL, v NUMBER, CONSTRAINT e_pk PRIMARY KEY (id))",
                       100, "HR", (AdaptDdl(),))
    history = {("HR", "E"): [rev for _, rev in created.revisions]}
    renamed = read_ddl(history, "ALTER TABLE hr.e RENAME CONSTRAINT e_pk TO e_id_pk", 110, "HR", (AdaptDdl(),))
    history[("HR", "E")] += [rev for _, rev in renamed.revisions]
    assert history[("HR", "E")][-1].table.constraints == (("E_ID_PK", "PRIMARY KEY", ("ID",)),)
    dropped = read_ddl(history, "ALTER TABLE hr.e DROP CONSTRAINT e_id_pk", 120, "HR", (AdaptDdl(),))
    assert [(r.table.key_kind, r.table.constraints) for _, r in dropped.revisions] == [("ALL COLUMNS", ())]


def test_an_unqualified_create_table_is_the_record_s_schema_s():
    """As an unqualified ALTER: the table is created in the record's schema (the session's
    current schema on the source)."""
    assert parse_ddl("CREATE TABLE emp2 (id NUMBER(4) PRIMARY KEY, name VARCHAR2(9))").owner is None
    reading = read_ddl({}, "CREATE TABLE emp2 (id NUMBER(4) PRIMARY KEY, name VARCHAR2(9))", 100, "HR", (AdaptDdl(),))
    ((key, rev),) = reading.revisions
    assert (reading.decision, key, rev.table.owner, rev.table.name, rev.table.key_columns) == (
        "ADD", ("HR", "EMP2"), "HR", "EMP2", ("ID",))
    with pytest.raises(DdlError, match="CREATE TABLE without an owner"):
        parse_create_table("CREATE TABLE emp2 (id NUMBER(4))")  # a channel file's declaration names it


@pytest.mark.parametrize("text, object_type", [
    ("CREATE OR REPLACE VIEW hr.v AS SELECT 1 FROM dual", "VIEW"),
    ("CREATE OR REPLACE FORCE EDITIONABLE VIEW hr.v AS SELECT 1 FROM dual", "VIEW"),
    ("CREATE MATERIALIZED VIEW hr.mv AS SELECT 1 FROM dual", "MATERIALIZED VIEW"),
    ("CREATE PUBLIC SYNONYM emp FOR hr.employees", "PUBLIC SYNONYM"),
    ("CREATE SYNONYM hr.emp FOR hr.employees", "SYNONYM"),
    ("CREATE OR REPLACE TRIGGER hr.t BEFORE INSERT ON hr.employees BEGIN NULL; END;", "TRIGGER"),
    ("CREATE OR REPLACE PROCEDURE hr.p AS BEGIN NULL; END;", "PROCEDURE"),
    ("CREATE FUNCTION hr.f RETURN NUMBER AS BEGIN RETURN 1; END;", "FUNCTION"),
    ("CREATE OR REPLACE PACKAGE BODY hr.pk AS END;", "PACKAGE BODY"),
    ("CREATE USER bob IDENTIFIED BY secret", "USER"),
    ("DROP USER bob CASCADE", "USER"),
    ("CREATE ROLE auditor", "ROLE"),
    ("CREATE OR REPLACE DIRECTORY d AS '/tmp'", "DIRECTORY"),
    ("CREATE SEQUENCE hr.s START WITH 1", "SEQUENCE"),
    ("CREATE INDEX hr.i ON hr.employees (email) TABLESPACE users", "INDEX"),
    ("CREATE BITMAP INDEX hr.i ON hr.employees (email)", "BITMAP INDEX"),
    ("CREATE UNIQUE INDEX hr.i ON hr.employees (UPPER(email))", "UNIQUE INDEX"),  # no key rows are found by
    ("ALTER INDEX hr.i REBUILD ONLINE", "INDEX"),
    ("GRANT SELECT ON hr.employees TO bob", "GRANT"),
    ("COMMENT ON TABLE hr.employees IS 'people'", "COMMENT"),
])
def test_objects_without_rows_are_recognised_and_ignored(text, object_type):
    stmt = parse_ddl(text)
    assert (stmt.kind, stmt.object_type) == ("IGNORED", object_type)


def test_a_unique_index_is_a_key_the_replication_key_may_be_chosen_from():
    """HVR's hierarchy: a primary key, else a unique key (a constraint or a unique index)
    with a NOT NULL column. CREATE UNIQUE INDEX adds one; DROP INDEX removes the one of its
    name from whichever table holds it; ALTER INDEX … RENAME TO keeps it under its new name;
    other indexes change nothing."""
    plain = parse_ddl('CREATE UNIQUE INDEX "HR"."EMP_UK" ON "HR"."EMPLOYEES" ("EMAIL", "CODE") '
                      'PCTFREE 10 INITRANS 2 TABLESPACE "USERS" LOCAL ONLINE')
    assert (plain.kind, plain.owner, plain.name, plain.actions) == (
        "CREATE UNIQUE INDEX", "HR", "EMPLOYEES", (AddConstraint("UNIQUE INDEX", ("EMAIL", "CODE"), "EMP_UK"),))
    assert plain.operation == "CREATE"
    history: dict = {}
    for text in ("CREATE TABLE hr.k (a NUMBER, email VARCHAR2(30) NOT NULL, code NUMBER)",
                 "CREATE TABLE hr.other (id NUMBER PRIMARY KEY)"):
        r = read_ddl(history, text, 100, "HR", (AdaptDdl(),))
        history.update({k: [rev] for k, rev in r.revisions})
    assert history[("HR", "K")][-1].table.key_kind == "ALL COLUMNS"
    steps = []
    for scn, text in ((110, "CREATE UNIQUE INDEX hr.k_email_uk ON k (email)"),
                      (120, "CREATE UNIQUE INDEX hr.k_a_uk ON hr.k (a)"),  # nullable: no replication key
                      (125, "ALTER INDEX hr.k_email_uk RENAME TO k_mail_uk"),  # the same key, its new name
                      (126, 'ALTER INDEX "HR"."K_MAIL_UK" REBUILD ONLINE'),  # physical
                      (130, "DROP INDEX k_mail_uk ONLINE"),
                      (140, "DROP INDEX hr.no_such_index"),
                      (150, "CREATE UNIQUE INDEX hr.x_uk ON hr.not_known (a)")):
        r = read_ddl(history, text, scn, "HR", (AdaptDdl(),))
        for k, rev in r.revisions:
            history[k] = [*history[k], rev]
        t = history[("HR", "K")][-1].table
        steps.append((r.statement, r.decision, t.key_kind, t.key_columns))
    assert steps == [
        ("CREATE UNIQUE INDEX", "ALTER", "UNIQUE", ("EMAIL",)),
        ("CREATE UNIQUE INDEX", "ALTER", "UNIQUE", ("EMAIL",)),
        ("ALTER INDEX", "ALTER", "UNIQUE", ("EMAIL",)),
        ("IGNORED INDEX", "IGNORE", "UNIQUE", ("EMAIL",)),
        ("DROP INDEX", "ALTER", "ALL COLUMNS", ("A", "EMAIL", "CODE")),
        ("IGNORED INDEX", "IGNORE", "ALL COLUMNS", ("A", "EMAIL", "CODE")),
        ("IGNORED UNIQUE INDEX", "IGNORE", "ALL COLUMNS", ("A", "EMAIL", "CODE")),
    ]
    # An unqualified table is the current schema's (the record's owner is the index's).
    r = read_ddl(history, "CREATE UNIQUE INDEX ops.k_uk ON k (email)", 160, "OPS", (AdaptDdl(),), current_schema="hr")
    assert (r.decision, [k for k, _ in r.revisions]) == ("ALTER", [("HR", "K")])
    # An index in another schema than its table's is known by its schema and name: HR's
    # index of that name is not it, OPS's rename keeps it in OPS, and OPS's DROP removes it.
    cross = {("HR", "K"): [*history[("HR", "K")], r.revisions[0][1]]}
    assert cross[("HR", "K")][-1].table.constraints[-1] == ("OPS.K_UK", "UNIQUE INDEX", ("EMAIL",))
    assert read_ddl(cross, "DROP INDEX hr.k_uk", 165, "HR", (AdaptDdl(),)).decision == "IGNORE"
    for scn, text, owner, after in ((170, "ALTER INDEX k_uk RENAME TO k_mail_uk", "OPS", ("OPS.K_MAIL_UK", ("EMAIL",))),
                                    (180, "DROP INDEX ops.k_mail_uk", "HR", None)):
        step = read_ddl(cross, text, scn, owner, (AdaptDdl(),))
        cross[("HR", "K")].append(step.revisions[0][1])
        t = cross[("HR", "K")][-1].table
        assert [(n, c) for n, _k, c in t.constraints if n != "K_A_UK"] == ([after] if after else []), text
    assert (t.key_kind, t.key_columns) == ("ALL COLUMNS", ("A", "EMAIL", "CODE"))
    # Oracle's idiom: a unique index first, then a primary key constraint of its name over
    # it. Dropping the constraint keeps the index (a unique key still), and DROP INDEX then
    # removes the index only.
    t = parse_create_table("CREATE TABLE hr.e (id NUMBER NOT NULL, v NUMBER)")
    for text in ("CREATE UNIQUE INDEX hr.e_pk ON hr.e (id)", "ALTER TABLE hr.e ADD CONSTRAINT e_pk PRIMARY KEY (id)"):
        t = evolve(t, parse_ddl(text))
    assert (t.key_kind, t.key_columns) == ("PRIMARY KEY", ("ID",))
    t = evolve(t, parse_ddl("ALTER TABLE hr.e DROP CONSTRAINT e_pk KEEP INDEX"))
    assert (t.key_kind, t.key_columns, t.constraints) == ("UNIQUE", ("ID",), (("E_PK", "UNIQUE INDEX", ("ID",)),))
    e_history = {("HR", "E"): [Revision(100, t)]}
    dropped = read_ddl(e_history, "DROP INDEX hr.e_pk", 110, "HR", (AdaptDdl(),))
    assert [(r.table.key_kind, r.table.constraints) for _, r in dropped.revisions] == [("ALL COLUMNS", ())]
    assert history[("HR", "OTHER")][-1].scn == 100  # the other table did not change


@pytest.mark.parametrize("text, message", [
    ("", "has no text"),
    ("ALTER TABLE hr.employees FROBNICATE x", "not understood"),
    ("ALTER TABLE hr.employees ADD (x NUMBER); DROP TABLE hr.other", "holds one statement; this one holds 2"),
    ("CREATE TABLE hr.t (a NUMBER", "does not parse"),
    ('ALTER TABLE hr.employees ADD ("A;B" NUMBER)', "is refused"),
    ("SELECT * FROM hr.employees", "not a DDL statement"),
    ("ALTER TABLE hr.employees MODIFY (salary)", "changes nothing"),
    # A type is named as a whole word: DECRYPTO is no DECIMAL, INTERNAL no INT.
    ("ALTER TABLE hr.employees ADD (x DECRYPTO)", "Oracle type DECRYPTO has no Spark mapping"),
    ("ALTER TABLE hr.employees ADD (x INTERNAL)", "Oracle type INTERNAL has no Spark mapping"),
    ("ALTER TABLE hr.employees SET UNUSED", "does not parse"),
    # Child tables lose rows no record names: the DDL error handling decides.
    ("TRUNCATE TABLE hr.employees DROP STORAGE CASCADE", "also empties the child tables"),
])
def test_what_cannot_be_understood_is_refused_with_the_reason(text, message):
    with pytest.raises(DdlError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_ddl(text)


def test_column_properties_and_long_are_read_for_what_they_are():
    # A property after the NOT NULL, too; LONG is character data (sqlglot reads it as BIGINT).
    assert parse_ddl("ALTER TABLE hr.employees MODIFY (email NOT NULL ENCRYPT)").actions == (
        ModifyColumn(ColumnSpec("EMAIL", None, False, None)), Physical("ENCRYPT OF email"))
    assert parse_ddl("ALTER TABLE hr.e MODIFY (b VARCHAR2(20) ENCRYPT USING 'AES256' NOT NULL, c INVISIBLE)").actions[1:] == (
        Physical("ENCRYPT USING AES256 OF b"), Physical("INVISIBLE OF c"))
    t = parse_create_table("CREATE TABLE hr.t (a LONG, b INTEGER, c NUMBER(19))")
    assert [c.type.spark for c in t.columns] == ["STRING", "DECIMAL(38,0)", "DECIMAL(19,0)"]
    # Types sqlglot does not read, named as Oracle writes them; a column's ENCRYPT and
    # (IN)VISIBLE where it is defined are how it is stored or shown, not its values.
    t = parse_create_table(
        'CREATE TABLE "HR"."T" ("ID" NUMBER(4) NOT NULL ENABLE, "IMG" LONG RAW, "SPAN" INTERVAL DAY (2) TO SECOND (6), '
        '"AGE" INTERVAL YEAR TO MONTH, "SSN" VARCHAR2(11) ENCRYPT USING \'AES256\' NO SALT NOT NULL ENABLE, '
        '"SEEN" DATE DEFAULT SYSDATE INVISIBLE, CONSTRAINT "T_PK" PRIMARY KEY ("ID"))')
    assert [(c.name, c.type.oracle, c.type.spark, c.nullable, c.default) for c in t.columns] == [
        ("ID", "NUMBER(4)", "INT", False, None), ("IMG", "LONG RAW", "BINARY", True, None),
        ("SPAN", "INTERVAL DAY(2) TO SECOND(6)", "STRING", True, None),
        ("AGE", "INTERVAL YEAR TO MONTH", "STRING", True, None), ("SSN", "VARCHAR2(11)", "STRING", False, None),
        ("SEEN", "DATE", "TIMESTAMP_NTZ", True, "SYSDATE")]
    # Exactly their own words: a key or an identity after them is read as usual.
    for text in ("CREATE TABLE hr.t (id NUMBER INVISIBLE PRIMARY KEY, b NUMBER)",
                 "CREATE TABLE hr.t (id VARCHAR2(11) ENCRYPT USING 'AES256' IDENTIFIED BY pw 'SHA-1' NO SALT "
                 "PRIMARY KEY, b NUMBER INVISIBLE GENERATED BY DEFAULT AS IDENTITY)"):
        k = parse_create_table(text)
        assert (k.key_kind, k.key_columns, k.column_names) == ("PRIMARY KEY", ("ID",), ("ID", "B")), text
    assert parse_ddl("ALTER TABLE hr.t ADD (pin VARCHAR2(4) ENCRYPT, img2 LONG RAW)").actions == (
        AddColumn(ColumnSpec("PIN", ColumnType("VARCHAR2(4)", "STRING", 4, True), None, None)),
        AddColumn(ColumnSpec("IMG2", t.columns[1].type, None, None)))


def test_a_negative_scale_is_a_whole_number_of_more_digits():
    # NUMBER(p,-s) keeps p significant digits rounded to 10^s: whole numbers of p+s digits.
    t = parse_create_table("CREATE TABLE hr.t (a NUMBER(5,-2), b NUMBER(12, -4), c NUMBER(20,-3), d NUMBER(*,-2))")
    assert [(c.type.oracle, c.type.spark, c.type.max_digits) for c in t.columns] == [
        ("NUMBER(5, -2)", "INT", 7), ("NUMBER(12, -4)", "BIGINT", 16), ("NUMBER(20, -3)", "DECIMAL(23,0)", None),
        ("NUMBER(*, -2)", "DECIMAL(38,0)", None)]
    assert parse_ddl("ALTER TABLE hr.t MODIFY (a NUMBER(9,-2))").actions == (
        ModifyColumn(ColumnSpec("A", ColumnType("NUMBER(9, -2)", "BIGINT"), None, None)),)
    with pytest.raises(DdlError, match="parse"):
        parse_ddl("ALTER TABLE hr.t ADD (e NUMBER(5,-))")


def test_virtual_columns_are_nullable_columns_that_no_key_is_chosen_from():
    # As DBMS_METADATA prints them, and AS (…) after a property: Oracle stores no value, so
    # no record carries one; the column takes NULL, and a key on it is not the table's key.
    t = parse_create_table(
        'CREATE TABLE "HR"."T" ("ID" NUMBER(9) NOT NULL ENABLE, "PRICE" NUMBER(9,2), '
        '"TAXED" NUMBER GENERATED ALWAYS AS ("PRICE"*1.2) VIRTUAL VISIBLE, '
        '"CODE" VARCHAR2(12) INVISIBLE AS (\'C\'||TO_CHAR("ID")) VIRTUAL NOT NULL ENABLE, '
        'CONSTRAINT "T_CODE_PK" PRIMARY KEY ("CODE") ENABLE, CONSTRAINT "T_UK" UNIQUE ("ID") ENABLE)')
    assert [(c.name, c.type.spark, c.nullable) for c in t.columns] == [
        ("ID", "INT", False), ("PRICE", "DECIMAL(9,2)", True), ("TAXED", "DECIMAL(38,10)", True), ("CODE", "STRING", True)]
    assert (t.key_kind, t.key_columns, t.constraints) == ("UNIQUE", ("ID",), (("T_UK", "UNIQUE", ("ID",)),))
    # An identity is no virtual column: its values are stored and captured.
    ident = parse_create_table("CREATE TABLE hr.i (id NUMBER GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v NUMBER)")
    assert (ident.key_kind, ident.key_columns) == ("PRIMARY KEY", ("ID",))
    add_net = parse_ddl("ALTER TABLE hr.t ADD (net NUMBER(9,2) GENERATED ALWAYS AS (price/1.2) VIRTUAL NOT NULL)")
    assert add_net.actions == (AddColumn(ColumnSpec("NET", t.columns[1].type, True, None, virtual=True)),)
    # The dictionary keeps which columns are virtual, so a key added on one later is not
    # chosen either (by ADD CONSTRAINT or CREATE UNIQUE INDEX), and a keyless table's
    # all-columns key leaves them out, as it leaves out LOBs.
    assert [c.name for c in t.columns if c.virtual] == ["TAXED", "CODE"]
    assert table_def_from_row(table_def_to_row(t)).columns[2].virtual
    u = evolve(t, parse_ddl("ALTER TABLE hr.t DROP CONSTRAINT t_uk"))
    assert (u.key_kind, u.key_columns) == ("ALL COLUMNS", ("ID", "PRICE"))
    assert evolve(u, parse_ddl("ALTER TABLE hr.t ADD CONSTRAINT t_pk PRIMARY KEY (taxed)")).key_columns == ("ID", "PRICE")
    v = evolve(u, parse_ddl("CREATE UNIQUE INDEX hr.t_code_uk ON hr.t (code)"))
    assert (v.key_kind, v.key_columns) == ("ALL COLUMNS", ("ID", "PRICE"))
    w = evolve(evolve(u, add_net), parse_ddl("ALTER TABLE hr.t ADD CONSTRAINT t_net_pk PRIMARY KEY (net)"))
    assert w.column("NET").virtual and w.key_columns == ("ID", "PRICE")
    # A key on stored columns is chosen as before.
    assert evolve(v, parse_ddl("ALTER TABLE hr.t ADD CONSTRAINT t_pk PRIMARY KEY (id)")).key_columns == ("ID",)
    # Oracle derives an undeclared type; this dictionary does not evaluate the expression.
    with pytest.raises(DdlError, match="virtual column E declares no type"):
        parse_ddl("ALTER TABLE hr.t ADD (e AS (price * 3))")


def test_revisions_follow_column_changes():
    t = evolve(EMP, parse_ddl("ALTER TABLE hr.employees ADD (bonus NUMBER(4) DEFAULT 5 NOT NULL)"))
    assert t.column_names[-1] == "BONUS" and not t.column("BONUS").nullable and t.column("BONUS").default == "5"
    t = evolve(t, parse_ddl("ALTER TABLE hr.employees DROP (resume, first_name)"))
    assert t.column_names == ("EMPLOYEE_ID", "LAST_NAME", "EMAIL", "HIRE_DATE", "SALARY", "BONUS")
    t = evolve(t, parse_ddl("ALTER TABLE hr.employees MODIFY (last_name VARCHAR2(60) NULL, salary NUMBER(12,2))"))
    assert (t.column("LAST_NAME").type, t.column("LAST_NAME").nullable) == (vc(60), True)
    assert t.column("SALARY").type.spark == "DECIMAL(12,2)" and t.column("SALARY").default == "0"
    t = evolve(t, parse_ddl("ALTER TABLE hr.employees MODIFY salary VARCHAR2(20)"))  # NUMBER -> VARCHAR2
    assert t.column("SALARY").type == vc(20)
    assert EMP.column_names[0] == "EMPLOYEE_ID" and len(EMP.columns) == 7  # revisions are new values


def test_keys_follow_renames_and_drops():
    t = evolve(EMP, parse_ddl("ALTER TABLE hr.employees RENAME COLUMN employee_id TO id"))
    assert (t.key_columns, t.key_kind) == (("ID",), "PRIMARY KEY")
    # Without the primary key, the smallest unique key with a NOT NULL column replicates.
    t = evolve(t, parse_ddl("ALTER TABLE hr.employees DROP CONSTRAINT emp_emp_id_pk"))
    assert (t.key_columns, t.key_kind) == (("EMAIL",), "UNIQUE")
    # Without it either: all columns but LOBs.
    t = evolve(t, parse_ddl("ALTER TABLE hr.employees DROP UNIQUE (email)"))
    assert t.key_kind == "ALL COLUMNS" and "RESUME" not in t.key_columns and "EMAIL" in t.key_columns
    t = evolve(t, parse_ddl("ALTER TABLE hr.employees ADD CONSTRAINT pk2 PRIMARY KEY (email, hire_date)"))
    assert (t.key_columns, t.key_kind) == (("EMAIL", "HIRE_DATE"), "PRIMARY KEY")
    # Dropping a key column drops its key.
    t = evolve(t, parse_ddl("ALTER TABLE hr.employees DROP COLUMN hire_date"))
    assert t.key_kind == "ALL COLUMNS"
    t = evolve(EMP, parse_ddl("ALTER TABLE hr.employees DROP PRIMARY KEY"))
    assert t.key_columns == ("EMAIL",)
    t = evolve(EMP, parse_ddl("RENAME employees TO staff"))
    assert (t.owner, t.name, t.columns) == ("HR", "STAFF", EMP.columns)
    assert evolve(EMP, parse_ddl("ALTER TABLE hr.employees MOVE TABLESPACE users")) == EMP


@pytest.mark.parametrize("text, message", [
    ("ALTER TABLE hr.employees DROP COLUMN nosuch", "has no column NOSUCH"),
    ("ALTER TABLE hr.employees ADD (email VARCHAR2(5))", "already has a column EMAIL"),
    ("ALTER TABLE hr.employees RENAME COLUMN email TO salary", "already has a column SALARY"),
    ("ALTER TABLE hr.employees ADD PRIMARY KEY (email)", "already has a primary key"),
    ("ALTER TABLE hr.employees ADD CONSTRAINT u UNIQUE (nosuch)", "has no column NOSUCH"),
])
def test_changes_the_table_cannot_take_are_refused(text, message):
    with pytest.raises(DdlError, match=message):
        evolve(EMP, parse_ddl(text))


FINISH = "DBMS_REDEFINITION.FINISH_REDEF_TABLE"


@pytest.mark.parametrize("text", [
    f"BEGIN {FINISH}('HR', 'EMP', 'INT_EMP'); END;",
    f"BEGIN\n  DBMS_REDEFINITION.SYNC_INTERIM_TABLE('HR', 'EMP', 'INT_EMP');\n  {FINISH}('hr', 'emp', 'int_emp');\nEND;",
    f"CALL {FINISH}('HR', 'EMP', 'INT_EMP')",
    f"EXEC {FINISH}(uname => 'HR', int_table => 'INT_EMP', orig_table => 'EMP')",
    f"execute {FINISH}('HR', 'EMP', 'INT_EMP', NULL, dml_lock_timeout => 30)",
    f"{FINISH}('HR', 'EMP', 'INT_EMP')",
    "BEGIN \"DBMS_REDEFINITION\".\"FINISH_REDEF_TABLE\"('HR', 'EMP', 'INT_EMP'); END;",
    f"BEGIN sys.{FINISH.lower()}('HR', 'EMP', 'INT_EMP'); END;",
])
def test_a_finished_redefinition_reads_the_same_in_every_call_form(text):
    """Procedural replication's DBMS_REDEFINITION calls, as a PL/SQL block, CALL, EXEC or a
    bare call, positional or named arguments: the table and its interim table."""
    s = parse_ddl(text)
    assert (s.kind, s.owner, s.name, s.actions) == ("DBMS_REDEFINITION", "HR", "EMP", (Redefinition("HR", "INT_EMP"),))


def test_other_redefinition_calls_change_nothing_and_other_calls_are_refused():
    assert parse_ddl("BEGIN DBMS_REDEFINITION.START_REDEF_TABLE('HR', 'EMP', 'INT_EMP'); END;").kind == "IGNORED"
    assert parse_ddl(f"{FINISH}('HR', 'EMP', 'INT_EMP', 'P1')").actions == (Redefinition("HR", "INT_EMP", "P1"),)
    assert parse_ddl(f"{FINISH}('HR', '\"Emp\"', 'INT_EMP')").name == "Emp"
    for text, message in [
        ("BEGIN DBMS_STATS.GATHER_TABLE_STATS('HR', 'EMP'); END;", "this record calls DBMS_STATS.GATHER_TABLE_STATS"),
        (f"BEGIN {FINISH}('HR', 'EMP; DROP TABLE x', 'I'); END;", "ORIG_TABLE 'EMP; DROP TABLE x' is not a plain name"),
        (f"{FINISH}('HR', 'EMP')", "names no INT_TABLE"),
        (f"{FINISH}(uname => 'HR', table => 'EMP', int_table => 'I')", "argument 2 is"),
        (f"{FINISH}('HR', orig, 'I')", "ORIG_TABLE must be a string literal"),
        (f"BEGIN {FINISH}('HR', 'A', 'I'); {FINISH}('HR', 'B', 'J'); END;", "calls FINISH_REDEF_TABLE 2 times"),
        ("BEGIN UPDATE hr.emp SET name = 'x'; END;", "calls to DBMS_REDEFINITION only"),
        ("EXEC", "expected a procedure call after CALL, EXEC or EXECUTE"),
        ("CALL;", "expected a procedure call after CALL, EXEC or EXECUTE"),
    ]:
        with pytest.raises(DdlError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse_ddl(text)


def test_a_redefinition_is_read_as_the_alter_table_it_amounts_to():
    """HVR's dbms_redefinition rows: storage only updates nothing the target follows; a
    change of columns, types or key is decided as that ALTER TABLE; the interim table takes
    the table's old structure; an interim table the dictionary never saw is an error (942)."""
    history: dict = {}

    def take(text: str, scn: int):
        reading = read_ddl(history, text, scn, "HR", (AdaptDdl(),))
        for key, rev in reading.revisions:
            history.setdefault(key, []).append(rev)
        return reading

    take("CREATE TABLE hr.emp (id NUMBER(4) NOT NULL, name VARCHAR2(10), code NUMBER(5), "
         "CONSTRAINT emp_pk PRIMARY KEY (id))", 100)
    take("CREATE TABLE hr.int1 (id NUMBER(4) NOT NULL, name VARCHAR2(10), code NUMBER(5), "
         "CONSTRAINT int1_pk PRIMARY KEY (id)) PARTITION BY HASH (id) PARTITIONS 4 COMPRESS", 110)
    stored = take(f"{FINISH}('HR', 'EMP', 'INT1')", 120)
    assert (stored.statement, stored.decision, stored.revisions) == ("DBMS_REDEFINITION", "IGNORE", ())
    assert "structure is unchanged" in stored.reason
    take("CREATE TABLE hr.int2 (id NUMBER(4) NOT NULL, name VARCHAR2(40), code VARCHAR2(5) NOT NULL, "
         "CONSTRAINT int2_pk PRIMARY KEY (code))", 130)
    changed = take(f"{FINISH}('HR', 'EMP', 'INT2')", 140)
    assert (changed.statement, changed.decision) == ("DBMS_REDEFINITION", "REFRESH")
    assert "HR.EMP redefined with interim table HR.INT2: CODE changes data type" in changed.reason
    emp, interim = (dict(changed.revisions)[k] for k in (("HR", "EMP"), ("HR", "INT2")))
    assert [(c.name, c.type.oracle, c.nullable) for c in emp.table.columns] == [
        ("ID", "NUMBER(4)", False), ("NAME", "VARCHAR2(40)", True), ("CODE", "VARCHAR2(5)", False)]
    assert emp.table.key_columns == ("CODE",)
    assert [(c.name, c.type.oracle) for c in interim.table.columns] == [
        ("ID", "NUMBER(4)"), ("NAME", "VARCHAR2(10)"), ("CODE", "NUMBER(5)")]
    # Oracle's own steps: an interim table created without constraints (COPY_TABLE_DEPENDENTS
    # copies them, and the NOT NULLs) only repartitioned: nothing changes, the key stays.
    take("CREATE TABLE hr.int3 (id NUMBER(4), name VARCHAR2(40), code VARCHAR2(5)) PARTITION BY HASH (id) PARTITIONS 4",
         142)
    for step in ("START_REDEF_TABLE", "COPY_TABLE_DEPENDENTS", "FINISH_REDEF_TABLE"):
        again = take(f"BEGIN DBMS_REDEFINITION.{step}('HR', 'EMP', 'INT3'); END;", 145)
    assert (again.statement, again.decision) == ("DBMS_REDEFINITION", "IGNORE")
    assert history[("HR", "EMP")][-1].table.key_columns == ("CODE",)
    assert history[("HR", "INT3")][-1].table.key_columns == ("CODE",)  # the interim took the old structure
    missing = take(f"{FINISH}('HR', 'EMP', 'INT9')", 150)
    assert (missing.decision, missing.code) == ("ERROR", "942") and "HR.INT9 is not in the source dictionary" in missing.reason
