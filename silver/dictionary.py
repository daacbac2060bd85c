"""The source dictionary: table structures learnt from CREATE TABLE records.

The dictionary follows every DDL record of the source, whatever rules decide, so DML
is always read with the right columns. DDL text is parsed with sqlglot (Oracle dialect);
anything that is not understood is logged with the reason, never lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp

from lakestreams.config import IDENTIFIER
from lakestreams.errors import DdlError
from silver.oracle_ddl import OracleDdl
from silver.types import ColumnType, map_oracle_type

LOB_TYPES = ("CLOB", "NCLOB", "BLOB", "LONG", "LONG RAW")


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: ColumnType
    nullable: bool = True
    #: The DEFAULT expression as Oracle SQL (sqlglot regenerates it). Not part of structure
    #: comparisons: a changed default is no change of the table's layout.
    default: str | None = field(default=None, compare=False)
    #: A virtual column: Oracle stores no value, so no record carries one and no key on it
    #: can be matched (``table_with_keys`` never chooses one).
    virtual: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class TableDef:
    """One revision of a source table as the dictionary knows it."""

    owner: str
    name: str
    columns: tuple[ColumnDef, ...]
    key_columns: tuple[str, ...]
    key_kind: str  # PRIMARY KEY | UNIQUE | ALL COLUMNS
    #: The key constraints the DDL declared: (name or None, PRIMARY KEY | UNIQUE | UNIQUE
    #: INDEX, columns).
    #: The replication key is chosen from them (``table_with_keys``); what is compared is
    #: the key chosen (the registry does not store the constraints yet).
    constraints: tuple[tuple[str | None, str, tuple[str, ...]], ...] = field(default=(), compare=False)

    def column(self, name: str) -> ColumnDef:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


#: Names that reach Spark, dbt and file paths. Oracle allows more inside double quotes;
#: such names are refused here rather than quoted into SQL later.
SAFE_NAME = IDENTIFIER  # the channel file's identifier rule; always used with fullmatch


def _ident(e: exp.Expression) -> str:
    """Oracle name resolution: unquoted names fold to upper case, quoted names are kept."""
    if isinstance(e, exp.Identifier):
        # Checked as written: folded first, 'ſecrets' or 'regıons' would pass as SECRETS or REGIONS.
        if not SAFE_NAME.fullmatch(e.this):
            raise DdlError(
                f"name {e.this!r} is refused: names must be a letter then letters, digits, _, $ or # (at most 128)"
            )
        return e.this if e.quoted else e.this.upper()
    if isinstance(e, exp.Column):
        return _ident(e.this)
    raise DdlError(f"expected a column name, found {e.sql('oracle')}")


def _key_names(node: exp.Expression) -> list[str]:
    target = node.this if isinstance(node, exp.UniqueColumnConstraint) and node.this else node
    items = target.expressions if hasattr(target, "expressions") else []
    return [_ident(i) for i in items]


def is_virtual(node: exp.ColumnDef) -> bool:
    """A virtual column (``AS (…)``, ``GENERATED ALWAYS AS (…) [VIRTUAL]``): Oracle stores
    no value for it, so the redo, and a change record, never carries one."""
    for c in node.constraints:
        k = c.args.get("kind")
        if isinstance(k, exp.ComputedColumnConstraint) or (
                isinstance(k, exp.GeneratedAsIdentityColumnConstraint) and k.args.get("expression") is not None):
            return True
    return False


def read_column(
    node: exp.ColumnDef, number_policy: str = "decimal"
) -> tuple[str, ColumnType | None, bool | None, str | None, list[tuple[str | None, str, tuple[str, ...]]]]:
    """A column definition as CREATE TABLE and ALTER TABLE ADD/MODIFY write it: name, type
    (None: not given), nullability (None: not stated; a primary key is NOT NULL), DEFAULT
    as Oracle SQL, and the key constraints declared on the column itself.

    A virtual column is read as a nullable column of its declared type without keys: no
    record carries its value, so its target column holds NULL (the rule for a column a
    record leaves out), and a key on it could never be matched. Oracle derives the type
    of one declared without it; DBMS_METADATA prints it, and without it the column is an
    error (the record goes to DDL error handling)."""
    col = _ident(node.this)
    kind = node.args.get("kind")
    if is_virtual(node):
        if not kind:
            raise DdlError(f"virtual column {col} declares no type (write it as {col} <type> AS (…), "
                           "as DBMS_METADATA prints it)")
        return col, map_oracle_type(kind, number_policy), True, None, []
    nullable, default, keys = None, None, []
    for c in node.constraints:
        k = c.args.get("kind")
        cname = _ident(c.this) if isinstance(c.this, exp.Identifier) else None
        if isinstance(k, exp.NotNullColumnConstraint):
            nullable = bool(k.args.get("allow_null"))
        elif isinstance(k, exp.DefaultColumnConstraint):
            default = k.this.sql("oracle")
        elif isinstance(k, exp.PrimaryKeyColumnConstraint):
            keys.append((cname, "PRIMARY KEY", (col,)))
            nullable = False
        elif isinstance(k, exp.UniqueColumnConstraint):
            keys.append((cname, "UNIQUE", (col,)))
    return col, (map_oracle_type(kind, number_policy) if kind else None), nullable, default, keys


def read_constraint(node: exp.Expression) -> tuple[str | None, str, tuple[str, ...]] | None:
    """A table constraint as (name or None, PRIMARY KEY | UNIQUE | FOREIGN KEY | CHECK,
    columns); None when it is none of these. Constraint states (ENABLE, …) are ignored."""
    name = None
    if isinstance(node, exp.Constraint):
        name = _ident(node.this)
        parts = [p for p in node.expressions if not (isinstance(p, exp.Property) and p.name == "STATE")]
        if len(parts) != 1:
            return None
        node = parts[0]
    if isinstance(node, exp.PrimaryKey):
        return name, "PRIMARY KEY", tuple(_key_names(node))
    if isinstance(node, exp.UniqueColumnConstraint):
        return name, "UNIQUE", tuple(_key_names(node))
    if isinstance(node, exp.ForeignKey):
        return name, "FOREIGN KEY", tuple(_key_names(node))
    if isinstance(node, exp.CheckColumnConstraint):
        return name, "CHECK", ()
    return None


def table_with_keys(
    owner: str, name: str, columns: tuple[ColumnDef, ...], constraints: tuple[tuple[str | None, str, tuple[str, ...]], ...]
) -> TableDef:
    """A table revision with its replication key chosen from its key constraints: the
    primary key, else the smallest unique key with a NOT NULL column, else all columns
    but LOBs. Primary key columns are NOT NULL."""
    names = {c.name for c in columns}
    if len(names) != len(columns):
        raise DdlError(f"{owner}.{name} names a column twice")
    for _n, _kind, cols in constraints:
        for k in cols:
            if k not in names:
                raise DdlError(f"key column {k} is not a column of {owner}.{name}")
    # A key on a virtual column is never the replication key: no record carries its value.
    virtual = {c.name for c in columns if c.virtual}
    matchable = [(n, kind, cols) for n, kind, cols in constraints if not virtual & set(cols)]
    pk = next((cols for _n, kind, cols in matchable if kind == "PRIMARY KEY"), ())
    if pk:
        key, kind = tuple(pk), "PRIMARY KEY"
    else:
        not_null = {c.name for c in columns if not c.nullable}
        candidates = [cols for _n, k, cols in matchable
                      if k in ("UNIQUE", "UNIQUE INDEX") and cols and not_null & set(cols)]
        if candidates:
            key, kind = tuple(min(candidates, key=len)), "UNIQUE"
        else:
            key = tuple(c.name for c in columns if not c.type.oracle.upper().startswith(LOB_TYPES) and not c.virtual)
            kind = "ALL COLUMNS"
    # Key columns are never NULL in a primary key; make that visible to the apply.
    columns = tuple(replace(c, nullable=c.nullable and not (kind == "PRIMARY KEY" and c.name in key)) for c in columns)
    return TableDef(owner, name, columns, key, kind, tuple(constraints))


def refuse_subqueries(node: exp.Expression) -> None:
    """Oracle allows no subquery in a DEFAULT, CHECK or virtual column (ORA-02251); one in a
    table's DDL would name another table."""
    sub = node.find(exp.Select, exp.Subquery)
    if sub is not None:
        raise DdlError(f"a subquery is not allowed in a table's DDL (ORA-02251): {sub.sql('oracle')[:80]}")


def parse_create_table(ddl_text: str, number_policy: str = "decimal", tree: exp.Expression | None = None,
                       require_owner: bool = True) -> TableDef:
    """Parse an Oracle CREATE TABLE into a TableDef (``tree``: already parsed). The forms
    ``DBMS_METADATA`` prints (quoted names, constraint states, storage, LOB and partition
    clauses) give the same TableDef as the plain statement. ``require_owner`` False: an
    unqualified table gives owner None (a DDL record's schema names it).

    >>> t = parse_create_table("CREATE TABLE hr.regions (region_id NUMBER NOT NULL, "
    ...     "region_name VARCHAR2(25), CONSTRAINT reg_pk PRIMARY KEY (region_id))")
    >>> (t.owner, t.name, t.key_columns)
    ('HR', 'REGIONS', ('REGION_ID',))
    """
    if tree is None:
        try:
            tree = sqlglot.parse_one(ddl_text, read=OracleDdl)
        except sqlglot.errors.ParseError as e:
            raise DdlError(f"CREATE TABLE does not parse: {str(e).splitlines()[0]}") from e
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind", "")).upper() != "TABLE":
        raise DdlError("not a CREATE TABLE statement")
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise DdlError("CREATE TABLE without a column list (CREATE TABLE AS SELECT is not read yet)")
    refuse_subqueries(schema)
    table = schema.this
    if not table.args.get("db") and require_owner:
        raise DdlError("CREATE TABLE without an owner (expected owner.table)")
    owner = _ident(table.args["db"]) if table.args.get("db") else None
    name = _ident(table.this)
    columns: list[ColumnDef] = []
    keys: list[tuple[str | None, str, tuple[str, ...]]] = []
    virtual = {_ident(i.this) for i in schema.expressions if isinstance(i, exp.ColumnDef) and is_virtual(i)}
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            col, ctype, nullable, default, col_keys = read_column(item, number_policy)
            if ctype is None:
                raise DdlError(f"column {col} has no type")
            keys.extend(col_keys)
            columns.append(ColumnDef(col, ctype, nullable is not False, default, virtual=is_virtual(item)))
        elif isinstance(item, (exp.Constraint, exp.PrimaryKey, exp.UniqueColumnConstraint)):
            key = read_constraint(item)
            # A key on a virtual column is not one the records can match (read_column).
            if key is not None and key[1] in ("PRIMARY KEY", "UNIQUE") and not virtual & set(key[2]):
                keys.append(key)
    if sum(1 for k in keys if k[1] == "PRIMARY KEY") > 1:
        raise DdlError(f"CREATE TABLE {owner}.{name} declares two primary keys")
    return table_with_keys(owner, name, tuple(columns), tuple(keys))


#: One row per revision of a source table (valid from ``revision_scn``). ``status``: TABLE,
#: or DROPPED (the table is gone; DML for it is an error until it is created again).
#: ``renames``: new name → name in the previous revision. ``target_decision``: what the
#: AdaptDDL policy made of the target (``silver.adaptddl.Decision.target``), and
#: ``keep_structure``: KeepExistingStructure held (dropped columns stay, types never shrink);
#: ``excluded_targets``: targets ("OWNER.NAME") the record's DDL processing left out while it
#: applied to another of the table's (several MAPs); they do not follow the revision.
DICTIONARY_DDL = """
  source_database STRING, owner STRING, table_name STRING, revision_scn BIGINT,
  columns ARRAY<STRUCT<name: STRING, oracle_type: STRING, spark_type: STRING, nullable: BOOLEAN,
    max_length: INT, empty_is_null: BOOLEAN, hex_binary: BOOLEAN, default_sql: STRING, virtual: BOOLEAN>>,
  key_columns ARRAY<STRING>, key_kind STRING, ddl_text STRING, transaction_id STRING,
  silver_batch BIGINT,
  constraints ARRAY<STRUCT<name: STRING, kind: STRING, columns: ARRAY<STRING>>>,
  status STRING, renames MAP<STRING, STRING>, target_decision STRING, keep_structure BOOLEAN,
  excluded_targets ARRAY<STRING>
"""

#: Every DDL record, what it was understood as, the decision on the target and why, and
#: the revision it made (``revision_scn``; NULL when the dictionary did not change).
#: ``truncates_*``: the table whose rows it removes (TRUNCATE TABLE, or a dropped table
#: created again): silver writes a TRUNCATE change for it at the record's SCN, into the
#: change table of each target but those in ``truncates_excluded`` ("OWNER.NAME": several
#: MAPs, the record's DDL processing applied it to another target only).
DDL_LOG_DDL = """
  source_database STRING, transaction_id STRING, scn BIGINT, commit_scn BIGINT,
  command_type STRING, object_owner STRING, object_name STRING, ddl_text STRING,
  outcome STRING, silver_batch BIGINT,
  statement STRING, decision STRING, reason STRING, revision_scn BIGINT, position BIGINT,
  commit_time TIMESTAMP, truncates_owner STRING, truncates_table STRING,
  scope STRING, processing STRING, target_ddl ARRAY<STRING>, truncates_excluded ARRAY<STRING>
"""


def column_to_row(c: ColumnDef) -> dict:
    """A column as the ``columns`` elements of dictionary and registry rows keep it."""
    return {"name": c.name, "oracle_type": c.type.oracle, "spark_type": c.type.spark, "nullable": c.nullable,
            "max_length": c.type.max_length, "empty_is_null": c.type.empty_is_null, "hex_binary": c.type.hex_binary,
            "default_sql": c.default, "virtual": c.virtual}


def column_from_row(c) -> ColumnDef:
    """Inverse of :func:`column_to_row` (a dict or Row); a field a row was written without
    reads as its default (no default, stored, nullable)."""
    c = c.asDict() if hasattr(c, "asDict") else c
    return ColumnDef(
        c["name"],
        ColumnType(c["oracle_type"], c["spark_type"], c["max_length"], c["empty_is_null"], c["hex_binary"]),
        c.get("nullable", True) is not False,
        c.get("default_sql"),
        bool(c.get("virtual")),  # not kept before: false
    )


def table_def_to_row(t: TableDef) -> dict:
    """A TableDef as the ``columns``/``key_*`` fields of a dictionary row."""
    return {
        "owner": t.owner,
        "table_name": t.name,
        "columns": [column_to_row(c) for c in t.columns],
        "key_columns": list(t.key_columns),
        "key_kind": t.key_kind,
        "constraints": [{"name": n, "kind": k, "columns": list(cols)} for n, k, cols in t.constraints],
    }


def table_def_from_row(row) -> TableDef:
    """Inverse of :func:`table_def_to_row` for a dictionary or target-registry Row (the
    registry stores no constraints; a registry row written before it kept defaults has none)."""
    fields = row.asDict(recursive=True) if hasattr(row, "asDict") else dict(row)
    cols = tuple(column_from_row(c) for c in fields["columns"])
    constraints = tuple((k["name"], k["kind"], tuple(k["columns"])) for k in fields.get("constraints") or ())
    return TableDef(fields["owner"], fields["table_name"], cols, tuple(fields["key_columns"]), fields["key_kind"],
                    constraints)
