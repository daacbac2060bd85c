"""DML handlers: custom apply of a target table's changes of one operation, set-wise.

A handler is a function DataFrame → DataFrame registered under a name
(``register_dml_handler``) and set for a target table and operation in the channel file
(``dml_handlers``) or with ``Streams.set_dml_handler``. It gets the typed changes silver
derived for that table and operation (the change-table columns: ``_old``/``_new``
images, which columns each carries, the transaction, SCN and position) and returns the
changes to apply instead, as the apply process would EXECUTE a modified LCR:

- a change it returns with other values (or another ``_command_type``) is applied as
  returned, and conflict detection and update conflict handlers judge it as returned;
- a change it leaves out is consumed: the handler did what was needed, nothing is
  applied for it (counted in the ``handled`` bucket, with the handler's name);
- a change it returns with ``_error`` set fails its transaction into the error queue
  with that error, as a handler raising an exception does.

It may not return a change it was not given, nor one twice, nor other columns: that is
a broken handler, and the silver batch stops with the reason before writing the table.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakestreams.config import IDENTIFIER, DmlHandlerSpec
from lakestreams.errors import ConfigError

Handler = Callable[[DataFrame], DataFrame]
_HANDLERS: dict[str, Handler] = {}
#: What identifies a change: the handler must keep it.
IDENTITY = ["_source_database", "_transaction_id", "_position"]


def register_dml_handler(name: str, handler: Handler) -> None:
    """Register a DML handler under ``name`` (modules doing so are listed in the channel
    file's ``transformation_modules``)."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ConfigError(f"DML handler name {name!r} is not an identifier")
    if not callable(handler):
        raise ConfigError(f"DML handler {name}: expected a function DataFrame -> DataFrame")
    _HANDLERS[name.upper()] = handler


def check_handlers(specs: tuple[DmlHandlerSpec, ...]) -> None:
    """Every handler the channel sets is registered."""
    for s in specs:
        if s.handler.upper() not in _HANDLERS:
            raise ConfigError(f"the DML handler {s.handler!r} of {s.owner}.{s.table} {s.operation} is not registered "
                              "(silver.handlers.register_dml_handler, in a module of transformation_modules)")


def apply_dml_handlers(typed: DataFrame, specs: list[DmlHandlerSpec]) -> tuple[DataFrame, DataFrame | None]:
    """``typed`` changes of one target with its handlers applied, and the changes the
    handlers consumed (with ``_handler``), or None without handlers."""
    if not specs:
        return typed, None
    check_handlers(tuple(specs))
    ops = [s.operation for s in specs]
    out, consumed = [typed.where(~F.col("_command_type").isin(*ops))], []
    for s in specs:
        given = typed.where(F.col("_command_type") == s.operation)
        returned = _HANDLERS[s.handler.upper()](given)
        label = f"DML handler {s.handler} of {s.owner}.{s.table} {s.operation}"
        if returned.dtypes != given.dtypes:
            raise ConfigError(f"{label}: it must return the changes with the same columns and types")
        ids = given.select(*IDENTITY)
        # Checks over the handler's output (a Spark job each; the output stays in Spark).
        if returned.join(ids, IDENTITY, "left_anti").limit(1).count():
            raise ConfigError(f"{label}: it returned a change it was not given (a handler changes or consumes "
                              "the changes it gets)")
        if returned.groupBy(*IDENTITY).count().where("count > 1").limit(1).count():
            raise ConfigError(f"{label}: it returned a change more than once")
        out.append(returned)
        consumed.append(given.join(returned.select(*IDENTITY), IDENTITY, "left_anti")
                        .withColumn("_handler", F.lit(s.handler)))
    return reduce(DataFrame.unionByName, out), reduce(DataFrame.unionByName, consumed)
