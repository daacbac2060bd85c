"""Typed change rows: VARIANT images → typed structs, presence lists and errors.

Pure transformations: they take DataFrames and return DataFrames. A value that does
not convert, a column the dictionary does not know and a missing key are errors on
the row (``_error``); the apply plan sends the whole transaction to the error queue.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Context, Decimal
from functools import reduce
from typing import NamedTuple

import sqlglot
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from sqlglot import exp

from lakestreams.delta_io import local_rows
from lakestreams.errors import ReplicationError
from silver.dictionary import ColumnDef, TableDef, column_from_row, column_to_row
from silver.evolution import OUTSIDE, Revision, renamed_names, renamed_since, renames_since

META = (
    "_source_database",
    "_transaction_id",
    "_scn",
    "_commit_scn",
    "_commit_time",
    "_position",
    "_command_type",
    "_tag",
    "_silver_batch",
    "_migrated_from",
)


def _path(name: str) -> str:
    # Names come from the parsed dictionary (identifiers); brackets keep $ and # literal.
    return "$[\"" + name.replace('"', "") + "\"]"


def _raw(image: str, c: ColumnDef) -> Column:
    return F.expr(f"variant_get({image}, '{_path(c.name)}')")


def _typed(image: str, c: ColumnDef) -> Column:
    t = c.type
    if t.hex_binary:
        value = F.expr(f"try_to_binary(try_variant_get({image}, '{_path(c.name)}', 'string'), 'hex')")
    elif t.spark == "VARIANT":
        value = _raw(image, c)
    else:
        value = F.expr(f"try_variant_get({image}, '{_path(c.name)}', '{t.spark}')")
    if t.empty_is_null:
        value = F.when(value == F.lit(""), F.lit(None)).otherwise(value)
    return value


def _is_value(image: str, c: ColumnDef) -> Column:
    """The image holds a non-null JSON value for the column."""
    raw = _raw(image, c)
    return raw.isNotNull() & ~F.expr(f"is_variant_null(variant_get({image}, '{_path(c.name)}'))")


def _present(image: str) -> Column:
    keys = F.expr(f"map_keys(try_variant_get({image}, '$', 'map<string,variant>'))")
    return F.when(F.col(image).isNull(), F.array().cast("array<string>")).otherwise(F.array_sort(keys))


def _joined(messages: list[Column]) -> Column:
    """The messages that apply (NULL for one that does not), joined by "; "; NULL if none
    applies. Every message is text of its own, never the empty string."""
    return F.nullif(F.concat_ws("; ", *messages), F.lit(""))


def _column_errors(image: str, label: str, c: ColumnDef, typed: Column) -> list[Column]:
    """What is wrong with one column's value in ``image``; ``typed``: that value as the
    column's type (``_typed``, computed once and referred to here)."""
    t = c.type
    errs = [
        F.when(
            _is_value(image, c) & typed.isNull() & ~(F.lit(t.empty_is_null) & (_raw(image, c).cast("string") == "")),
            F.lit(f"{label} value of {c.name} does not convert to {t.oracle} ({t.spark})"),
        )
    ]
    if t.max_digits:
        errs.append(
            F.when(
                F.abs(typed) >= F.lit(10**t.max_digits),
                F.lit(f"{label} value of {c.name} has more than {t.max_digits} digits ({t.oracle})"),
            )
        )
    if t.max_length:
        measured = F.length(typed) if t.length_unit == "characters" else F.octet_length(typed)
        errs.append(
            F.when(
                measured > F.lit(t.max_length),
                F.lit(f"{label} value of {c.name} is longer than {t.max_length} {t.length_unit} ({t.oracle})"),
            )
        )
    return errs


#: Oracle's clock functions. As a column's DEFAULT, the apply gives them the change's commit
#: time: when the source row came to be, and the same value on every run.
CLOCKS = (exp.CurrentTimestamp, exp.Systimestamp, exp.CurrentDate, exp.Localtimestamp)
#: The formats sqlglot regenerates Oracle's DATE and TIMESTAMP literals with.
ISO_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f")


#: Spark's integer types: a number default for them is rounded, as Oracle stores NUMBER(p).
INTEGRAL = ("TINYINT", "SMALLINT", "INT", "BIGINT")


class Default(NamedTuple):
    """What an INSERT that does not carry a column takes: ``value``, NULL where it cannot
    take the default (then the INSERT fails, and ``fault`` says why)."""

    value: Column
    fault: str


#: A number as Oracle's NUMBER literals write it (a sign, digits, a point, an exponent).
NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _number_default(c: ColumnDef, text: str) -> Default:
    """A number default for a NUMBER column, as Oracle stores it: the literal (an exponent
    allowed) rounded half up to the column's scale. More digits before the point than
    NUMBER(p,s) holds once rounded (``p - s``) does not fit (ORA-01438); without a stated
    precision, what a Spark DECIMAL holds (38 digits). Worked out on the driver: the
    default is one constant."""
    t = c.type
    null, converts = F.lit(None).cast(t.spark), f"does not convert to {t.oracle}"
    if not NUMBER_TEXT.fullmatch(text.strip()):
        return Default(null, converts)
    declared = t.declared_number
    if declared:
        cap, scale = t.integer_digits, declared[1]
        too_large = Default(null, f"has more digits than {t.oracle} holds")
    else:
        held = re.fullmatch(r"DECIMAL\(\d+,\s*(\d+)\)", t.spark)
        cap, scale, too_large = 38, int(held[1]) if held else 0, Default(null, converts)
    number = Decimal(text.strip())
    if number and number.adjusted() >= cap:  # checked before rounding too: 1e100 is not rounded
        return too_large
    number = number.quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP, Context(prec=100))
    if number and number.adjusted() >= cap:
        return too_large  # 999.5 in NUMBER(3) is 1000
    return Default(F.lit(format(number, "f")).try_cast(t.spark), converts)


def oracle_number_text(text: str) -> str | None:
    """A number literal as Oracle's implicit conversion to text writes it (format TM9): no
    trailing zeros, no zero before the point, no exponent; None where that takes more than
    64 characters (Oracle then writes scientific notation).

    >>> [oracle_number_text(t) for t in ("0.5", "-0.50", "1.50", "1e2", "0.0", "12", "1e-3")]
    ['.5', '-.5', '1.5', '100', '0', '12', '.001']
    """
    number = Decimal(text).normalize(Context(prec=100))
    if not number:
        return "0"
    fixed = format(number, "f")
    fixed = fixed.replace("0.", ".", 1) if fixed.lstrip("-").startswith("0.") else fixed
    return fixed if len(fixed) <= 64 else None


def default_value(c: ColumnDef) -> Default | None:
    """What an INSERT that does not carry column ``c`` takes (Oracle's apply gives an extra
    target column its default on insert): the column's DEFAULT when it is a constant (a
    number, a string, a DATE or TIMESTAMP literal), converted to the column's type; the
    change's commit time for a clock (SYSDATE, SYSTIMESTAMP, CURRENT_DATE …). None (the
    value stays NULL) without a default, for DEFAULT NULL, and for what the apply cannot
    know (a sequence, SYS_GUID(), USER, an expression). A constant that does not convert
    or does not fit the column gives a NULL value and the fault."""
    if c.default is None or c.type.hex_binary or c.type.spark == "VARIANT":
        return None
    try:
        node = sqlglot.parse_one(c.default, read="oracle")
    except sqlglot.errors.ParseError:
        return None
    while isinstance(node, exp.Paren):
        node = node.this
    converts = f"does not convert to {c.type.oracle}"
    if isinstance(node, CLOCKS):
        return Default(F.col("_commit_time").cast(c.type.spark), converts)
    text: str | None = None
    if isinstance(node, (exp.Literal, exp.National)):
        text = node.this
    elif isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        text = f"-{node.this.this}"
    elif isinstance(node, exp.DateStrToDate) and isinstance(node.this, exp.Literal):
        text = node.this.this
    elif isinstance(node, (exp.StrToDate, exp.StrToTime)) and isinstance(node.this, exp.Literal):
        fmt = node.args.get("format")
        if isinstance(fmt, exp.Literal) and fmt.this in ISO_FORMATS:
            text = node.this.this
    if text is None or text == "":  # Oracle reads '' as NULL, whatever the type
        return None
    if c.type.spark in INTEGRAL or c.type.spark.startswith("DECIMAL"):
        return _number_default(c, str(text))
    quoted = isinstance(node, exp.National) or (isinstance(node, exp.Literal) and node.is_string)
    number = not quoted and isinstance(node, (exp.Literal, exp.Neg))
    if number and c.type.empty_is_null:
        # A number in a character column is stored as Oracle converts it to text.
        text = oracle_number_text(str(text))
        if text is None:
            return Default(F.lit(None).cast(c.type.spark), "is a number Oracle writes in scientific notation "
                                                             "(over 64 characters), which the apply does not reproduce")
    # A text longer than a character column holds does not fit (ORA-12899). A date stored
    # in one is written as the session's NLS_DATE_FORMAT says, which the apply cannot know.
    if (quoted or number) and c.type.max_length is not None and c.type.length(text) > c.type.max_length:
        return Default(F.lit(None).cast(c.type.spark),
                       f"is longer than {c.type.max_length} {c.type.length_unit} ({c.type.oracle})")
    if quoted or number:  # CHAR(n) stores the text blank-padded to its length
        text = c.type.padded(str(text))
    return Default(F.lit(str(text)).try_cast(c.type.spark), converts)


#: Per dictionary revision: which change rows it reads (a condition) and the default of each
#: change-table column that has one (``default_value``).
Defaults = list[tuple[Column, dict[str, Default]]]


def table_defaults(table: TableDef) -> Defaults:
    """The defaults of one structure, for every row (the snapshot compare's)."""
    d = {c.name: v for c in table.columns if (v := default_value(c)) is not None}
    return [(F.lit(True), d)] if d else []


#: A target's defaults per revision as silver keeps them in its registry (``silver.targets``),
#: so the apply plan gives an error handler's INSERT what silver gives a change: one
#: element per revision (SCN range; NULL: open) and column with a default.
REVISION_DEFAULTS_DDL = (
    "ARRAY<STRUCT<from_scn: BIGINT, to_scn: BIGINT, name: STRING, oracle_type: STRING, spark_type: STRING, "
    "max_length: INT, empty_is_null: BOOLEAN, hex_binary: BOOLEAN, default_sql: STRING>>"
)


def revision_default_rows(revisions: list[Revision], structures: list[TableDef], shape, columns) -> list[dict]:
    """The target's defaults in force at each revision of a source table, under today's
    column names (``columns``: the change table's), as ``REVISION_DEFAULTS_DDL`` elements.
    Grows with revisions and columns."""
    out = []
    for i, r in enumerate(revisions):
        if r.status == "DROPPED":
            continue
        try:
            target = shape(structures[i])
        except ReplicationError:
            continue  # its rows fail in typed_by_revision
        now = {renamed_since(revisions, r.scn, n): n for n in target.column_names}
        for name in columns:
            c = target.column(now[name]) if name in now else None
            if c is None or default_value(c) is None:
                continue
            out.append({**column_to_row(c), "name": name, "from_scn": r.scn if i > 0 else None,
                        "to_scn": revisions[i + 1].scn if i + 1 < len(revisions) else None})
    return out


def defaults_from_rows(rows, source_database: str | None = None) -> Defaults:
    """``Defaults`` from ``revision_default_rows`` elements (dicts or Rows): per SCN range
    (``scn_range``, as ``in_force`` reads revisions); only changes
    of ``source_database`` if given (a target fed by several)."""
    ranges: dict[tuple, dict[str, Default]] = {}
    for r in rows:
        r = r.asDict() if hasattr(r, "asDict") else r
        value = default_value(column_from_row(r))
        if value is not None:
            ranges.setdefault((r["from_scn"], r["to_scn"]), {})[r["name"]] = value
    mine = F.lit(True) if source_database is None else F.col("_source_database") == F.lit(source_database)
    return [(mine & scn_range(lo, hi, "_scn", "_commit_scn"), d) for (lo, hi), d in ranges.items()]


def fill_defaults(changes: DataFrame, defaults: Defaults) -> DataFrame:
    """Target columns an INSERT does not carry take their default, as Oracle's apply gives
    an extra target column (one KeepExistingStructure kept, which the source no longer has,
    or one the record leaves out); the column then counts as carried. Run on the changes
    as DML handlers leave them: a handler sees the record as captured, and an INSERT it
    makes takes the defaults too. A constant DEFAULT that does not convert to the column's
    type (``NUMBER(3) DEFAULT 'x'``, a DATE default in a format other than ISO) or does not
    fit it (``VARCHAR2(3) DEFAULT 'abcd'``, ``NUMBER(3) DEFAULT 1000``) fails the INSERT
    that would take it, as Oracle's insert would (ORA-01722, ORA-12899 and the like),
    rather than leaving the column silently NULL: ``default_value`` gives no NULL default
    (not for DEFAULT NULL, nor ''), so a NULL here is a failure, and its ``fault`` says
    why."""
    if not defaults:
        return changes
    inserting = F.col("_command_type") == "INSERT"
    values, filled, bad = [], [], []
    for f in changes.schema["_new"].dataType.fields:
        c, current = f.name, F.col(f"_new.`{f.name}`")
        chain, faults, applies = None, None, None
        for cond, d in defaults:
            if c in d:
                value, fault = d[c].value, F.lit(d[c].fault)
                chain = F.when(cond, value) if chain is None else chain.when(cond, value)
                faults = F.when(cond, fault) if faults is None else faults.when(cond, fault)
                applies = cond if applies is None else applies | cond
        if chain is None:
            values.append(current.alias(c))
            continue
        fill = inserting & ~F.array_contains("_new_present", c) & applies
        value = chain.try_cast(f.dataType)
        values.append(F.when(fill, value).otherwise(current).alias(c))
        filled.append(F.when(fill, F.lit(c)))
        bad.append(F.when(fill & value.isNull(), F.concat(
            F.lit(f"the INSERT does not carry {c}, and the DEFAULT of {c} "), faults)))
    if not filled:
        return changes
    present = F.array_sort(F.array_union("_new_present", F.array_compact(F.array(*filled))))
    return changes.withColumns({
        "_new": F.struct(*values),
        "_new_present": F.when(inserting, present).otherwise(F.col("_new_present")),
        "_error": F.coalesce(F.col("_error"), _joined(bad)),
    })


def type_changes(records: DataFrame, table: TableDef, silver_batch: int) -> DataFrame:
    """Released, accepted row records of one source table → typed change rows."""
    known = F.array(*[F.lit(n) for n in table.column_names]).cast("array<string>")
    df = records.select(
        F.col("source_database").alias("_source_database"),
        F.col("transaction_id").alias("_transaction_id"),
        F.col("scn").alias("_scn"),
        F.col("commit_scn").alias("_commit_scn"),
        F.col("commit_time").alias("_commit_time"),
        F.col("position").alias("_position"),
        F.col("command_type").alias("_command_type"),
        F.col("tag").alias("_tag"),
        F.lit(silver_batch).cast("bigint").alias("_silver_batch"),
        "_migrated_from",
        "old_values",
        "new_values",
    )
    # The typed images and the columns each image holds, computed once: the checks below
    # refer to them many times (a second projection, which the optimizer keeps apart since
    # it would otherwise repeat them).
    df = df.select(
        "*",
        F.struct(*[_typed("old_values", c).alias(c.name) for c in table.columns]).alias("_old"),
        F.struct(*[_typed("new_values", c).alias(c.name) for c in table.columns]).alias("_new"),
        _present("old_values").alias("_old_present"),
        _present("new_values").alias("_new_present"),
    )
    old_present, new_present = F.col("_old_present"), F.col("_new_present")
    errors: list[Column] = []
    for img, label, typed in (("old_values", "old", "_old"), ("new_values", "new", "_new")):
        for c in table.columns:
            errors += _column_errors(img, label, c, F.col(typed)[c.name])
    unknown = F.array_except(F.array_union(old_present, new_present), known)
    errors.append(
        F.when(
            F.size(unknown) > 0,
            F.concat(
                F.lit(f"column(s) not in the source dictionary of {table.owner}.{table.name}: "),
                F.array_join(unknown, ", "),
            ),
        )
    )
    cmd = F.col("_command_type")
    for k in table.key_columns:
        c = table.column(k)
        # A primary key is never NULL; in a unique or all-columns key a NULL is a value.
        has_key = (
            _is_value("old_values", c)
            if table.key_kind == "PRIMARY KEY"
            else F.array_contains(old_present, k)
        )
        errors.append(
            F.when(
                cmd.isin("UPDATE", "DELETE", "LOB_UPDATE") & ~has_key,
                F.lit(f"old image has no value for key column {k}"),
            )
        )
        if table.key_kind == "PRIMARY KEY":
            errors.append(
                F.when(cmd == "INSERT", F.when(~_is_value("new_values", c), F.lit(f"INSERT has no value for key column {k}")))
            )
    # An UPDATE migrated to an INSERT must carry the whole row: a column in neither image
    # means the source did not log it (supplemental logging), and half a row is not applied.
    not_logged = F.array_except(known, new_present)
    errors.append(
        F.when(
            (F.col("_migrated_from") == "UPDATE") & (cmd == "INSERT") & (F.size(not_logged) > 0),
            F.concat(
                F.lit(f"row migration made an UPDATE of {table.owner}.{table.name} an INSERT, but column(s) "),
                F.array_join(not_logged, ", "),
                F.lit(" are in neither the old nor the new image (supplemental logging missing at the source)"),
            ),
        )
    )
    return df.select(
        *META, "_old", "_new", "_old_present", "_new_present", _joined(errors).alias("_error"),
    )


def change_table_ddl(table: TableDef) -> str:
    """Column list of a typed change table."""
    cols = ", ".join(f"`{c.name}`: {c.type.spark}" for c in table.columns)
    return (
        "_source_database STRING, _transaction_id STRING, _scn BIGINT, _commit_scn BIGINT, "
        "_commit_time TIMESTAMP, _position BIGINT, _command_type STRING, _tag STRING, "
        f"_silver_batch BIGINT, _migrated_from STRING, _old STRUCT<{cols}>, _new STRUCT<{cols}>, "
        "_old_present ARRAY<STRING>, _new_present ARRAY<STRING>, _error STRING"
    )


def target_model_name(owner: str, table: str) -> str:
    """``hr__regions``: the gold table (and dbt model) of a target."""
    return f"{owner}__{table}".lower()


def change_table_name(source_database: str, owner: str, table: str) -> str:
    """``chg__dbs1_example_com__hr__regions``: one change table per source object."""
    return "chg__" + "__".join(p.lower().replace(".", "_") for p in (source_database, owner, table))


def in_force(revisions: list[Revision], i: int, scn: str = "scn", commit_scn: str = "commit_scn") -> Column:
    """Records read with revision ``i`` of ``revisions``: from its SCN (the first: any
    record before the second) to the next one's. A record's SCN is its change SCN, else
    its commit SCN (``scn``, ``commit_scn``: their columns; ``_scn``, ``_commit_scn`` in
    a change row)."""
    return scn_range(revisions[i].scn if i > 0 else None, revisions[i + 1].scn if i + 1 < len(revisions) else None,
                     scn, commit_scn)


def scn_range(lo: int | None, hi: int | None, scn: str = "scn", commit_scn: str = "commit_scn") -> Column:
    """Records whose SCN (else commit SCN) is at or above ``lo`` and below ``hi`` (None: open)."""
    at = F.coalesce(F.col(scn), F.col(commit_scn))
    cond = F.lit(True)
    if lo is not None:
        cond = cond & (at >= F.lit(lo))
    if hi is not None:
        cond = cond & (at < F.lit(hi))
    return cond


def outside_channel(revisions: dict[tuple[str, str, str], list[Revision]]) -> Column | None:
    """Records of a source table while it is outside the channel (no AddTablePattern
    added it: ``silver.evolution.OUTSIDE``), or None when no table ever was. One term per
    such revision: grows with DDL, not rows."""
    terms = [
        (F.col("source_database") == src) & (F.col("_source_owner") == owner) & (F.col("_source_name") == name)
        & in_force(revs, i)
        for (src, owner, name), revs in sorted(revisions.items()) for i, r in enumerate(revs) if r.decision == OUTSIDE
    ]
    return reduce(lambda a, b: a | b, terms) if terms else None


def typed_by_revision(
    records: DataFrame, revisions: list, structures: list[TableDef], shape, silver_batch: int, change_schema: StructType,
) -> tuple[DataFrame, DataFrame]:
    """Released, accepted row records of one source table, each read with the dictionary
    revision in force at its SCN (DDL is a barrier) and laid out as the change table's
    columns (``change_schema``: every column the table ever had, under today's names).

    ``revisions``: the source table's ``silver.evolution.Revision`` list by SCN;
    ``structures``: the target structure at each; ``shape``: the rule path's
    transformations (source → target definition). Returns (typed change rows, txn errors
    for rows of a dropped table)."""
    cols = {f.name: f.dataType for f in change_schema["_new"].dataType.fields}
    parts, errors = [], []
    for i, r in enumerate(revisions):
        rows = records.where(in_force(revisions, i))
        problem = None
        if r.status == "DROPPED":
            problem = f"{r.table.owner}.{r.table.name} was dropped at SCN {r.scn}: a change after it has no table"
        else:
            try:
                source, target = shape(r.table), shape(structures[i])
            except ReplicationError as e:
                problem = str(e)
        if problem is not None:
            errors.append(rows.select(
                F.lit(silver_batch).cast("bigint").alias("silver_batch"), "source_database", "transaction_id",
                F.lit(problem).alias("error"), F.col("raw").alias("failing_record")))
            continue
        now = {renamed_since(revisions, r.scn, n): n for n in target.column_names}
        has = set(source.column_names)
        typed = type_changes(rows, source, silver_batch)

        def image(struct: str, now=now, has=has) -> Column:
            return F.struct(*[
                (F.col(f"{struct}.`{now[c]}`") if now.get(c) in has else F.lit(None)).cast(t).alias(c)
                for c, t in cols.items()
            ])

        renames = renames_since(revisions, r.scn)

        def present(col: str, renames=renames) -> Column:
            return renamed_names(F.col(col), renames) if renames else F.col(col)

        parts.append(typed.select(
            *META, image("_old").alias("_old"), image("_new").alias("_new"),
            present("_old_present").alias("_old_present"), present("_new_present").alias("_new_present"), "_error"))
    empty = local_rows(records.sparkSession, [], "silver_batch BIGINT, source_database STRING, transaction_id STRING, "
                       "error STRING, failing_record STRING")
    if not parts:
        raise ReplicationError("no revision of the table is in force for its changes")
    return reduce(DataFrame.unionByName, parts), reduce(DataFrame.unionByName, errors, empty)
