"""Oracle Streams rule conditions: read as DBA_RULES prints them, compiled to Spark Columns.

The text is parsed with sqlglot's Oracle dialect; every node is checked against a small
allowlist and turned into the typed AST below, which compiles with the Column API only.
User text never reaches Spark as SQL, and results do not depend on
``spark.sql.ansi.enabled`` (literals are coerced here, values are read with
``try_variant_get``, no implicit casts are left to Spark).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Context, Decimal

import sqlglot
from pyspark.sql import Column
from pyspark.sql import functions as F
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from bronze.records import CONTROL_COMMANDS
from lakestreams.errors import RuleError

NUMBER, VARCHAR2, DATE, RAW, ANYDATA = "NUMBER", "VARCHAR2", "DATE", "RAW", "ANYDATA"
NULL = "NULL"  # the type of an untyped NULL literal (and of '', which Oracle reads as NULL)
SPARK_TYPES = {NUMBER: "decimal(38,10)", VARCHAR2: "string", DATE: "timestamp_ntz", RAW: "binary"}
ACCESS = {  # AnyData access member (lower case) -> (its spelling, the type it returns)
    "accessnumber": ("AccessNumber", NUMBER),
    "accessvarchar2": ("AccessVarchar2", VARCHAR2),
    "accesschar": ("AccessChar", VARCHAR2),
    "accessdate": ("AccessDate", DATE),
    "accesstimestamp": ("AccessTimestamp", DATE),
}
#: A column name as written (checked before an unquoted name folds to upper case, so that
#: no other character folds into one of these); Oracle's limit is 128 characters.
_NAME = re.compile(r"[A-Za-z0-9_$#]{1,128}")
_NUMERIC = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
_HEX = re.compile(r"[0-9A-Fa-f]*")
_DECIMAL = Context(prec=80)  # wide enough that checking a literal never rounds it
_SCALE = Decimal("1e-10")
_ORACLE = sqlglot.Dialect.get_or_raise("oracle")


def is_ddl_lcr() -> Column:
    """A record is a DDL LCR exactly when it has DDL text."""
    return F.col("ddl_text").isNotNull()


def is_control_record() -> Column:
    """COMMIT/ROLLBACK: transaction control, neither a row nor a DDL LCR."""
    return F.coalesce(F.col("command_type").isin(*CONTROL_COMMANDS), F.lit(False)) & ~is_ddl_lcr()


def is_row_lcr() -> Column:
    return ~is_ddl_lcr() & ~is_control_record()


@dataclass(frozen=True)
class _MemberSpec:
    column: str  # the change-record column the member reads
    type: str = VARCHAR2
    not_on: str | None = None  # the variable whose LCR type lacks this member


MEMBERS = {
    "get_object_owner": _MemberSpec("object_owner"),
    "get_object_name": _MemberSpec("object_name"),
    "get_command_type": _MemberSpec("command_type"),
    "get_source_database_name": _MemberSpec("source_database"),
    "is_null_tag": _MemberSpec("tag"),
    "get_tag": _MemberSpec("tag", RAW),
    "get_object_type": _MemberSpec("object_type", not_on="dml"),
    "get_base_table_owner": _MemberSpec("base_table_owner", not_on="dml"),
    "get_base_table_name": _MemberSpec("base_table_name", not_on="dml"),
    "get_current_schema": _MemberSpec("current_schema", not_on="dml"),
    "get_logon_user": _MemberSpec("logon_user", not_on="dml"),
}

# ---------------------------------------------------------------- typed AST
# Value nodes carry an Oracle type (NUMBER, VARCHAR2, DATE, RAW, ANYDATA, or NULL for an
# untyped NULL); the boolean nodes after them keep SQL's three-valued logic.


@dataclass(frozen=True)
class Lit:
    value: Decimal | str | datetime | bytes | None
    type: str


@dataclass(frozen=True)
class Member:
    name: str
    type: str


@dataclass(frozen=True)
class GetValue:
    image: str  # OLD | NEW
    column: str
    use_old: bool
    type: str = ANYDATA


@dataclass(frozen=True)
class Access:
    value: GetValue
    method: str
    type: str


@dataclass(frozen=True)
class Compare:
    op: str
    left: Value
    right: Value


@dataclass(frozen=True)
class InList:
    value: Value
    items: tuple[Value, ...]


@dataclass(frozen=True)
class Like:
    value: Value
    pattern: str | None
    escape: str | None = None


@dataclass(frozen=True)
class IsNull:
    value: Value


@dataclass(frozen=True)
class Between:
    value: Value
    low: Value
    high: Value


@dataclass(frozen=True)
class Not:
    operand: Bool


@dataclass(frozen=True)
class And:
    left: Bool
    right: Bool


@dataclass(frozen=True)
class Or:
    left: Bool
    right: Bool


@dataclass(frozen=True)
class Exists:
    condition: Bool


Value = Lit | Member | GetValue | Access
Bool = Compare | InList | Like | IsNull | Between | Not | And | Or | Exists
_VALUES = (Lit, Member, GetValue, Access)

# ---------------------------------------------------------------- compiler

_COMPARE = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _value_column(n: Value) -> Column:
    match n:
        case Lit(value=None):
            return F.lit(None)
        case Lit(type="NUMBER"):
            return F.lit(_DECIMAL.quantize(n.value, _SCALE)).cast(SPARK_TYPES[NUMBER])
        case Lit(type="DATE"):
            return F.lit(n.value.isoformat(sep=" ")).cast(SPARK_TYPES[DATE])
        case Lit():
            return F.lit(n.value)
        case Member(name="is_null_tag"):
            return F.when(F.col("tag").isNull(), F.lit("Y")).otherwise(F.lit("N"))
        case Member(name="get_tag"):
            return F.unhex(F.col("tag"))
        case Member():
            return F.col(MEMBERS[n.name].column)
        case GetValue():
            path = f'$["{n.column}"]'  # the name matched _NAME, so it needs no escaping
            got = F.try_variant_get(F.col(f"{n.image.lower()}_values"), path, "variant")
            if n.image == "NEW" and n.use_old:
                # An absent key is SQL NULL, a JSON null a variant null: coalesce falls back only when absent.
                got = F.coalesce(got, F.try_variant_get(F.col("old_values"), path, "variant"))
            return got
        case Access():
            return F.try_variant_get(_value_column(n.value), "$", SPARK_TYPES[n.type])
    raise TypeError(n)


def _bool_column(n: Bool) -> Column:
    match n:
        case Compare():
            return _COMPARE[n.op](_value_column(n.left), _value_column(n.right))
        case InList():
            return _value_column(n.value).isin(*(_value_column(i) for i in n.items))
        case Like(pattern=None):
            return F.lit(None).cast("boolean")
        case Like(escape=None):
            # Oracle has no default escape character; Spark's is the backslash.
            return _value_column(n.value).like(n.pattern.replace("\\", "\\\\"))
        case Like():
            return F.like(_value_column(n.value), F.lit(n.pattern), F.lit(n.escape))
        case IsNull():
            return _value_column(n.value).isNull()
        case Between():
            return _value_column(n.value).between(_value_column(n.low), _value_column(n.high))
        case Not():
            return ~_bool_column(n.operand)
        case And():
            return _bool_column(n.left) & _bool_column(n.right)
        case Or():
            return _bool_column(n.left) | _bool_column(n.right)
        case Exists():
            return F.coalesce(_bool_column(n.condition), F.lit(False))
    raise TypeError(n)


# ---------------------------------------------------------------- reader

_COMPARISONS = {exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_DESCRIPTIONS = {
    exp.DPipe: "operator ||", exp.Add: "operator +", exp.Sub: "operator -", exp.Mul: "operator *",
    exp.Div: "operator /", exp.Subquery: "subquery", exp.Select: "subquery", exp.Case: "CASE expression",
    exp.Boolean: "boolean literal", exp.Star: "*",
}
_BOOLEAN = "a comparison, [NOT] IN, [NOT] LIKE, [NOT] BETWEEN, IS [NOT] NULL or [NOT] EXISTS, joined by AND/OR/NOT"
_EXISTS_SHAPE = "EXISTS (SELECT 1 FROM SYS.DUAL WHERE condition)"
_TYPED_LITERALS = {
    exp.DateStrToDate: ("DATE", "DATE 'yyyy-mm-dd'"),
    exp.StrToTime: ("TIMESTAMP", "TIMESTAMP 'yyyy-mm-dd hh24:mi:ss[.ffffff]'"),
}
_ACCESS_LIST = ", ".join(f"{m}()" for m, _ in ACCESS.values())


def _folded(e: exp.Expression | None) -> str | None:
    """An identifier as Oracle resolves it: unquoted folds to upper case, quoted ("dual",
    another table than DUAL) stays as written."""
    if not isinstance(e, exp.Identifier):
        return None
    return e.this if e.quoted else e.this.upper()


def _plain(e: exp.Expression) -> exp.Expression:
    while isinstance(e, exp.Paren):
        e = e.this
    return e


class _Reader:
    """Walks one sqlglot tree, refusing what is not allowed, building the typed AST."""

    def __init__(self, text: str, what: str, variables: frozenset[str]):
        self.text, self.what, self.variables = text if isinstance(text, str) else "", what, variables
        self.variable: str | None = None
        self.value_columns: set[tuple[str, str]] = set()
        self.resolve_column: Callable[[str, exp.Column], Value] | None = None
        if not isinstance(text, str) or not text.strip():
            raise self.error("the text is empty", 0, _BOOLEAN)
        try:
            self.tokens: list[Token] = _ORACLE.tokenize(text)
        except TokenError as e:
            raise RuleError(f"{what}: cannot read the text ({e}); is a quote left open?") from None
        if not self.tokens:
            raise self.error("the text is empty (only comments)", 0, _BOOLEAN)
        for i, tok in enumerate(self.tokens):
            if tok.token_type == TokenType.SEMICOLON:
                raise self.error("';' is not allowed", tok.start, "one expression, not several statements")
            if tok.token_type == TokenType.COLON:
                self._bind(self.tokens[i + 1] if i + 1 < len(self.tokens) else None, tok.start)

    def _bind(self, tok: Token | None, start: int) -> None:
        name = tok.text.lower() if tok and tok.token_type == TokenType.VAR else (tok.text if tok else "")
        if name not in self.variables:
            accepted = ", ".join(f":{v}" for v in sorted(self.variables)) or "none (name the columns directly)"
            raise self.error(f"bind variable :{name} is not allowed", start, accepted)
        if self.variable and name != self.variable:
            raise self.error(f"the condition uses both :{self.variable} and :{name}", start, "one variable")
        self.variable = name

    def error(self, message: str, start: int, accepted: str | None = None) -> RuleError:
        line = self.text.count("\n", 0, start) + 1
        column = start - self.text.rfind("\n", 0, start)
        tail = f"; accepted: {accepted}" if accepted else ""
        return RuleError(f"{self.what}: {message} (line {line}, column {column}){tail}")

    def pos(self, e: exp.Expression, word: str | None = None) -> int:
        """Offset of a node: its own token, else the token `word` just before its children."""
        if "start" in e.meta:
            return e.meta["start"]
        inner = min((n.meta["start"] for n in e.walk() if "start" in n.meta), default=None)
        if word:
            hits = [t.start for t in self.tokens if t.text.upper() == word and t.token_type != TokenType.STRING]
            before = [h for h in hits if inner is not None and h <= inner]
            if hits:
                return before[-1] if before else hits[0]
        if inner is None:
            return 0
        # Placeholders carry no position: point a ':dml.member()' chain at its ':'.
        i = next((i for i, t in enumerate(self.tokens) if t.start == inner), 0)
        if i >= 3 and self.tokens[i - 1].token_type == TokenType.DOT and self.tokens[i - 3].token_type == TokenType.COLON:
            return self.tokens[i - 3].start
        return inner

    def parse(self) -> exp.Expression:
        try:
            trees = sqlglot.parse(self.text, dialect=_ORACLE)
        except ParseError as e:
            err = e.errors[0] if e.errors else {}
            line, col = err.get("line", 1), err.get("col", 1) - len(err.get("highlight") or " ") + 1
            near = f" near {err['highlight']!r}" if err.get("highlight") else ""
            raise RuleError(
                f"{self.what}: syntax error{near} (line {line}, column {max(col, 1)}): {err.get('description', e)}"
            ) from None
        root = trees[0] if len(trees) == 1 else None
        if root is None:
            raise self.error("the text is empty", 0, _BOOLEAN)
        if not isinstance(root, (exp.Condition, exp.Subquery)):
            # Text after a whole condition reads as an alias ("... = 'X' secrets") or a set operation.
            if isinstance(root, exp.Alias):
                alias = root.args["alias"]
                raise self.error(f"{alias.name!r} after the condition is not allowed", self.pos(alias), _BOOLEAN)
            if isinstance(root, exp.SetOperation):  # UNION, INTERSECT, MINUS
                tok = next((t for t in self.tokens if t.token_type != TokenType.STRING
                            and t.text.upper() in ("UNION", "INTERSECT", "MINUS", "EXCEPT")), None)
                word = tok.text.upper() if tok else root.key.upper()
                raise self.error(f"{word} is not allowed", tok.start if tok else 0, _BOOLEAN)
            first = self.tokens[0]
            raise self.error(f"statement {first.text.upper()} is not allowed", first.start, _BOOLEAN)
        return root

    # -- dispatch

    def node(self, e: exp.Expression) -> Value | Bool:
        method = _READERS.get(type(e))
        if method is None:
            self.refuse(e)
        return getattr(self, method)(e)

    def value(self, e: exp.Expression) -> Value:
        n = self.node(e)
        if not isinstance(n, _VALUES):
            raise self.error("a condition cannot be used as a value", self.pos(e))
        return n

    def cond(self, e: exp.Expression) -> Bool:
        n = self.node(e)
        if isinstance(n, _VALUES):
            raise self.error(f"a {n.type} value is not a condition", self.pos(e), _BOOLEAN)
        return n

    def refuse(self, e: exp.Expression):
        word = accepted = None
        if isinstance(e, exp.Func):
            word = self.function_name(e)
            what = f"function {word}"
            accepted = "HEXTORAW('hex') and LCR member calls such as :dml.get_object_owner()"
        elif type(e) in _DESCRIPTIONS:
            what = _DESCRIPTIONS[type(e)]
            word = "SELECT" if what == "subquery" else None
        else:
            what = f"{e.key.upper()} expression"
        raise self.error(f"{what} is not allowed", self.pos(e, word), accepted)

    def function_name(self, e: exp.Func) -> str:
        if isinstance(e, exp.Anonymous):
            return e.name.upper()
        if isinstance(e, exp.CurrentTimestamp) and e.args.get("sysdate"):
            return "SYSDATE"
        start = e.meta.get("start")
        tok = next((t for t in self.tokens if t.start == start), None)
        return tok.text.upper() if tok else e.sql_name()

    # -- conditions

    def paren(self, e: exp.Paren) -> Value | Bool:
        return self.node(e.this)

    def connector(self, e: exp.And | exp.Or) -> Bool:
        return (And if isinstance(e, exp.And) else Or)(self.cond(e.this), self.cond(e.expression))

    def not_(self, e: exp.Not) -> Bool:
        return Not(self.cond(e.this))

    def compare(self, e: exp.Binary) -> Bool:
        left, right = self.comparable(self.value(e.this), self.value(e.expression), e)
        return Compare(_COMPARISONS[type(e)], left, right)

    def in_(self, e: exp.In) -> Bool:
        for key in ("query", "unnest", "field"):
            if e.args.get(key):
                self.refuse(e.args[key])
        value, items = self.value(e.this), []
        for item in e.expressions:
            value, item = self.comparable(value, self.value(item), e)
            items.append(item)
        return InList(value, tuple(self.same_type(value, items, e)))

    def between(self, e: exp.Between) -> Bool:
        if e.args.get("symmetric"):
            raise self.error("BETWEEN SYMMETRIC is not allowed", self.pos(e), "BETWEEN low AND high")
        value, low = self.comparable(self.value(e.this), self.value(e.args["low"]), e)
        value, high = self.comparable(value, self.value(e.args["high"]), e)
        low, high = self.same_type(value, [low, high], e)
        return Between(value, low, high)

    def is_(self, e: exp.Is) -> Bool:
        if not isinstance(e.expression, exp.Null):
            raise self.error("IS may only be followed by [NOT] NULL", self.pos(e), "IS NULL, IS NOT NULL")
        out = IsNull(self.value(e.this))
        return Not(out) if e.args.get("negate") else out

    def like(self, e: exp.Like, escape: str | None = None) -> Bool:
        value, pattern = self.value(e.this), self.value(e.expression)
        if value.type not in (VARCHAR2, NULL):
            raise self.error(f"LIKE needs a VARCHAR2 value, not {value.type}", self.pos(e), "AccessVarchar2()")
        if not isinstance(pattern, Lit) or pattern.type not in (VARCHAR2, NULL):
            raise self.error("a LIKE pattern must be a string literal", self.pos(e.expression))
        if escape and pattern.value and re.search(f"{re.escape(escape)}(?![%_])", pattern.value.replace(escape * 2, "")):
            raise self.error(f"escape character {escape!r} must precede %, _ or itself in the LIKE pattern",
                             self.pos(e.expression))
        out = Like(value, pattern.value, escape)
        return Not(out) if e.args.get("negate") else out

    def escape(self, e: exp.Escape) -> Bool:
        esc = e.expression
        if not isinstance(e.this, exp.Like):
            self.refuse(e)
        if not (isinstance(esc, exp.Literal) and esc.is_string and len(esc.this) == 1):
            raise self.error("ESCAPE takes a one-character string literal", self.pos(esc))
        return self.like(e.this, esc.this)

    def exists(self, e: exp.Exists) -> Bool:
        sel = e.this
        if not isinstance(sel, exp.Select):
            raise self.error("EXISTS over anything but a SELECT is not allowed", self.pos(e), _EXISTS_SHAPE)
        for key, arg in sel.args.items():
            if arg and key not in ("expressions", "from_", "where"):
                clause = key.rstrip("_").upper()
                raise self.error(f"{clause} in an EXISTS subquery is not allowed", self.pos(sel), _EXISTS_SHAPE)
        items = sel.expressions
        if len(items) != 1 or not (isinstance(items[0], exp.Literal) and items[0].this == "1"):
            raise self.error("the select list of an EXISTS subquery must be 1", self.pos(sel), _EXISTS_SHAPE)
        frm = sel.args.get("from_")
        table = frm.this if frm else None
        dual = (
            isinstance(table, exp.Table)
            and _folded(table.this) == "DUAL"
            and (not table.args.get("db") or _folded(table.args["db"]) == "SYS")
            and not any(v for k, v in table.args.items() if k not in ("this", "db"))
            and not any(v for k, v in frm.args.items() if k != "this")
        )
        if not dual:
            shown = table.sql(dialect=_ORACLE) if table is not None else "(none)"
            where = self.pos(table) if table is not None else self.pos(sel, "SELECT")
            raise self.error(f"table {shown} is not allowed", where, _EXISTS_SHAPE)
        if not sel.args.get("where"):
            raise self.error("an EXISTS subquery needs a WHERE clause", self.pos(sel, "SELECT"), _EXISTS_SHAPE)
        return Exists(self.cond(sel.args["where"].this))

    # -- values

    def literal(self, e: exp.Literal) -> Value:
        if e.is_string:
            return Lit(e.this, VARCHAR2) if e.this else Lit(None, NULL)  # Oracle reads '' as NULL
        return Lit(self.number(e.this, e), NUMBER)

    def neg(self, e: exp.Neg) -> Value:
        if isinstance(e.this, exp.Literal) and not e.this.is_string:
            return Lit(self.number("-" + e.this.this, e.this), NUMBER)
        raise self.error("operator - is not allowed", self.pos(e), "a negative number literal")

    def null(self, e: exp.Null) -> Value:
        return Lit(None, NULL)

    def number(self, text: str, e: exp.Expression) -> Decimal:
        d = Decimal(text.strip())
        # NUMBER values compare as DECIMAL(38,10); a literal that does not fit would make Spark round or overflow.
        if abs(d) >= 10**28 or _DECIMAL.normalize(d).as_tuple().exponent < -10:
            raise self.error(f"number {text.strip()} is out of range", self.pos(e),
                             "at most 28 digits before the decimal point and 10 after")
        return d

    def typed_literal(self, e: exp.DateStrToDate | exp.StrToTime) -> Value:
        """DATE '...' or TIMESTAMP '...'; TO_DATE(...) and TO_TIMESTAMP(...) parse to the same nodes."""
        keyword, shape = _TYPED_LITERALS[type(e)]
        start = e.this.meta.get("start") if isinstance(e.this, exp.Literal) else None
        i = next((i for i, t in enumerate(self.tokens) if t.start == start), 0)
        if not i or self.tokens[i - 1].text.upper() != keyword:
            self.refuse(e)
        if keyword == "DATE" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", e.this.this):
            raise self.error(f"DATE literal {e.this.this!r} is not a date", self.pos(e), shape)
        return Lit(self.datetime(e.this.this, e, shape), DATE)

    def datetime(self, text: str, e: exp.Expression, accepted: str) -> datetime:
        try:
            out = datetime.fromisoformat(text.strip())
        except ValueError:
            out = None
        if out is None or out.tzinfo is not None:
            raise self.error(f"{text!r} is not a date and time", self.pos(e), accepted)
        return out

    def function(self, e: exp.Anonymous) -> Value:
        if e.name.upper() != "HEXTORAW":
            self.refuse(e)
        args = e.expressions
        if len(args) != 1 or not (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise self.error("HEXTORAW takes one string literal", self.pos(e), "HEXTORAW('0A1B')")
        return self.raw(args[0].this, e)

    def raw(self, text: str, e: exp.Expression) -> Value:
        if not _HEX.fullmatch(text):
            raise self.error(f"HEXTORAW({text!r}) is not hexadecimal", self.pos(e), "digits 0-9 and A-F")
        # Oracle pads an odd-length hex string with a leading zero; '' is NULL.
        return Lit(bytes.fromhex(text.zfill(len(text) + len(text) % 2)), RAW) if text else Lit(None, NULL)

    def placeholder(self, e: exp.Placeholder) -> Value:
        name = f":{e.name}" if e.name not in ("", "?") else "?"
        raise self.error(f"bind variable {name} alone is not a value", self.pos(e, name[0]),
                         ":dml.get_object_owner() and other member calls")

    def column(self, e: exp.Column) -> Value:
        if e.table:
            raise self.error(f"qualified column {e.sql(dialect=_ORACLE)} is not allowed", self.pos(e))
        if not _NAME.fullmatch(e.this.this):
            raise self.error(f"column name {e.this.this!r} is not allowed", self.pos(e),
                             "at most 128 letters, digits, _ $ #")
        name = e.this.this if e.this.quoted else e.name.upper()
        if self.resolve_column is None:
            raise self.error(f"column reference {name} is not allowed", self.pos(e),
                             f":dml.get_value('NEW','\"{name}\"') with an Access call such as AccessNumber()")
        return self.resolve_column(name, e)

    def dot(self, e: exp.Dot) -> Value:
        target, call = e.this, e.expression
        name = call.name if isinstance(call, (exp.Anonymous, exp.Identifier)) else call.key
        if isinstance(target, exp.Placeholder):
            return self.member(target.name.lower(), call, name)
        inner = self.value(target)
        if not isinstance(inner, GetValue):
            raise self.error(f"member {name} on a {inner.type} value is not allowed", self.pos(call))
        if not (isinstance(call, exp.Anonymous) and name.lower() in ACCESS and not call.expressions):
            raise self.error(f"member {name} on the AnyData from get_value is not allowed", self.pos(call),
                             f"{_ACCESS_LIST} or IS [NOT] NULL")
        method, typ = ACCESS[name.lower()]
        return Access(inner, method, typ)

    def member(self, var: str, call: exp.Expression, name: str) -> Value:
        if var not in self.variables:  # e.g. '?' or a name the token check could not see
            raise self.error(f"bind variable :{var} is not allowed", self.pos(call))
        spec = MEMBERS.get(name.lower())
        if not isinstance(call, exp.Anonymous) or (spec is None and name.lower() != "get_value"):
            raise self.error(f"member {name} of :{var} is not allowed", self.pos(call),
                             ", ".join(f"{m}()" for m in [*MEMBERS, "get_value"]))
        if name.lower() == "get_value":
            if var == "ddl":
                raise self.error("member get_value is not allowed on :ddl (a DDL LCR has no column values)",
                                 self.pos(call), "get_value on :dml")
            return self.get_value(call)
        if spec.not_on == var:
            raise self.error(f"member {name} is not allowed on :{var} (it belongs to DDL LCRs only)",
                             self.pos(call), "it on :ddl")
        if call.expressions:
            raise self.error(f"member {name} takes no arguments", self.pos(call))
        return Member(name.lower(), spec.type)

    def get_value(self, call: exp.Anonymous) -> Value:
        args = call.expressions
        shape = "get_value('OLD'|'NEW', '\"COLUMN\"' [, 'Y'|'N'])"
        if len(args) not in (2, 3) or not all(isinstance(a, exp.Literal) and a.is_string for a in args):
            raise self.error("get_value takes two or three string literals", self.pos(call), shape)
        image, column = args[0].this.upper(), args[1].this
        use_old = args[2].this.upper() if len(args) == 3 else "Y"
        quoted = len(column) > 1 and column[0] == column[-1] == '"'
        written = column[1:-1] if quoted else column
        if image not in ("OLD", "NEW") or use_old not in ("Y", "N"):
            raise self.error(f"get_value({image!r}, ..., {use_old!r}) is not allowed", self.pos(call), shape)
        if not _NAME.fullmatch(written):
            raise self.error(f"column name {column!r} in get_value is not allowed", self.pos(args[1]),
                             "at most 128 letters, digits, _ $ #")
        name = written if quoted else written.upper()
        self.value_columns.add((image, name))
        return GetValue(image, name, use_old == "Y")

    # -- types

    def comparable(self, a: Value, b: Value, e: exp.Expression) -> tuple[Value, Value]:
        """Both sides with one type; a string literal converts when it spells the other side's type."""
        if ANYDATA in (a.type, b.type):
            raise self.error("an AnyData value from get_value cannot be compared directly", self.pos(e),
                             f"{_ACCESS_LIST} on it, or IS [NOT] NULL")
        if a.type == b.type or NULL in (a.type, b.type):
            return a, b
        if isinstance(b, Lit) and b.type == VARCHAR2:
            return a, self.convert(b, a.type, e)
        if isinstance(a, Lit) and a.type == VARCHAR2:
            return self.convert(a, b.type, e), b
        raise self.error(f"cannot compare {a.type} with {b.type}", self.pos(e),
                         "values of one type (a string literal converts to NUMBER, DATE or RAW)")

    def convert(self, lit: Lit, typ: str, e: exp.Expression) -> Value:
        text = lit.value
        if typ == NUMBER and _NUMERIC.fullmatch(text):
            return Lit(self.number(text, e), NUMBER)
        if typ == DATE:
            return Lit(self.datetime(text, e, "DATE 'yyyy-mm-dd' or 'yyyy-mm-dd hh24:mi:ss'"), DATE)
        if typ == RAW and _HEX.fullmatch(text):
            return self.raw(text, e)
        raise self.error(f"cannot compare {typ} with the string {text!r}", self.pos(e),
                         "a number literal" if typ == NUMBER else f"a {typ} value")

    def same_type(self, value: Value, items: list[Value], e: exp.Expression) -> list[Value]:
        if len({v.type for v in (value, *items)} - {NULL}) > 1:
            raise self.error("the values compared have different types", self.pos(e), "values of one type")
        return items


_READERS = {
    exp.Paren: "paren", exp.And: "connector", exp.Or: "connector", exp.Not: "not_",
    **{cls: "compare" for cls in _COMPARISONS},
    exp.In: "in_", exp.Between: "between", exp.Is: "is_", exp.Like: "like", exp.Escape: "escape",
    exp.Exists: "exists", exp.Literal: "literal", exp.Neg: "neg", exp.Null: "null",
    exp.DateStrToDate: "typed_literal", exp.StrToTime: "typed_literal", exp.Anonymous: "function",
    exp.Placeholder: "placeholder", exp.Column: "column", exp.Dot: "dot",
}

# ---------------------------------------------------------------- public API


@dataclass(frozen=True)
class Condition:
    """A boolean rule condition: its text, the variable it uses, its typed AST.

    The condition does not test the LCR kind: the rules engine evaluates a :dml condition
    on row LCRs only and a :ddl condition on DDL LCRs only, as Oracle's evaluation context does.
    """

    text: str
    variable: str | None
    node: Bool
    value_columns: frozenset[tuple[str, str]]

    def column(self) -> Column:
        """The condition over change records; NULL counts as FALSE (such a rule is not TRUE)."""
        return F.coalesce(_bool_column(self.node), F.lit(False))


def parse_condition(text: str, *, variables: frozenset[str] = frozenset({"dml", "ddl"})) -> Condition:
    """Read a rule condition as DBA_RULES prints it; refuse anything outside the allowlist.

    Raises RuleError naming the construct and its line and column.

    >>> c = parse_condition(":dml.get_value('NEW','\\"REGION_ID\\"').AccessNumber()=2")
    >>> c.variable, sorted(c.value_columns)
    ('dml', [('NEW', 'REGION_ID')])
    """
    reader = _Reader(text, "rule condition", variables)
    node = reader.cond(reader.parse())
    return Condition(text, reader.variable, node, frozenset(reader.value_columns))


@dataclass(frozen=True)
class ValueExpr:
    """A value expression (member call, get_value(...).AccessX(), literal, HEXTORAW)."""

    text: str
    variable: str | None
    node: Value
    type: str  # NUMBER | VARCHAR2 | DATE | RAW

    def column(self) -> Column:
        """The value over change records, typed as SPARK_TYPES[type]."""
        col = _value_column(self.node)
        return col.cast(SPARK_TYPES[VARCHAR2]) if self.node.type == NULL else col


def parse_value(text: str, *, variables: frozenset[str] = frozenset({"dml", "lcr"})) -> ValueExpr:
    """Read a non-boolean value expression, e.g. for an added column.

    >>> parse_value(":lcr.get_source_database_name()").type
    'VARCHAR2'
    """
    reader = _Reader(text, "value expression", variables)
    root = reader.parse()
    node = reader.node(root)
    accepted = f"member calls, get_value(...) with {_ACCESS_LIST}, literals, HEXTORAW('hex')"
    if not isinstance(node, _VALUES):
        raise reader.error("a condition is not a value", reader.pos(root), accepted)
    if node.type == ANYDATA:
        raise reader.error("get_value(...) alone is an AnyData, not a value", reader.pos(root), accepted)
    return ValueExpr(text, reader.variable, node, VARCHAR2 if node.type == NULL else node.type)


def rewrite_lcr(text: str, variable: str) -> str:
    """Replace the bind variable ``:lcr`` by ``:dml`` or ``:ddl``; everything else stays verbatim.

    >>> rewrite_lcr(":lcr.get_tag() = HEXTORAW('02')", "dml")
    ":dml.get_tag() = HEXTORAW('02')"
    """
    if variable not in ("dml", "ddl"):
        raise RuleError(f"rewrite_lcr: variable {variable!r} is not allowed; accepted: 'dml', 'ddl'")
    try:
        tokens = _ORACLE.tokenize(text)
    except TokenError as e:
        raise RuleError(f"and_condition: cannot read the text ({e}); is a quote left open?") from None
    out, last = [], 0
    for prev, tok in zip(tokens, tokens[1:], strict=False):
        # Tokens, not text: ':lcr' inside a string literal or a comment is not a bind variable.
        if (prev.token_type == TokenType.COLON and tok.token_type == TokenType.VAR
                and tok.text.lower() == "lcr" and prev.end + 1 == tok.start):
            out += [text[last:tok.start], variable]
            last = tok.end + 1
    return "".join(out) + text[last:]


_ACCESS_BY_TYPE = {  # Oracle type name (first word) -> the AnyData member that reads it
    **dict.fromkeys(("NUMBER", "NUMERIC", "DECIMAL", "DEC", "INTEGER", "INT", "SMALLINT", "FLOAT", "REAL",
                     "DOUBLE", "BINARY_FLOAT", "BINARY_DOUBLE"), "AccessNumber"),
    **dict.fromkeys(("VARCHAR2", "VARCHAR", "NVARCHAR2"), "AccessVarchar2"),
    **dict.fromkeys(("CHAR", "NCHAR"), "AccessChar"),
    "DATE": "AccessDate",
    "TIMESTAMP": "AccessTimestamp",
}


@dataclass(frozen=True)
class SubsetCondition:
    """An ADD_SUBSET_RULES dml_condition over bare column names, with each column's Access member."""

    text: str
    columns: tuple[str, ...]
    access: dict[str, str]
    references: tuple[tuple[int, int, str], ...] = field(default=(), repr=False)  # (start, end, column)

    def render(self, image: str) -> str:
        """The text with each column replaced by ``:dml.get_value(image,'"COL"').AccessX()``.

        >>> print(parse_subset_condition('region_id=2').render('NEW'))
        :dml.get_value('NEW','"REGION_ID"').AccessNumber()=2
        """
        image = image.upper()
        if image not in ("OLD", "NEW"):
            raise RuleError(f"subset condition: image {image!r} is not allowed; accepted: 'OLD', 'NEW'")
        out = self.text
        for start, end, name in sorted(self.references, reverse=True):
            out = f"{out[:start]}:dml.get_value('{image}','\"{name}\"').{self.access[name]}(){out[end + 1:]}"
        return out


def _literal_access(e: exp.Expression) -> str | None:
    e = _plain(e)
    if isinstance(e, exp.Literal):
        return "AccessVarchar2" if e.is_string else "AccessNumber"
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal):
        return "AccessNumber"
    return {exp.DateStrToDate: "AccessDate", exp.StrToTime: "AccessTimestamp"}.get(type(e))


def parse_subset_condition(
    text: str, column_type: Callable[[str], str | None] | None = None
) -> SubsetCondition:
    """Read a WHERE-like subset condition over bare column names (``region_id=2``).

    Each column's Access member comes from ``column_type(COLUMN)`` (an Oracle type name)
    when it knows the column, else from the literals the column is compared with.
    """
    reader = _Reader(text, "subset condition", frozenset())
    root = reader.parse()
    hints: dict[str, set[str]] = {}
    for node in root.walk():
        operands = {exp.In: lambda n: [n.this, *n.expressions],
                    exp.Between: lambda n: [n.this, n.args.get("low"), n.args.get("high")]}.get(type(node))
        if operands:
            operands = operands(node)
        elif type(node) in _COMPARISONS or isinstance(node, exp.Like):
            operands = [node.this, node.expression]
        else:
            continue
        kinds = {"AccessVarchar2"} if isinstance(node, exp.Like) else set()
        kinds |= {k for o in operands if o is not None and (k := _literal_access(o))}
        for o in operands:
            c = _plain(o).this if isinstance(o, exp.Expression) and isinstance(_plain(o), exp.Column) else None
            if isinstance(c, exp.Identifier):
                hints.setdefault(c.this if c.quoted else c.this.upper(), set()).update(kinds)
    access: dict[str, str] = {}
    refs: list[tuple[int, int, str]] = []

    def resolve(name: str, e: exp.Column) -> Value:
        if name not in access:
            oracle = column_type(name) if column_type else None
            if oracle:
                found = _ACCESS_BY_TYPE.get(re.split(r"[\s(]", oracle.strip().upper(), maxsplit=1)[0])
                if not found:
                    raise reader.error(f"column {name} has type {oracle}, which a subset condition cannot read",
                                       reader.pos(e), "NUMBER, VARCHAR2, CHAR, DATE and TIMESTAMP columns")
                access[name] = found
            elif len(hints.get(name, ())) == 1:
                access[name] = next(iter(hints[name]))
            else:
                message = (f"column {name} is compared with literals of different types" if hints.get(name)
                           else f"cannot tell the type of column {name}")
                raise reader.error(message, reader.pos(e), "declare the table, or compare it with a literal")
        refs.append((e.this.meta["start"], e.this.meta["end"], name))
        typ = next(t for m, t in ACCESS.values() if m == access[name])
        return Access(GetValue("NEW", name, True), access[name], typ)

    reader.resolve_column = resolve
    reader.cond(root)  # checks the allowlist and the types; the AST itself is not kept
    refs.sort()
    columns = tuple(dict.fromkeys(name for _, _, name in refs))
    return SubsetCondition(text, columns, {c: access[c] for c in columns}, tuple(refs))
