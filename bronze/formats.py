"""Capture formats other than the native one, mapped onto the native change record.

A landing folder names its format in the channel file. Each line is parsed once
(``_src``); for a Debezium or GoldenGate folder these functions rebuild it as a native
change record (``_v``) with Spark expressions, so the native checks of
:mod:`bronze.records` judge every format alike, and ``raw`` keeps the line as it came.
They also say, per record, how its transaction becomes complete (``_txn_mode``) and
why a line is not a change record of its format (``_format_reason``, NULL when it is).

Debezium (the Oracle connector; with or without the ``schema``/``payload`` wrapper):

- change events ``op`` c/u/d/t → INSERT/UPDATE/DELETE/TRUNCATE; ``before`` → old values,
  ``after`` → new values; ``source.schema``/``table``/``scn``/``commit_scn``/``ts_ms``;
  the transaction is ``transaction.id`` (else ``source.txId``) and the position
  ``transaction.total_order`` (the connector's ``provide.transaction.metadata``);
- transaction events: ``END`` → a COMMIT record carrying ``event_count``: the
  transaction is complete once that many of its events have landed; ``BEGIN`` → a BEGIN
  control record (counted, changes nothing);
- schema-change events (``ddl``) → DDL records, each its own transaction;
- snapshot reads (``op`` r) → the rows of one snapshot transaction per snapshot SCN
  (``SNAPSHOT:<scn>``), which instantiates its tables there; it is complete when the
  event marked ``source.snapshot = last`` has landed;
- the placeholder Debezium writes for a value it could not read
  (``__debezium_unavailable_value``) makes the column absent, never that text;
- column values in Debezium's encodings are decoded by the logical type the envelope's
  ``schema`` names: ``Decimal`` and ``VariableScaleDecimal`` (base64 two's complement
  with a scale; the default ``decimal.handling.mode=precise``) become exact numbers,
  ``Date``/``Timestamp``/``MicroTimestamp``/``NanoTimestamp`` counts from the epoch
  become wall-clock text, ``bytes`` (RAW, BLOB) become hex, and the unavailable
  placeholder in base64 or hex is an absent column as well; a variable-scale decimal is
  also known by its shape, without the wrapper. Without the wrapper the other encodings
  cannot be told from plain values: a number or time left encoded does not convert to
  its column in silver, which says so.

GoldenGate JSON (the Big Data JSON formatter, operation format):

- ``table`` (``SCHEMA.TABLE`` or ``CATALOG.SCHEMA.TABLE``), ``op_type`` I/U/D/T,
  ``op_ts`` (the commit time, UTC), ``pos`` (the trail position, ordering the
  operations), ``before``/``after``; a column whose ``<COL>_isMissing`` flag is true
  is absent, not NULL, and the flags themselves are dropped;
- the commit SCN is the ``csn`` meta column and the transaction the ``xid`` one (add
  ``${csn}`` and ``${xid}`` to the formatter's ``metaColumnsTemplate``; without ``xid``
  the CSN names the transaction); every transaction lies whole in one file.

The source database is not in either format: the landing folder's ``source_database``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

#: Formats a landing folder may declare.
FORMATS = ("native", "debezium", "goldengate")

DEBEZIUM_OPS = {"c": "INSERT", "u": "UPDATE", "d": "DELETE", "r": "INSERT", "t": "TRUNCATE"}
GOLDENGATE_OPS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "T": "TRUNCATE"}
DEBEZIUM_UNAVAILABLE = "__debezium_unavailable_value"
#: The placeholder as a BLOB or RAW column carries it (``binary.handling.mode`` bytes
#: (base64) or hex), so an unchanged LOB is absent too, never its placeholder's bytes.
DEBEZIUM_UNAVAILABLE_FORMS = (DEBEZIUM_UNAVAILABLE, base64.b64encode(DEBEZIUM_UNAVAILABLE.encode()).decode(),
                              DEBEZIUM_UNAVAILABLE.encode().hex(), DEBEZIUM_UNAVAILABLE.encode().hex().upper())
#: ``_txn_mode`` of the rows of a snapshot transaction; the last one closes it.
SNAPSHOT_MODES = ("snapshot", "snapshot_end")
#: Formats that mark snapshot reads per record (in any folder, not only ``snapshot: true`` ones).
SNAPSHOT_MARKING_FORMATS = ("debezium",)

_POSITION_SPACE = 1 << 62


def _kind(v: Column) -> Column:
    return F.schema_of_variant(v)


def _is_object(v: Column) -> Column:
    return F.coalesce(_kind(v).startswith("OBJECT"), F.lit(False))


def _has(v: Column, path: str) -> Column:
    """The field is there and not JSON null."""
    k = _kind(F.try_variant_get(v, path, "variant"))
    return k.isNotNull() & (k != F.lit("VOID"))


def _str(v: Column, path: str) -> Column:
    return F.try_variant_get(v, path, "string")


def _number(v: Column, path: str) -> Column:
    """An integer written as a JSON number or a string of digits (Debezium writes SCNs as strings)."""
    s = F.regexp_replace(F.trim(_str(v, path)), r"^0+(?=[0-9])", "")  # GoldenGate pads pos to 20 digits
    return F.when(s.rlike(r"^[0-9]{1,19}$"), s.try_cast("bigint"))


def _iso_millis(v: Column, path: str) -> Column:
    """Epoch milliseconds → an ISO-8601 timestamp with its offset (exact in any session time zone)."""
    ms = _number(v, path)
    return F.date_format(F.timestamp_millis(ms), "yyyy-MM-dd'T'HH:mm:ss.SSSXXX")


def _image(v: Column, keep: Callable[[Column, Column, Column], Column],
           value: Callable[[Column, Column], Column] | None = None) -> Column:
    """A row image (JSON object) with only the columns ``keep(map, name, value)`` holds true
    for, each value as ``value(name, value)`` gives it; NULL when the image is absent, JSON
    null or not an object."""
    m = F.try_variant_get(v, "$", "map<string,variant>")
    kept = F.map_filter(m, lambda k, x: keep(m, k, x))
    if value is not None:
        kept = F.transform_values(kept, value)
    return F.when(_is_object(v), F.to_variant_object(kept))


#: A Debezium envelope's ``schema.fields``: per row image, each column's Connect type,
#: logical type name and parameters (the ``scale`` of a fixed-scale decimal).
_ENVELOPE_FIELDS = ("array<struct<field:string,fields:array<struct<field:string,type:string,name:string,"
                    "parameters:map<string,string>>>>>")
DEBEZIUM_DECIMAL = "org.apache.kafka.connect.data.Decimal"
DEBEZIUM_VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
#: Debezium's temporal logical types that count from the epoch (Oracle DATE and TIMESTAMP
#: columns, by ``time.precision.mode``): microseconds per unit of their integer; a
#: nanosecond count is cut to microseconds, Spark's precision.
DEBEZIUM_EPOCH_UNITS = {
    "io.debezium.time.Date": 86_400_000_000, "org.apache.kafka.connect.data.Date": 86_400_000_000,
    "io.debezium.time.Timestamp": 1000, "org.apache.kafka.connect.data.Timestamp": 1000,
    "io.debezium.time.MicroTimestamp": 1,
}
DEBEZIUM_NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
_DAY_MICROS = 86_400_000_000
#: Years 0001 to 9999 in microseconds from the epoch: a count outside is not a time
#: Oracle holds, and is left as it came (it would overflow a timestamp).
_MICROS = (-62_135_596_800_000_000, 253_402_300_799_999_999)


def _let(value: Column, body: Callable[[Column], Column]) -> Column:
    """``body(value)`` with ``value`` computed once: bound to a lambda variable, which the
    optimizer does not copy into each of its uses (as it may a column expression)."""
    return F.element_at(F.transform(F.array(value), body), 1)


def _unscaled(b64: Column) -> Column:
    """A Connect decimal's unscaled value (base64 of a big-endian two's complement integer)
    as DECIMAL(38,0); NULL when it is not base64 or needs more than 38 digits."""
    def from_hex(h: Column) -> Column:
        n = (F.length(h) / 2).cast("int")

        def byte(i: Column) -> Column:
            return F.conv(F.substring(h, i * 2 + 1, F.lit(2)), 16, 10).cast("int")

        # A negative value v (first byte's high bit set) is read as -v = ~v + 1: the
        # complement of each byte, plus one at the last. No partial value is then larger
        # than the whole, so only a value beyond 38 digits overflows (to NULL).
        negative = byte(F.lit(0)) >= 128

        def digit(i: Column) -> Column:
            return F.when(negative, 255 - byte(i) + F.when(i == n - 1, 1).otherwise(0)).otherwise(byte(i))

        magnitude = F.aggregate(
            F.sequence(F.lit(1), F.greatest(n - 1, F.lit(1))), digit(F.lit(0)).cast("decimal(38,0)"),
            lambda acc, i: F.when(i < n, F.try_add(F.try_multiply(acc, F.lit(256)), digit(i)).cast("decimal(38,0)"))
            .otherwise(acc))
        # 0 - m, not -m: Spark negates a decimal at 34 significant digits.
        return F.when(n >= 1, F.when(negative, F.try_subtract(F.lit(0), magnitude).cast("decimal(38,0)"))
                      .otherwise(magnitude))
    return _let(F.hex(F.try_to_binary(b64, F.lit("base64"))), from_hex)


#: Oracle NUMBER's scale range: a scale outside it is not a value Debezium wrote.
_SCALES = (-84, 127)


def _decimal(b64: Column, scale: Column) -> Column:
    """The number a Connect decimal holds (unscaled value, scale) as an exact JSON number;
    NULL when it cannot be read (or its scale is outside Oracle's range)."""
    def text(u: Column) -> Column:
        def digits_text(digits: Column) -> Column:
            padded = F.lpad(digits, F.greatest(F.length(digits), scale + 1), "0")
            cut = F.length(padded) - scale
            return (F.when(scale > 0, F.concat(F.substring(padded, F.lit(1), cut), F.lit("."),
                                               F.substring(padded, cut + 1, scale)))
                    .otherwise(F.concat(digits, F.repeat(F.lit("0"), -scale))))
        sign = F.when(u < 0, F.lit("-")).otherwise(F.lit(""))
        # The digits from the text, not abs(u): Spark's abs rounds a decimal at 34 digits.
        return (F.when(u == 0, F.try_parse_json(F.lit("0")))
                .when(u.isNotNull(), F.try_parse_json(F.concat(sign, _let(F.replace(u.cast("string"), F.lit("-"), F.lit("")), digits_text)))))
    return F.when(scale.between(*_SCALES), _let(_unscaled(b64), text))


def _wall_clock(micros: Column) -> Column:
    """Microseconds since the epoch as wall-clock text (``yyyy-MM-ddTHH:mm:ss[.ffffff]``),
    in any session time zone: Debezium counts a zoneless DATE or TIMESTAMP as if UTC."""
    def text(m: Column) -> Column:
        days = F.floor(m.cast("decimal(20,0)") / F.lit(_DAY_MICROS)).cast("int")
        rest = (m.cast("decimal(20,0)") - days.cast("decimal(20,0)") * F.lit(_DAY_MICROS)) / F.lit(1_000_000)
        ts = F.lit("1970-01-01 00:00:00").cast("timestamp_ntz") + F.make_dt_interval(
            days=days, secs=rest.cast("decimal(18,6)"))
        return F.when(m.between(*_MICROS), F.replace(ts.cast("string"), F.lit(" "), F.lit("T")))
    return _let(micros, text)


def _json_text(text: Column) -> Column:
    """A string as a JSON string value (VARIANT)."""
    return F.try_variant_get(F.try_parse_json(F.to_json(F.array(text))), "$[0]", "variant")


def _debezium_fields(envelope: Column, image: str) -> Column:
    """The columns of row image ``image`` (before/after) as the envelope's schema fields
    (``_ENVELOPE_FIELDS``) describe them; NULL without the schema wrapper."""
    return F.try_element_at(F.filter(envelope, lambda f: f["field"] == image), F.lit(1))["fields"]


def _debezium_value(fields: Column) -> Callable[[Column, Column], Column]:
    """Column name, Debezium value → the value as a native record holds it, by the column's
    logical type in ``fields``: decimals as exact numbers, DATE and TIMESTAMP as wall-clock
    text, Connect bytes (RAW, BLOB) as hex. A variable-scale decimal is known by its shape
    (``scale`` and ``value`` only) as well, so it is read with or without the schema
    wrapper. Anything else, and a value that cannot be read, stays as it came: silver then
    says it does not convert to its column. Each decoding appears once in the expression."""
    def value(k: Column, x: Column) -> Column:
        def decoded(field: Column) -> Column:
            name, kind = field["name"], field["type"]
            text, whole = F.try_variant_get(x, "$", "string"), F.try_variant_get(x, "$", "bigint")
            vs_scale, vs_value = F.try_variant_get(x, "$.scale", "int"), F.try_variant_get(x, "$.value", "string")
            variable = F.coalesce(name == DEBEZIUM_VARIABLE_DECIMAL, F.lit(False)) | (
                _is_object(x) & vs_scale.isNotNull() & vs_value.isNotNull()
                & (F.size(F.try_variant_get(x, "$", "map<string,variant>")) == 2))
            # Base64 only in a JSON string (``decimal.format=NUMERIC`` writes numbers).
            is_text = F.coalesce(_kind(x).startswith("STRING"), F.lit(False))
            fixed = (name == DEBEZIUM_DECIMAL) & is_text
            b64 = F.when(variable, vs_value).when(fixed, text)
            scale = F.when(variable, vs_scale).when(fixed, field["parameters"]["scale"].try_cast("int"))
            unit = _case(name, {k: str(v) for k, v in DEBEZIUM_EPOCH_UNITS.items()}).cast("bigint")
            micros = F.when(unit.isNotNull(), F.try_multiply(whole, unit)).when(
                name == DEBEZIUM_NANO_TIMESTAMP, F.floor(whole.cast("decimal(20,0)") / F.lit(1000)).cast("bigint"))
            return F.coalesce(
                F.when(b64.isNotNull(), _decimal(b64, scale)),
                F.when(micros.isNotNull(), _json_text(_wall_clock(micros))),
                F.when(name.isNull() & (kind == "bytes") & is_text,
                       _json_text(F.hex(F.try_to_binary(text, F.lit("base64"))))),
                x,
            )
        return _let(F.try_element_at(F.filter(fields, lambda f: f["field"] == k), F.lit(1)), decoded)
    return value


def _native(**fields: Column | None) -> Column:
    """A native change record as a VARIANT object (absent fields are JSON null)."""
    types = {"old_values": "variant", "new_values": "variant", "scn": "bigint", "commit_scn": "bigint",
             "position": "bigint", "event_count": "bigint"}
    parts = []
    for name, col in fields.items():
        value = col if col is not None else F.lit(None)
        parts += [F.lit(name), value.cast(types.get(name, "string"))]
    return F.to_variant_object(F.named_struct(*parts))


def first_reason(checks: list[tuple[Column, str | Column]]) -> Column:
    """The reason of the first check that holds, in order; NULL when none does."""
    out: Column | None = None
    for cond, reason in reversed(checks):
        value = reason if isinstance(reason, Column) else F.lit(reason)
        out = F.when(cond, value).otherwise(out) if out is not None else F.when(cond, value)
    return out if out is not None else F.lit(None).cast("string")


def _case(value: Column, mapping: dict[str, str]) -> Column:
    out = None
    for k, v in mapping.items():
        out = F.when(value == k, v) if out is None else out.when(value == k, v)
    return out


def debezium(lines: DataFrame, source_database: str) -> DataFrame:
    """Debezium events (``_src``) → native records (``_v``), ``_txn_mode``, ``_format_reason``."""
    src = F.col("_src")
    wrapped = _is_object(src) & _has(src, "$.schema") & F.coalesce(_has(src, "$.payload"), F.lit(False))
    e = F.col("_e")
    op, status = _str(e, "$.op"), _str(e, "$.status")
    is_tx = _has(e, "$.status")
    is_ddl = ~is_tx & _has(e, "$.ddl")
    is_dml = ~is_tx & ~is_ddl & _has(e, "$.op")
    is_read = is_dml & (op == "r")
    scn = _number(e, "$.source.scn")
    src_commit = _number(e, "$.source.commit_scn")
    before, after = F.try_variant_get(e, "$.before", "variant"), F.try_variant_get(e, "$.after", "variant")

    def readable(_m: Column, _k: Column, x: Column) -> Column:
        return F.coalesce(~F.try_variant_get(x, "$", "string").isin(*DEBEZIUM_UNAVAILABLE_FORMS), F.lit(True))

    snapshot_position = F.pmod(
        F.xxhash64(_str(e, "$.source.schema"), _str(e, "$.source.table"), F.to_json(after)), F.lit(_POSITION_SPACE))
    ddl_command = F.coalesce(
        _case(F.upper(_str(e, "$.tableChanges[0].type")), {"CREATE": "CREATE TABLE", "ALTER": "ALTER TABLE",
                                                             "DROP": "DROP TABLE"}),
        F.upper(F.regexp_extract(_str(e, "$.ddl"), r"^\s*([A-Za-z]+(\s+[A-Za-z]+)?)", 1)),
    )
    record = (
        F.when(is_tx, _native(
            source_database=F.lit(source_database),
            command_type=F.when(status == "END", F.lit("COMMIT")).otherwise(status),
            transaction_id=_str(e, "$.id"),
            commit_time=_iso_millis(e, "$.ts_ms"),
            event_count=F.when(status == "END", _number(e, "$.event_count")),
        ))
        .when(is_ddl, _native(
            source_database=F.lit(source_database),
            command_type=ddl_command,
            object_owner=F.coalesce(_str(e, "$.source.schema"), _str(e, "$.schemaName")),
            object_name=_str(e, "$.source.table"),
            ddl_text=_str(e, "$.ddl"),
            # A DDL statement commits on its own: its own transaction, whole in its file.
            transaction_id=F.concat(F.lit("DDL:"), scn.cast("string")),
            scn=scn,
            commit_scn=F.coalesce(src_commit, scn),
            position=F.lit(1),
            commit_time=_iso_millis(e, "$.source.ts_ms"),
        ))
        .when(is_dml, _native(
            source_database=F.lit(source_database),
            command_type=_case(op, DEBEZIUM_OPS),
            object_owner=_str(e, "$.source.schema"),
            object_name=_str(e, "$.source.table"),
            old_values=F.when(op.isin("u", "d"), _let(_debezium_fields(F.col("_schema"), "before"), lambda fields: _image(
                before, readable, _debezium_value(fields)))),
            new_values=F.when(op.isin("c", "u", "r"), _let(_debezium_fields(F.col("_schema"), "after"), lambda fields: _image(
                after, readable, _debezium_value(fields)))),
            transaction_id=F.when(is_read, F.concat(F.lit("SNAPSHOT:"), scn.cast("string"))).otherwise(
                F.coalesce(_str(e, "$.transaction.id"), _str(e, "$.source.txId"))),
            scn=scn,
            commit_scn=F.when(is_read, scn).otherwise(src_commit),
            position=F.when(is_read, snapshot_position).otherwise(_number(e, "$.transaction.total_order")),
            commit_time=_iso_millis(e, "$.source.ts_ms"),
        ))
    )
    mode = (
        F.when(is_ddl, F.lit("whole_file"))
        .when(is_read & (_str(e, "$.source.snapshot") == "last"), F.lit("snapshot_end"))
        .when(is_read, F.lit("snapshot"))
        .otherwise(F.col("_txn_mode"))
    )
    reason = first_reason([
        (_kind(src) == "VOID", "a Kafka tombstone (JSON null), not a change event: set tombstones.on.delete=false"),
        (~(is_tx | is_ddl | is_dml), "not a Debezium event: no op, ddl or status field"),
        (is_tx & ~status.isin("BEGIN", "END"),
         F.concat(F.lit("Debezium transaction event with status '"), status, F.lit("' (BEGIN or END expected)"))),
        (is_tx & ~_has(e, "$.id"), "Debezium transaction event without id"),
        (is_tx & (status == "END") & _number(e, "$.event_count").isNull(),
         "Debezium END event without a numeric event_count"),
        (is_tx & _has(e, "$.ts_ms") & _number(e, "$.ts_ms").isNull(), "Debezium ts_ms is not a number"),
        (is_dml & ~F.coalesce(op.isin(*DEBEZIUM_OPS), F.lit(False)),
         F.concat(F.lit("Debezium op '"), F.coalesce(op, F.lit("?")), F.lit("' is not one of c, u, d, r, t"))),
        ((is_dml | is_ddl) & ~_has(e, "$.source"), "Debezium event without a source block"),
        ((is_dml | is_ddl) & scn.isNull(), "Debezium source.scn is missing or not a number"),
        ((is_dml | is_ddl) & _has(e, "$.source.commit_scn") & src_commit.isNull(),
         "Debezium source.commit_scn is not a number"),
        (is_dml & ~is_read & src_commit.isNull(),
         "Debezium change event without source.commit_scn (the Oracle connector sets it)"),
        ((is_dml | is_ddl) & _number(e, "$.source.ts_ms").isNull(), "Debezium source.ts_ms is missing or not a number"),
        (is_dml & ~is_read & ~_has(e, "$.transaction.total_order"),
         "Debezium change event without transaction.total_order: enable provide.transaction.metadata on the "
         "connector (it orders the changes of a transaction and completes it)"),
        (is_dml & ~is_read & _number(e, "$.transaction.total_order").isNull(),
         "Debezium transaction.total_order is not a number"),
        (is_dml & _has(e, "$.before") & ~_is_object(before), "Debezium before is not a JSON object"),
        (is_dml & _has(e, "$.after") & ~_is_object(after), "Debezium after is not a JSON object"),
        (is_ddl & ~_kind(F.try_variant_get(e, "$.ddl", "variant")).startswith("STRING"), "Debezium ddl is not a string"),
    ])
    return (
        lines.withColumns({"_e": F.when(wrapped, F.try_variant_get(src, "$.payload", "variant")).otherwise(src),
                           # The schema's fields, read once per event for both row images.
                           "_schema": F.try_variant_get(src, "$.schema.fields", _ENVELOPE_FIELDS)})
        .withColumns({"_v": F.when(_is_object(e), record), "_txn_mode": mode, "_format_reason": reason})
        .drop("_e", "_schema")
    )


def goldengate(lines: DataFrame, source_database: str) -> DataFrame:
    """GoldenGate JSON operations (``_src``) → native records (``_v``), ``_format_reason``."""
    e = F.col("_src")
    table = _str(e, "$.table")
    parts = F.split(table, r"\.")
    op = _str(e, "$.op_type")
    csn = _number(e, "$.csn")
    before, after = F.try_variant_get(e, "$.before", "variant"), F.try_variant_get(e, "$.after", "variant")

    def present(m: Column, k: Column, _x: Column) -> Column:
        flag = F.try_variant_get(F.try_element_at(m, F.concat(k, F.lit("_isMissing"))), "$", "boolean")
        return ~k.endswith("_isMissing") & ~F.coalesce(flag, F.lit(False))

    record = _native(
        source_database=F.lit(source_database),
        command_type=_case(op, GOLDENGATE_OPS),
        object_owner=F.try_element_at(parts, F.lit(-2)),
        object_name=F.try_element_at(parts, F.lit(-1)),
        old_values=F.when(op.isin("U", "D"), _image(before, present)),
        new_values=F.when(op.isin("I", "U"), _image(after, present)),
        transaction_id=F.coalesce(_str(e, "$.xid"), F.concat(F.lit("CSN:"), csn.cast("string"))),
        scn=csn,
        commit_scn=csn,
        position=_number(e, "$.pos"),
        commit_time=_str(e, "$.op_ts"),
    )
    reason = first_reason([
        (~_has(e, "$.op_type") & ~_has(e, "$.table"), "not a GoldenGate JSON operation: no table or op_type field"),
        (~F.coalesce(op.isin(*GOLDENGATE_OPS), F.lit(False)),
         F.concat(F.lit("GoldenGate op_type '"), F.coalesce(op, F.lit("?")), F.lit("' is not one of I, U, D, T"))),
        (F.coalesce(F.size(parts) < 2, F.lit(True)),
         F.concat(F.lit("GoldenGate table '"), F.coalesce(table, F.lit("")), F.lit("' is not SCHEMA.TABLE"))),
        (~_has(e, "$.csn"), "GoldenGate operation without csn: add ${csn} (and ${xid}) to the JSON formatter's "
                            "metaColumnsTemplate"),
        (csn.isNull(), "GoldenGate csn is not a number"),
        (~_has(e, "$.pos"), "GoldenGate operation without pos (the trail position orders a transaction's operations)"),
        (_number(e, "$.pos").isNull(), "GoldenGate pos is not a number that fits 64 bits"),
        (~_has(e, "$.op_ts"), "GoldenGate operation without op_ts"),
        (_has(e, "$.before") & ~_is_object(before), "GoldenGate before is not a JSON object"),
        (_has(e, "$.after") & ~_is_object(after), "GoldenGate after is not a JSON object"),
    ])
    return lines.withColumns({"_v": F.when(_is_object(e), record), "_format_reason": reason})


CONVERTERS: dict[str, Callable[[DataFrame, str], DataFrame]] = {"debezium": debezium, "goldengate": goldengate}
