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

import sqlglot
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakestreams.config import IDENTIFIER, TRANSFORM_KINDS, TransformSpec
from lakestreams.errors import ConfigError, RuleError
from silver.dictionary import ColumnDef, TableDef
from silver.types import map_oracle_type

Custom = Callable[[DataFrame], DataFrame] | Mapping[str, Column]
_REGISTRY: dict[str, Custom] = {}
#: Record fields a custom mapping may set; bookkeeping columns (``_…``) stay ours.
CUSTOM_FIELDS = (
    "object_owner", "object_name", "command_type", "old_values", "new_values", "tag",
)


def register(name: str, transformation: Custom) -> None:
    """Register a custom transformation: a function DataFrame → DataFrame (same columns),
    or a mapping record field → Spark Column."""
    if not isinstance(name, str) or not IDENTIFIER.match(name):
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
        dt = sqlglot.exp.DataType.build(t.column_type, dialect="oracle")
    except (sqlglot.errors.ParseError, ValueError) as e:
        raise ConfigError(f"add_column {t.column}: {t.column_type!r} is not an Oracle type: {e}") from e
    return map_oracle_type(dt, number_policy)


def check(t: TransformSpec) -> None:
    """Refuse a transformation that cannot run, when the channel is loaded."""
    if t.kind == "add_column":
        _oracle_type(t)
        if t.expression is not None:
            from silver.condition import parse_value

            parse_value(t.expression)
    elif t.kind == "custom" and t.function.upper() not in _REGISTRY:
        raise ConfigError(
            f"custom transformation {t.function!r} is not registered "
            "(lakestreams.transforms.register in a module listed under transformation_modules)"
        )


def ordered(transformations: Sequence[TransformSpec]) -> list[TransformSpec]:
    order = {k: i for i, k in enumerate((*TRANSFORM_KINDS, "custom"))}
    return sorted(transformations, key=lambda t: (t.step_number, order[t.kind]))


def _is_row() -> Column:
    return F.col("ddl_text").isNull() & ~F.coalesce(F.col("command_type").isin("COMMIT", "ROLLBACK"), F.lit(False))


def _images(t: TransformSpec) -> tuple[str, ...]:
    return {"NEW": ("new_values",), "OLD": ("old_values",), "*": ("old_values", "new_values")}[t.value_type]


def _map(image: str) -> Column:
    return F.expr(f"try_variant_get({image}, '$', 'map<string,variant>')")


def _as_variant(value: Column) -> Column:
    return F.variant_get(F.to_variant_object(F.struct(value.alias("v"))), "$.v", "variant")


def _value(t: TransformSpec) -> Column:
    if t.expression is not None:
        from silver.condition import parse_value

        return parse_value(t.expression).column()
    spark_type = _oracle_type(t).spark
    return F.lit(t.value).cast(spark_type) if t.value is not None else F.lit(None).cast(spark_type)


def _declarative(df: DataFrame, t: TransformSpec, hit: Column) -> DataFrame:
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
                F.map_filter(m, lambda k, v: k != F.lit(t.column)), F.create_map(F.lit(t.column), _as_variant(_value(t)))
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
    marked = df.withColumn("_t_hit", F.coalesce(hit, F.lit(False)))
    picked = marked.where("_t_hit").drop("_t_hit")
    out = fn(picked)
    if out.schema != picked.schema:
        raise RuleError(
            f"custom transformation {t.function}: it must return the records with the same columns and types"
        )
    return marked.where("NOT _t_hit").drop("_t_hit").unionByName(out)


def apply_transformations(df: DataFrame, client) -> DataFrame:
    """Run the client's transformations on the row LCRs their rule kept."""
    rule_col = f"_rule_{client.streams_type}"
    for t in ordered(client.transformations):
        hit = F.col("_discard").isNull() & (F.col(rule_col) == F.lit(t.rule)) & _is_row()
        df = _custom(df, t, hit) if t.kind == "custom" else _declarative(df, t, hit)
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
            cols = tuple(c for c in table.columns if c.name != t.column)
            table = dataclasses.replace(table, columns=(*cols, ColumnDef(t.column, _oracle_type(t, number_policy))))
    return table
