"""Rule-based transformations: declarative ones as Spark expressions, custom ones by name.

A transformation belongs to a rule of a client's positive rule set and runs only on the
row LCRs that rule kept, right after the client's rule evaluation (and row migration),
before the next client evaluates. Within one ``step_number``, declarative kinds run in
a fixed order (delete column, rename column, add column, rename table, rename schema),
then custom ones. The same steps are applied to the table definition, so the target
structure of a transformed table is known before any row is typed.

Custom transformations are registered in Python and named in the channel file:

>>> import pyspark.sql.functions as F
>>> register("upper_owner", {"object_owner": F.upper(F.col("object_owner"))})
>>> "upper_owner" in registered()
True
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation

import sqlglot
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lakestreams.config import IDENTIFIER, TRANSFORM_KINDS, VALUE_TYPES, TransformSpec
from lakestreams.errors import ConfigError, RuleError
from silver.condition import is_row_lcr, parse_value
from silver.dictionary import ColumnDef, TableDef
from silver.oracle_ddl import OracleDdl
from silver.types import ColumnType, map_oracle_type

Custom = Callable[[DataFrame], DataFrame] | Mapping[str, Column]
_REGISTRY: dict[str, Custom] = {}
#: Record fields a custom mapping may set; bookkeeping columns (``_…``) stay ours.
CUSTOM_FIELDS = (
    "object_owner", "object_name", "command_type", "old_values", "new_values", "tag",
)


def register(name: str, transformation: Custom) -> None:
    """Register a custom transformation: a function DataFrame → DataFrame (same columns),
    or a mapping record field → Spark Column."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ConfigError(f"transformation name {name!r} is not an identifier")
    if isinstance(transformation, Mapping):
        bad = sorted(set(transformation) - set(CUSTOM_FIELDS))
        if bad:
            raise ConfigError(f"custom transformation {name}: cannot set {bad[0]!r}; settable: {', '.join(CUSTOM_FIELDS)}")
    elif not callable(transformation):
        raise ConfigError(f"custom transformation {name}: expected a function or a mapping of Columns")
    _REGISTRY[name.upper()] = transformation


def registered() -> dict[str, Custom]:
    return {k.lower(): v for k, v in _REGISTRY.items()}


def import_modules(modules: Sequence[str]) -> None:
    """Import the modules that register custom transformations (named in the channel file)."""
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            raise ConfigError(f"transformation_modules: cannot import {m!r}: {e}") from e


def _oracle_type(t: TransformSpec, number_policy: str = "decimal"):
    try:
        dt = sqlglot.exp.DataType.build(t.column_type, dialect=OracleDdl)
    except (sqlglot.errors.ParseError, ValueError) as e:
        raise ConfigError(f"add_column {t.column}: {t.column_type!r} is not an Oracle type: {e}") from e
    return map_oracle_type(dt, number_policy)


def _check_value(t: TransformSpec, ctype: ColumnType) -> None:
    """An add_column value must fit its column, so no batch can fail (or NULL it) later."""
    v, st, spark_type = t.value, ctype.spark.upper(), ctype.spark
    declared = ctype.declared_number
    if declared:  # NUMBER(p[,s]) also bounds the digits before the point (p-s, a negative scale too)
        after = max(declared[1], 0)
        st = f"DECIMAL({ctype.integer_digits + after},{after})"
    where = f"add_column {t.column} ({t.column_type}): value {v!r}"
    if v is None:
        return
    if st in ("INT", "BIGINT") or st.startswith("DECIMAL") or st == "DOUBLE":
        try:
            if isinstance(v, bool):
                raise InvalidOperation
            d = Decimal(str(v))
        except InvalidOperation:
            raise ConfigError(f"{where} is not a number") from None
        if st == "INT" and not (d == d.to_integral_value() and -(2**31) <= d < 2**31):
            raise ConfigError(f"{where} is not an integer that fits {st}")
        if st == "BIGINT" and not (d == d.to_integral_value() and -(2**63) <= d < 2**63):
            raise ConfigError(f"{where} is not an integer that fits {st}")
        if st.startswith("DECIMAL"):
            p, sc = (int(x) for x in st[st.index("(") + 1:-1].split(","))
            if d.as_tuple().exponent < -sc and d != d.quantize(Decimal(1).scaleb(-sc)):
                raise ConfigError(f"{where} has more than {sc} digits after the point")
            if abs(d) >= Decimal(10) ** (p - sc):
                raise ConfigError(f"{where} has more than {p - sc} digits before the point")
    elif st == "STRING":
        if not isinstance(v, str):
            raise ConfigError(f"{where} is not a string")
        if ctype.max_length is not None and ctype.length(v) > ctype.max_length:
            raise ConfigError(f"{where} is longer than {ctype.max_length} {ctype.length_unit}")
    elif st.startswith("TIMESTAMP"):
        try:
            datetime.fromisoformat(str(v))
        except ValueError:
            raise ConfigError(f"{where} is not an ISO date or timestamp") from None
    else:
        raise ConfigError(f"{where}: a literal value of type {spark_type} is not supported; use an expression")


def check(t: TransformSpec, number_policy: str = "decimal") -> None:
    """Refuse a transformation that cannot run, when the channel is loaded."""
    if t.value_type not in VALUE_TYPES:
        raise ConfigError(f"{t.kind} on {t.rule}: value_type {t.value_type!r} is not one of {', '.join(VALUE_TYPES)}")
    if not isinstance(t.step_number, int) or isinstance(t.step_number, bool) or t.step_number < 0:
        raise ConfigError(f"{t.kind} on {t.rule}: step_number {t.step_number!r} is not a non-negative integer")
    if t.kind in ("rename_column", "delete_column") and t.value_type != "*":
        # The target structure is one for both images; a column renamed or deleted in one
        # image only would leave the other image with a column the target does not have.
        raise ConfigError(f"{t.kind} on {t.rule}: only value_type '*' (both images) is supported")
    if t.kind == "add_column":
        ctype = _oracle_type(t, number_policy)
        if t.expression is not None:
            parse_value(t.expression)
        else:
            _check_value(t, ctype)
    elif t.kind == "custom" and t.function.upper() not in _REGISTRY:
        raise ConfigError(
            f"custom transformation {t.function!r} is not registered "
            "(lakestreams.transforms.register in a module listed under transformation_modules)"
        )


def ordered(transformations: Sequence[TransformSpec]) -> list[TransformSpec]:
    order = {k: i for i, k in enumerate((*TRANSFORM_KINDS, "custom"))}
    return sorted(transformations, key=lambda t: (t.step_number, order[t.kind]))


def _images(t: TransformSpec) -> tuple[str, ...]:
    return {"NEW": ("new_values",), "OLD": ("old_values",), "*": ("old_values", "new_values")}[t.value_type]


def _map(image: str) -> Column:
    return F.expr(f"try_variant_get({image}, '$', 'map<string,variant>')")


def _as_variant(value: Column) -> Column:
    return F.variant_get(F.to_variant_object(F.struct(value.alias("v"))), "$.v", "variant")


def _value(t: TransformSpec, number_policy: str) -> Column:
    if t.expression is not None:
        return parse_value(t.expression).column()
    spark_type = _oracle_type(t, number_policy).spark
    return F.lit(t.value).cast(spark_type) if t.value is not None else F.lit(None).cast(spark_type)


def _declarative(df: DataFrame, t: TransformSpec, hit: Column, number_policy: str) -> DataFrame:
    owner, name = F.col("object_owner"), F.col("object_name")
    if t.kind == "rename_schema":
        return df.withColumn("object_owner", F.when(hit & (owner == t.owner), F.lit(t.to_owner)).otherwise(owner))
    on_table = hit & (owner == t.owner) & (name == t.table)
    if t.kind == "rename_table":
        return df.withColumn("_t_hit", on_table).withColumn(
            "object_owner", F.when(F.col("_t_hit"), F.lit(t.to_owner)).otherwise(owner)
        ).withColumn("object_name", F.when(F.col("_t_hit"), F.lit(t.to_table)).otherwise(name)).drop("_t_hit")
    for image in _images(t):
        m = _map(image)
        if t.kind == "delete_column":
            changed = F.map_filter(m, lambda k, v: k != F.lit(t.column))
        elif t.kind == "rename_column":
            clash = F.map_contains_key(m, F.lit(t.column)) & F.map_contains_key(m, F.lit(t.to_column))
            df = df.withColumn("_rule_error", F.coalesce(F.col("_rule_error"), F.when(on_table & clash, F.lit(
                f"rename_column {t.owner}.{t.table}.{t.column} to {t.to_column}: the image already has {t.to_column}"
            ))))
            has_from = F.map_contains_key(m, F.lit(t.column))
            changed = F.transform_keys(
                # pyspark calls the lambda right here, inside this iteration
                F.map_filter(m, lambda k, v: ~((k == F.lit(t.to_column)) & has_from)),  # noqa: B023
                lambda k, v: F.when(k == F.lit(t.column), F.lit(t.to_column)).otherwise(k),
            )
        else:  # add_column
            changed = F.map_concat(
                F.map_filter(m, lambda k, v: k != F.lit(t.column)), F.create_map(F.lit(t.column), _as_variant(_value(t, number_policy)))
            )
        df = df.withColumn(
            image, F.when(on_table & F.col(image).isNotNull(), F.to_variant_object(changed)).otherwise(F.col(image))
        )
    return df


def _custom(df: DataFrame, t: TransformSpec, hit: Column) -> DataFrame:
    fn = _REGISTRY.get(t.function.upper())
    if fn is None:
        raise RuleError(f"custom transformation {t.function!r} is not registered")
    if isinstance(fn, Mapping):
        for field_name, value in fn.items():
            df = df.withColumn(field_name, F.when(hit, value).otherwise(F.col(field_name)))
        return df
    # Each record carries an id through the function, so a record it drops or repeats is
    # caught (and sent to the error queue) instead of vanishing from the accounting.
    marked = df.withColumn("_t_hit", F.coalesce(hit, F.lit(False))).withColumn(
        "_t_id", F.sha2(F.to_json(F.struct(*[F.col(c) for c in df.columns])), 256)
    )
    picked = marked.where("_t_hit").drop("_t_hit")
    out = fn(picked)
    if out.schema != picked.schema:
        raise RuleError(
            f"custom transformation {t.function}: it must return the records with the same columns and types "
            "(including _t_id, which tracks each record)"
        )
    name = t.function
    lost = picked.join(out.select("_t_id"), "_t_id", "left_anti").withColumn(
        "_rule_error", F.coalesce(F.col("_rule_error"), F.lit(f"custom transformation {name} dropped the record"))
    )
    once = (
        out.withColumn("_t_n", F.count(F.lit(1)).over(Window.partitionBy("_t_id")))
        .withColumn("_t_first", F.row_number().over(Window.partitionBy("_t_id").orderBy("_t_id")) == 1)
        .where("_t_first")
        .withColumn("_rule_error", F.coalesce(F.col("_rule_error"), F.when(
            F.col("_t_n") > 1, F.concat(F.lit(f"custom transformation {name} returned the record "),
                                        F.col("_t_n").cast("string"), F.lit(" times")))))
        .drop("_t_n", "_t_first")
    )
    rest = marked.where("NOT _t_hit").drop("_t_hit")
    return rest.unionByName(lost).unionByName(once).drop("_t_id")


def apply_transformations(df: DataFrame, client) -> DataFrame:
    """Run the client's transformations on the row LCRs their rule kept."""
    rule_col = f"_rule_{client.streams_type}"
    for t in ordered(client.transformations):
        hit = F.col("_discard").isNull() & (F.col(rule_col) == F.lit(t.rule)) & is_row_lcr()
        df = _custom(df, t, hit) if t.kind == "custom" else _declarative(df, t, hit, client.number_policy)
    return df


def transform_table_def(table: TableDef, transformations: Sequence[TransformSpec], number_policy: str) -> TableDef:
    """The target structure after the transformations that reach a table's rows."""
    for t in ordered(transformations):
        if t.kind == "custom":
            continue
        if t.kind == "rename_schema":
            if table.owner == t.owner:
                table = dataclasses.replace(table, owner=t.to_owner)
            continue
        if (table.owner, table.name) != (t.owner, t.table):
            continue
        if t.kind == "rename_table":
            table = dataclasses.replace(table, owner=t.to_owner, name=t.to_table)
        elif t.kind == "delete_column":
            if t.column in table.key_columns and table.key_kind != "ALL COLUMNS":
                raise RuleError(f"delete_column {t.owner}.{t.table}.{t.column}: it is a key column ({table.key_kind})")
            cols = tuple(c for c in table.columns if c.name != t.column)
            keys = tuple(k for k in table.key_columns if k != t.column)
            table = dataclasses.replace(table, columns=cols, key_columns=keys)
        elif t.kind == "rename_column":
            if t.to_column in table.column_names:
                raise RuleError(f"rename_column {t.owner}.{t.table}.{t.column}: {t.to_column} exists already")
            cols = tuple(dataclasses.replace(c, name=t.to_column) if c.name == t.column else c for c in table.columns)
            keys = tuple(t.to_column if k == t.column else k for k in table.key_columns)
            table = dataclasses.replace(table, columns=cols, key_columns=keys)
        else:  # add_column
            if t.column in table.column_names:
                raise RuleError(f"add_column {t.owner}.{t.table}.{t.column}: the table has this column already")
            table = dataclasses.replace(
                table, columns=(*table.columns, ColumnDef(t.column, _oracle_type(t, number_policy)))
            )
    return table
