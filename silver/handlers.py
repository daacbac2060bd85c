"""DML and error handlers: custom apply of a target table's changes of one operation, set-wise.

A handler is a function DataFrame → DataFrame registered under a name
(``register_dml_handler``), or SQL expressions in the rule-condition language
(``config.HandlerSql``), set for a target table and operation in the channel file
(``dml_handlers``) or with ``Streams.set_dml_handler``. It gets changes of that table and
operation (the change-table columns: ``_old``/``_new`` images, which columns each
carries, the transaction, SCN, position and ``_error``) and returns the changes to apply
instead, as the apply process would EXECUTE a modified LCR:

- a change it returns with other values (or another ``_command_type``) is applied as
  returned, and conflict detection and update conflict handlers judge it as returned;
- a change it leaves out is consumed: the handler did what was needed, nothing is
  applied for it (counted in the ``handled`` bucket, with the handler's name);
- a change it returns with ``_error`` set fails its transaction into the error queue
  with that error, as a handler raising an exception does.

A DML handler gets every change of its operation, when silver derives them. An error
handler gets only the changes that failed, with the error in ``_error``: in silver, a
value that does not convert; in the apply plan, a conflict no update conflict handler
resolved (other values), an UPDATE or DELETE that finds no row, a key already taken. An
error handler clears ``_error`` on a change it resolved; a change it returns again may
fail again, and then its transaction goes to the error queue (a handler is not asked
twice about one change).

It may not return a change it was not given, nor one twice, nor other columns: that is
a broken handler, and the silver batch (or the apply plan) stops with the reason before
writing anything.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakestreams.config import IDENTIFIER, DmlHandlerSpec, HandlerSql
from lakestreams.errors import ConfigError, RuleError
from silver.condition import parse_condition, parse_value
from silver.dictionary import TableDef

Handler = Callable[[DataFrame], DataFrame]
_HANDLERS: dict[str, Handler] = {}
#: What identifies a change (as derived in one silver batch): the handler must keep it.
IDENTITY = ["_source_database", "_transaction_id", "_position", "_silver_batch"]


def register_dml_handler(name: str, handler: Handler) -> None:
    """Register a DML or error handler under ``name`` (modules doing so are listed in the
    channel file's ``transformation_modules``)."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ConfigError(f"DML handler name {name!r} is not an identifier")
    if not callable(handler):
        raise ConfigError(f"DML handler {name}: expected a function DataFrame -> DataFrame")
    _HANDLERS[name.upper()] = handler


def _compiled(sql: HandlerSql, label: str) -> tuple:
    """The SQL handler's conditions and values, parsed and checked (no Spark needed)."""
    try:
        consume = None if sql.consume_when is None else parse_condition(sql.consume_when, variables=frozenset({"dml"}))
        raise_ = None if sql.raise_when is None else parse_condition(sql.raise_when, variables=frozenset({"dml"}))
        values = tuple((c, parse_value(text, variables=frozenset({"dml"}))) for c, text in sql.set)
    except RuleError as e:
        raise ConfigError(f"{label}: {e}") from None
    return consume, raise_, values


def check_handlers(specs: tuple[DmlHandlerSpec, ...]) -> None:
    """Every named handler the channel sets is registered; every SQL one parses."""
    for s in specs:
        if s.sql is not None:
            _compiled(s.sql, s.label)
        elif s.handler.upper() not in _HANDLERS:
            raise ConfigError(f"the {s.kind} {s.handler!r} of {s.owner}.{s.table} {s.operation} is not registered "
                              "(silver.handlers.register_dml_handler, in a module of transformation_modules)")


def _image_variant(image: str, columns: tuple[str, ...]) -> Column:
    """An image as the record carries it: a VARIANT object of the columns the change
    carries (a column it does not carry is absent, a NULL it carries is a JSON null)."""
    parts = [
        F.when(F.array_contains(F.col(f"{image}_present"), c), F.regexp_replace(
            F.to_json(F.struct(F.col(f"{image}.`{c}`").alias(c)), {"ignoreNullFields": "false"}), r"^\{|\}$", ""))
        for c in columns
    ]
    return F.parse_json(F.concat(F.lit("{"), F.concat_ws(",", *parts), F.lit("}")))


def _merged(columns: tuple[str, ...]) -> Column:
    """The full new image: a column's new value where the change carries one, else its old."""
    return F.struct(*[
        F.when(F.array_contains("_new_present", c), F.col(f"_new.`{c}`")).otherwise(F.col(f"_old.`{c}`")).alias(c)
        for c in columns
    ])


def sql_handler(spec: DmlHandlerSpec, table: TableDef) -> Handler:
    """The SQL handler as a DataFrame function over the target's changes."""
    consume, raise_, values = _compiled(spec.sql, spec.label)
    names = tuple(c.name for c in table.columns)
    types = {c.name: c.type.spark for c in table.columns}
    for c, _v in values:
        if c not in types:
            raise ConfigError(f"{spec.label}: sets column {c}, which {table.owner}.{table.name} does not have")
    record = {  # the record fields the rule-condition language reads
        "object_owner": F.lit(table.owner), "object_name": F.lit(table.name), "command_type": F.col("_command_type"),
        "source_database": F.col("_source_database"), "tag": F.col("_tag"),
        "old_values": _image_variant("_old", names), "new_values": _image_variant("_new", names),
    }

    def run(df: DataFrame) -> DataFrame:
        cols = df.columns
        x = df.withColumns(record)
        if consume is not None:
            x = x.where(~consume.column())
        raised = F.lit(False) if raise_ is None else raise_.column()
        why = F.col("_error") if spec.error_handler else F.lit(f"raised by {spec.label}: {spec.sql.raise_when}")
        # An error handler resolves what it does not raise: the change is applied as returned.
        x = x.withColumn("_error", F.when(raised, F.coalesce(why, F.lit(f"raised by {spec.label}")))
                         .otherwise(None if spec.error_handler else F.col("_error")).cast("string"))
        for c, v in values:
            typed = v.column().try_cast(types[c])
            x = x.withColumn("_error", F.coalesce("_error", F.when(
                typed.isNull() & v.column().isNotNull(), F.lit(f"{spec.label}: the value set for {c} does not convert to {types[c]}"))))
            x = x.withColumn("_new", F.col("_new").withField(f"`{c}`", typed)).withColumn(
                "_new_present", F.array_union("_new_present", F.array(F.lit(c))))
        cmd = spec.sql.command_type
        if cmd == "INSERT":  # the new image is the whole row: the old values fill what it lacks
            x = x.withColumn("_new", F.when(F.col("_command_type") == "INSERT", F.col("_new")).otherwise(_merged(names)))
            x = x.withColumn("_new_present", F.array_union("_new_present", "_old_present"))
        elif cmd == "UPDATE":  # an INSERT's key becomes the row it updates
            keyed = F.struct(*[F.col(f"_new.`{c}`").alias(c) if c in table.key_columns else F.lit(None).cast(types[c]).alias(c)
                               for c in names])
            x = x.withColumn("_old", F.when(F.col("_command_type") == "INSERT", keyed).otherwise(F.col("_old")))
            x = x.withColumn("_old_present", F.when(F.col("_command_type") == "INSERT", F.array(
                *[F.lit(k) for k in table.key_columns])).otherwise(F.col("_old_present")))
        elif cmd == "DELETE":  # the row it deletes: an INSERT's new values are its old ones
            x = x.withColumn("_old", F.when(F.col("_command_type") == "INSERT", F.col("_new")).otherwise(F.col("_old")))
            x = x.withColumn("_old_present", F.when(F.col("_command_type") == "INSERT", F.col("_new_present"))
                             .otherwise(F.col("_old_present")))
        if cmd is not None:
            x = x.withColumn("_command_type", F.lit(cmd))
        return x.select(*cols)

    return run


def _handler(spec: DmlHandlerSpec, table: TableDef) -> Handler:
    return sql_handler(spec, table) if spec.sql is not None else _HANDLERS[spec.handler.upper()]


def run_handler(spec: DmlHandlerSpec, table: TableDef, given: DataFrame) -> tuple[DataFrame, DataFrame]:
    """What ``spec`` returns for ``given`` (checked), and the changes it consumed (with
    ``_handler``: its name or ``SQL``)."""
    returned = _handler(spec, table)(given)
    if returned.dtypes != given.dtypes:
        raise ConfigError(f"{spec.label}: it must return the changes with the same columns and types")
    ids = given.select(*IDENTITY)
    # Checks over the handler's output (a Spark job each; the output stays in Spark).
    if returned.join(ids, IDENTITY, "left_anti").limit(1).count():
        raise ConfigError(f"{spec.label}: it returned a change it was not given (a handler changes or consumes "
                          "the changes it gets)")
    if returned.groupBy(*IDENTITY).count().where("count > 1").limit(1).count():
        raise ConfigError(f"{spec.label}: it returned a change more than once")
    consumed = given.join(returned.select(*IDENTITY), IDENTITY, "left_anti").withColumn(
        "_handler", F.lit(spec.handler or "SQL"))
    return returned, consumed


def handled_reason(spec: DmlHandlerSpec) -> str:
    return f"consumed by {spec.kind} {spec.handler or 'SQL'}"


def apply_dml_handlers(
    typed: DataFrame, specs: list[DmlHandlerSpec], table: TableDef,
) -> tuple[DataFrame, DataFrame | None]:
    """``typed`` changes of one target with its handlers applied, and the changes the
    handlers consumed (with ``_reason``), or None without handlers. Error handlers get
    the changes that did not type (``_error``)."""
    if not specs:
        return typed, None
    check_handlers(tuple(specs))
    out, consumed = [typed], []
    for s in specs:
        mine = F.col("_command_type") == s.operation
        if s.error_handler:
            mine = mine & F.col("_error").isNotNull()
        out[0] = out[0].where(~mine)
        returned, gone = run_handler(s, table, typed.where(mine))
        out.append(returned)
        consumed.append(gone.withColumn("_reason", F.lit(handled_reason(s))).drop("_handler"))
    return reduce(DataFrame.unionByName, out), reduce(DataFrame.unionByName, consumed)
