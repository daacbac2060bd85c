"""The source dictionary: table structures learnt from CREATE TABLE records.

The dictionary follows every DDL record of the source, whatever rules decide, so DML
is always read with the right columns. DDL text is parsed with sqlglot (Oracle dialect);
anything that is not understood is logged with the reason, never lost.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from lakestreams.config import IDENTIFIER
from lakestreams.errors import DdlError
from silver.types import ColumnType, map_oracle_type

LOB_TYPES = ("CLOB", "NCLOB", "BLOB", "LONG", "LONG RAW")


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: ColumnType
    nullable: bool = True


@dataclass(frozen=True)
class TableDef:
    """One revision of a source table as the dictionary knows it."""

    owner: str
    name: str
    columns: tuple[ColumnDef, ...]
    key_columns: tuple[str, ...]
    key_kind: str  # PRIMARY KEY | UNIQUE | ALL COLUMNS

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
        name = e.this if e.quoted else e.this.upper()
        if not SAFE_NAME.fullmatch(name):
            raise DdlError(
                f"name {name!r} is refused: names must be a letter then letters, digits, _, $ or # (at most 128)"
            )
        return name
    if isinstance(e, exp.Column):
        return _ident(e.this)
    raise DdlError(f"expected a column name, found {e.sql('oracle')}")


def _key_names(node: exp.Expression) -> list[str]:
    target = node.this if isinstance(node, exp.UniqueColumnConstraint) and node.this else node
    items = target.expressions if hasattr(target, "expressions") else []
    return [_ident(i) for i in items]


def parse_create_table(ddl_text: str, number_policy: str = "decimal") -> TableDef:
    """Parse an Oracle CREATE TABLE into a TableDef.

    >>> t = parse_create_table("CREATE TABLE hr.regions (region_id NUMBER NOT NULL, "
    ...     "region_name VARCHAR2(25), CONSTRAINT reg_pk PRIMARY KEY (region_id))")
    >>> (t.owner, t.name, t.key_columns)
    ('HR', 'REGIONS', ('REGION_ID',))
    """
    try:
        tree = sqlglot.parse_one(ddl_text, read="oracle")
    except sqlglot.errors.ParseError as e:
        raise DdlError(f"CREATE TABLE does not parse: {str(e).splitlines()[0]}") from e
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind", "")).upper() != "TABLE":
        raise DdlError("not a CREATE TABLE statement")
    schema = tree.this
    if not isinstance(schema, exp.Schema):
        raise DdlError("CREATE TABLE without a column list (CREATE TABLE AS SELECT is not read yet)")
    table = schema.this
    if not table.args.get("db"):
        raise DdlError("CREATE TABLE without an owner (expected owner.table)")
    owner, name = _ident(table.args["db"]), _ident(table.this)
    columns: list[ColumnDef] = []
    pk: list[str] = []
    uniques: list[list[str]] = []
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            col = _ident(item.this)
            kind = item.args.get("kind")
            if kind is None:
                raise DdlError(f"column {col} has no type")
            nullable = True
            for c in item.constraints:
                k = c.args.get("kind")
                if isinstance(k, exp.NotNullColumnConstraint) and not k.args.get("allow_null"):
                    nullable = False
                elif isinstance(k, exp.PrimaryKeyColumnConstraint):
                    pk = [col]
                    nullable = False
                elif isinstance(k, exp.UniqueColumnConstraint):
                    uniques.append([col])
            columns.append(ColumnDef(col, map_oracle_type(kind, number_policy), nullable))
        elif isinstance(item, (exp.Constraint, exp.PrimaryKey, exp.UniqueColumnConstraint)):
            parts = item.expressions if isinstance(item, exp.Constraint) else [item]
            for part in parts:
                if isinstance(part, exp.PrimaryKey):
                    pk = _key_names(part)
                elif isinstance(part, exp.UniqueColumnConstraint):
                    uniques.append(_key_names(part))
    names = {c.name for c in columns}
    if len(names) != len(columns):
        raise DdlError(f"CREATE TABLE {owner}.{name} names a column twice")
    for key in [pk, *uniques]:
        for k in key:
            if k not in names:
                raise DdlError(f"key column {k} is not a column of {owner}.{name}")
    if pk:
        key, kind = tuple(pk), "PRIMARY KEY"
    else:
        candidates = [
            u for u in uniques if any(not c.nullable for c in columns if c.name in u)
        ]
        if candidates:
            key, kind = tuple(min(candidates, key=len)), "UNIQUE"
        else:
            key = tuple(c.name for c in columns if not c.type.oracle.upper().startswith(LOB_TYPES))
            kind = "ALL COLUMNS"
    # Key columns are never NULL in a primary key; make that visible to the apply.
    columns = [
        ColumnDef(c.name, c.type, c.nullable and not (kind == "PRIMARY KEY" and c.name in key))
        for c in columns
    ]
    return TableDef(owner, name, tuple(columns), key, kind)


DICTIONARY_DDL = """
  source_database STRING, owner STRING, table_name STRING, revision_scn BIGINT,
  columns ARRAY<STRUCT<name: STRING, oracle_type: STRING, spark_type: STRING, nullable: BOOLEAN,
    max_length: INT, empty_is_null: BOOLEAN, hex_binary: BOOLEAN>>,
  key_columns ARRAY<STRING>, key_kind STRING, ddl_text STRING, transaction_id STRING,
  silver_batch BIGINT
"""

DDL_LOG_DDL = """
  source_database STRING, transaction_id STRING, scn BIGINT, commit_scn BIGINT,
  command_type STRING, object_owner STRING, object_name STRING, ddl_text STRING,
  outcome STRING, silver_batch BIGINT
"""


def table_def_to_row(t: TableDef) -> dict:
    """A TableDef as the ``columns``/``key_*`` fields of a dictionary row."""
    return {
        "owner": t.owner,
        "table_name": t.name,
        "columns": [
            {
                "name": c.name,
                "oracle_type": c.type.oracle,
                "spark_type": c.type.spark,
                "nullable": c.nullable,
                "max_length": c.type.max_length,
                "empty_is_null": c.type.empty_is_null,
                "hex_binary": c.type.hex_binary,
            }
            for c in t.columns
        ],
        "key_columns": list(t.key_columns),
        "key_kind": t.key_kind,
    }


def table_def_from_row(row) -> TableDef:
    """Inverse of :func:`table_def_to_row` for a dictionary-table Row."""
    cols = tuple(
        ColumnDef(
            c["name"],
            ColumnType(c["oracle_type"], c["spark_type"], c["max_length"], c["empty_is_null"], c["hex_binary"]),
            c["nullable"],
        )
        for c in row["columns"]
    )
    return TableDef(row["owner"], row["table_name"], cols, tuple(row["key_columns"]), row["key_kind"])
