"""The one Oracle → Spark type table, and the conversion of VARIANT values to it.

| Oracle type                                   | Spark type                  | notes                                   |
|-----------------------------------------------|-----------------------------|-----------------------------------------|
| NUMBER(p) / NUMBER(p,0), p ≤ 9                | INT                         | more than p digits is an error          |
| NUMBER(p) / NUMBER(p,0), 10 ≤ p ≤ 18          | BIGINT                      | more than p digits is an error          |
| NUMBER(p) / NUMBER(p,0), p > 18               | DECIMAL(p,0)                |                                         |
| NUMBER(p,s), s < 0                            | as NUMBER(p-s): INT, BIGINT, DECIMAL | rounded to 10^-s; p-s digits   |
| NUMBER(p,s), s > 0                            | DECIMAL(p,s)                | s > p: DECIMAL(38,s)                    |
| NUMBER, NUMBER(*), NUMERIC, DECIMAL, DEC      | policy `number_without_precision`: `decimal` → DECIMAL(38,10) (default), `double` → DOUBLE, `string` → STRING |
| INTEGER, INT, SMALLINT                        | DECIMAL(38,0)               | Oracle's NUMBER(38)                      |
| FLOAT, FLOAT(n), BINARY_FLOAT, BINARY_DOUBLE, REAL | DOUBLE              |                                         |
| VARCHAR2(n), NVARCHAR2(n), VARCHAR(n), CHAR(n), NCHAR(n) | STRING           | longer than n is an error; '' is NULL; CHAR without n is CHAR(1) |
| CLOB, NCLOB, LONG                             | STRING                      | '' is NULL                               |
| DATE                                          | TIMESTAMP_NTZ               | an Oracle DATE carries a time of day    |
| TIMESTAMP(n)                                  | TIMESTAMP_NTZ               |                                         |
| TIMESTAMP(n) WITH [LOCAL] TIME ZONE           | TIMESTAMP                   | stored in UTC                           |
| RAW(n), LONG RAW, BLOB                        | BINARY                      | value is a hex string                   |
| ROWID, UROWID, INTERVAL …, XMLTYPE            | STRING                      |                                         |
| JSON                                          | VARIANT                     |                                         |

A character column's length counts bytes of UTF-8 (Oracle's default BYTE semantics, an
AL32UTF8 database), or characters for ``VARCHAR2(n CHAR)``, ``NCHAR`` and ``NVARCHAR2``.
A value that does not fit its column is an error (never a silent NULL): the
conversion uses ``try_variant_get`` and reports where the input was not NULL but the
result is, independent of ``spark.sql.ansi.enabled`` (which dbt switches off).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from lakestreams.errors import DdlError

NUMBER_POLICY_TYPES = {"decimal": "DECIMAL(38,10)", "double": "DOUBLE", "string": "STRING"}
CHARACTER_TYPES = {"VARCHAR", "NVARCHAR", "CHAR", "NCHAR", "TEXT", "VARCHAR2", "NVARCHAR2"}
#: A NUMBER type with its precision (and scale), as ``ColumnType.oracle`` writes it.
DECLARED_NUMBER = re.compile(r"(?:NUMBER|NUMERIC|DEC(?:IMAL)?)\s*\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\)", re.I)


@dataclass(frozen=True)
class ColumnType:
    """A column's Oracle type, its Spark type and its character limit (if any)."""

    oracle: str
    spark: str
    max_length: int | None = None
    empty_is_null: bool = False
    hex_binary: bool = False

    @property
    def declared_number(self) -> tuple[int, int] | None:
        """NUMBER(p[,s]) as Oracle states it: (p, s); None without a stated precision."""
        m = DECLARED_NUMBER.match(self.oracle)
        return (int(m[1]), int(m[2] or 0)) if m else None

    @property
    def length_unit(self) -> str:
        """What a character column's length counts: "characters" for NCHAR, NVARCHAR2 and
        ``(n CHAR)``; else "bytes" (Oracle's default semantics; UTF-8, as AL32UTF8 stores it).

        >>> [ColumnType(o, "STRING", 9).length_unit for o in ("VARCHAR2(9)", "VARCHAR2(9 CHAR)", "NCHAR(9)", "CHAR(9)")]
        ['bytes', 'characters', 'characters', 'bytes']
        """
        o = self.oracle.upper().replace(" ", "")
        return "characters" if o.startswith("N") or o.endswith("CHAR)") else "bytes"

    def length(self, text: str) -> int:
        """``text``'s length as the column counts it (``length_unit``)."""
        return len(text) if self.length_unit == "characters" else len(text.encode("utf-8"))

    @property
    def blank_padded(self) -> bool:
        """CHAR(n) and NCHAR(n): Oracle pads a shorter value with blanks to the length.

        >>> [ColumnType(o, "STRING", 3).blank_padded for o in ("CHAR(3)", "NCHAR(3)", "VARCHAR2(3)", "NVARCHAR2(3)")]
        [True, True, False, False]
        """
        return self.oracle.upper().startswith(("CHAR", "NCHAR")) and self.max_length is not None

    def padded(self, text: str) -> str:
        """``text`` as a blank-padded column stores it (as it is for other columns)."""
        return text + " " * (self.max_length - self.length(text)) if self.blank_padded else text

    @property
    def integer_digits(self) -> int | None:
        """Digits before the point a NUMBER(p[,s]) holds: p-s (a negative scale adds digits,
        a scale above the precision leaves none); None without a stated precision."""
        declared = self.declared_number
        return declared[0] - declared[1] if declared else None

    @property
    def max_digits(self) -> int | None:
        """NUMBER(p[,s]) held in INT/BIGINT (s ≤ 0): Oracle holds at most p-s digits, the Spark type more."""
        return self.integer_digits if self.spark in ("INT", "BIGINT") else None


def int_params(dt: exp.DataType) -> list[int | None]:
    """A type's size parameters as integers (None where one is not a number, e.g. ``*``)."""
    out: list[int | None] = []
    for e in dt.expressions:
        text = e.sql().strip().split(" ")[0]
        try:
            out.append(int(text))
        except ValueError:
            out.append(None)
    return out


def map_oracle_type(dt: exp.DataType, number_policy: str = "decimal") -> ColumnType:
    """Map a sqlglot Oracle data type to the Spark type of the table above. The Oracle
    type is kept as Oracle's dictionary states it, so the forms ``DBMS_METADATA`` prints
    and the plain ones agree: ``NUMBER(6,0)`` is ``NUMBER(6)``, ``VARCHAR2(20 BYTE)`` is
    ``VARCHAR2(20)`` (byte semantics, the default; ``CHAR`` semantics stay written), and
    ``NUMBER(*,s)`` has 38 digits, ``s`` of them decimals.

    >>> from silver.ddl import parse_ddl
    >>> [parse_ddl(f"ALTER TABLE hr.e ADD (c {t})").actions[0].column.type.oracle
    ...  for t in ("NUMBER(6,0)", "VARCHAR2(20 BYTE)", "VARCHAR2(20 CHAR)", "TIMESTAMP(6) WITH LOCAL TIME ZONE")]
    ['NUMBER(6)', 'VARCHAR2(20)', 'VARCHAR2(20 CHAR)', 'TIMESTAMP(6) WITH LOCAL TIME ZONE']
    """
    oracle = dt.sql("oracle")
    upper = oracle.upper()
    t = dt.this
    T = exp.DataType.Type
    args = int_params(dt)
    # The type's name as a whole word: DECRYPT or INTERNAL are no numbers.
    word = re.split(r"[\s(]", upper, maxsplit=1)[0]
    if word == "NUMBER" and len(args) == 2 and args[1] is not None:
        if args[1] == 0 and args[0] is not None:
            oracle = upper = f"NUMBER({args[0]})"
        args = [38 if args[0] is None else args[0], args[1]]  # NUMBER(*,s): 38 digits, s of them decimals
    if t in (T.VARCHAR, T.NVARCHAR, T.CHAR, T.NCHAR) and len(args) == 1 and upper.endswith(" BYTE)"):
        oracle = upper = f"{word}({args[0]})"
    if t == T.TIMESTAMPLTZ:
        oracle = upper = f"TIMESTAMP{f'({args[0]})' if args and args[0] is not None else ''} WITH LOCAL TIME ZONE"
    if t == T.BIGINT:  # sqlglot reads Oracle's LONG (character data) as BIGINT
        return ColumnType("LONG", "STRING", empty_is_null=True)
    if word in ("INTEGER", "INT", "SMALLINT") and not args:
        return ColumnType(oracle, "DECIMAL(38,0)")
    if t in (T.DECIMAL, T.BIGDECIMAL) or word in ("NUMBER", "NUMERIC", "DEC", "DECIMAL"):
        if not args or args[0] is None:
            return ColumnType(oracle, NUMBER_POLICY_TYPES[number_policy])
        p = args[0]
        s = args[1] if len(args) > 1 and args[1] is not None else 0
        if s < 0:  # whole numbers of p significant digits, rounded to 10^-s: p-s digits
            p, s = p - s, 0
        if s == 0:
            if p <= 9:
                return ColumnType(oracle, "INT")
            if p <= 18:
                return ColumnType(oracle, "BIGINT")
            return ColumnType(oracle, f"DECIMAL({min(p, 38)},0)")
        if s > p:
            return ColumnType(oracle, f"DECIMAL(38,{s})")
        return ColumnType(oracle, f"DECIMAL({p},{s})")
    if t in (T.FLOAT, T.DOUBLE) or word in ("BINARY_DOUBLE", "FLOAT", "REAL", "DOUBLE"):
        return ColumnType(oracle, "DOUBLE")
    if t in (T.VARCHAR, T.NVARCHAR, T.CHAR, T.NCHAR):
        # CHAR and NCHAR without a length hold one (byte or character).
        length = args[0] if args else (1 if t in (T.CHAR, T.NCHAR) else None)
        return ColumnType(oracle, "STRING", max_length=length, empty_is_null=True)
    if word in ("CLOB", "NCLOB") or upper == "LONG" or t == T.TEXT:
        return ColumnType(oracle, "STRING", empty_is_null=True)
    if t == T.DATE or upper == "DATE":
        return ColumnType(oracle, "TIMESTAMP_NTZ")
    if t in (T.TIMESTAMPTZ, T.TIMESTAMPLTZ):
        return ColumnType(oracle, "TIMESTAMP")
    if t in (T.TIMESTAMP, T.DATETIME, T.TIMESTAMPNTZ):
        return ColumnType(oracle, "TIMESTAMP_NTZ")
    if t in (T.VARBINARY, T.BINARY, T.BLOB, T.LONGBLOB) or word in ("RAW", "BLOB") or upper.startswith("LONG RAW"):
        return ColumnType(oracle, "BINARY", hex_binary=True)
    if t == T.JSON:
        return ColumnType(oracle, "VARIANT")
    if word in ("ROWID", "UROWID", "INTERVAL", "XMLTYPE") or t in (T.INTERVAL, T.ROWVERSION):
        return ColumnType(oracle, "STRING")
    raise DdlError(f"Oracle type {oracle} has no Spark mapping (see silver/types.py)")
