"""GoldenGate's processing of one DDL record: scope, MAP, filters, DDLSUBST, DDLERROR.

``process`` runs ``STEPS`` in the order Replicat evaluates a DDL statement, with the
Extract-side steps a capture record still needs (replicated DDL, RENAME) placed where
Extract runs them:

1. ``separate_comments``; 2. ``ignore_replicates`` (a tagged record came from an apply);
3. ``identify``: operation, object type, base and derived object, RENAME flagged;
4. ``rename_to_alter``: RENAME a TO b becomes ALTER TABLE a RENAME TO b;
5. ``remove_comments_before`` (DDLOPTIONS REMOVECOMMENTS BEFORE);
6. ``determine_scope``: OTHER if this operation on this object type cannot be mapped,
   else MAPPED when a MAP names the base object, else UNMAPPED;
7. ``map_base``: one target per matching MAP, the base name replaced where the text writes
   it (found from the parse; the rest of the captured text stays as it was);
8. ``map_derived`` (MAPDERIVED): index, trigger or new name follow the MAP;
9. ``filter_ddl``: DDL INCLUDE / EXCLUDE on each target (an EXCLUDE that holds wins);
10. ``substitute``: every DDLSUBST whose own clauses hold, in file order;
11. ``remove_comments_after``; 12. ``reparse`` (``silver.ddl.parse_ddl``);
13. ``execute``; 14. ``handle_errors`` (DDLERROR: ABEND, IGNORE or DISCARD);
15. ``conclude``.

A step that settles the record sets ``outcome``; later steps pass the state through.
After mapping, steps work on each live target (several MAPs may give several targets).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import sqlglot
from sqlglot import exp

from lakestreams.config import IDENTIFIER
from lakestreams.errors import ConfigError, DdlError
from silver.ddl import DdlStatement, parse_ddl
from silver.oracle_ddl import OracleDdl

SCOPES = ("MAPPED", "UNMAPPED", "OTHER", "ALL")
OPTYPES = ("CREATE", "ALTER", "DROP", "TRUNCATE", "RENAME", "GRANT", "REVOKE", "COMMENT", "ANALYZE",
           "AUDIT", "NOAUDIT", "PURGE", "FLASHBACK", "ASSOCIATE", "DISASSOCIATE")
ACTIONS = ("ABEND", "IGNORE", "DISCARD")
OUTCOMES = ("APPLIED", "EXCLUDED", "IGNORED_REPLICATE", "IGNORED_ERROR", "DISCARDED")
CRITERIA = ("scope", "optype", "objtype", "objname", "instr", "instrcomments")
_NAMED = ("TABLE", "INDEX", "TRIGGER", "SEQUENCE", "MATERIALIZED VIEW", "VIEW", "FUNCTION",
          "PACKAGE", "PACKAGE BODY", "PROCEDURE", "SYNONYM", "PUBLIC SYNONYM")
#: Object types a MAP can name, by operation (GoldenGate's MAPPED scope); the rest is OTHER.
MAPPABLE = {**dict.fromkeys(("CREATE", "ALTER", "DROP", "RENAME", "COMMENT"), _NAMED),
            **dict.fromkeys(("GRANT", "REVOKE"), ("TABLE", "SEQUENCE", "MATERIALIZED VIEW")),
            "ANALYZE": ("TABLE", "INDEX", "CLUSTER"), "TRUNCATE": ("TABLE",)}
#: Error code: the statement cannot be read, re-read after DDLSUBST, or have its names mapped.
PARSE = "PARSE"
#: Error code: the executor refused the statement with a ``DdlError``.
DDL = "DDL"

_MODIFIERS = {"OR", "REPLACE", "EDITIONABLE", "NONEDITIONABLE", "EDITIONING", "FORCE", "NOFORCE",
              "UNIQUE", "BITMAP", "MULTIVALUE", "GLOBAL", "PRIVATE", "TEMPORARY", "SHARED",
              "IMMUTABLE", "BLOCKCHAIN"}
_MULTI_WORD = ("PUBLIC DATABASE LINK", "MATERIALIZED VIEW LOG", "MATERIALIZED VIEW", "PACKAGE BODY",
               "TYPE BODY", "DATABASE LINK", "PUBLIC SYNONYM")
_PART = r'("[^"]+"|[A-Za-z0-9_$#*?]+)'
_NAME_PATTERN = re.compile(_PART + r"\." + _PART)
_ORA_CODE = re.compile(r"(?:ORA-?)?0*(\d+)", re.IGNORECASE)


class DdlExecutionError(DdlError):
    """Raised by an executor: the target database refused a statement with ``code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = str(code), message


class DdlAbend(DdlError):
    """A DDLERROR rule (or the default, no rule) says ABEND: processing stops here."""

    def __init__(self, message: str, failure: DdlFailure, record: DdlRecord) -> None:
        super().__init__(message)
        self.failure, self.record = failure, record


class ObjectName(NamedTuple):
    owner: str | None
    name: str

    def __str__(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner else self.name


# -- names and patterns ------------------------------------------------------------------------
def _pattern(value: Any, where: str, target: bool = False) -> str:
    """``owner.name`` with ``*``/``?``: unquoted parts upper case, quoted ones kept as written."""
    m = _NAME_PATTERN.fullmatch(value.strip()) if isinstance(value, str) else None
    if m is None:
        raise ConfigError(f"{where}: {value!r} is not an owner.name pattern "
                          '(e.g. hr.* or "hr"."Emp*")')
    if target and "?" in value:
        raise ConfigError(f"{where}: {value!r}: a target takes * (the source's part), never ?")
    return ".".join(p if p.startswith('"') else p.upper() for p in m.groups())


def _part_matches(pattern: str, value: str) -> bool:
    quoted = pattern.startswith('"')
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c)
                 for c in pattern.strip('"'))
    return re.fullmatch(rx, value, 0 if quoted else re.IGNORECASE) is not None


def name_matches(pattern: str, name: ObjectName) -> bool:
    """Whether ``name`` matches an ``owner.name`` pattern (unquoted parts case-insensitive).

    >>> emp = ObjectName("HR", "EMPLOYEES")
    >>> name_matches("hr.emp*", emp), name_matches("hr.emp?", emp), name_matches('"hr".*', emp)
    (True, False, False)
    """
    owner, table = _NAME_PATTERN.fullmatch(pattern).groups()
    return (name.owner is not None and _part_matches(owner, name.owner)
            and _part_matches(table, name.name))


def _ident(value: str) -> exp.Identifier:
    plain = IDENTIFIER.fullmatch(value) and value == value.upper()
    return exp.to_identifier(value, quoted=not plain)


def _choice(value: Any, allowed: Iterable[str], where: str) -> str:
    allowed = tuple(allowed)
    if not isinstance(value, str) or value.upper() not in allowed:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return value.upper()


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {value!r} is not a non-empty string")
    return value


def _code_key(code: Any) -> str:
    m = _ORA_CODE.fullmatch(str(code))
    return m.group(1) if m else str(code).upper()


def split_comments(text: str) -> tuple[str, tuple[str, ...]]:
    """The statement without its comments, and the comments (``--`` and ``/* */``).

    >>> split_comments("DROP TABLE t -- gone\\n/* 'x' */")
    ('DROP TABLE t', ('gone', "'x'"))
    """
    out, comments, i, n = [], [], 0, len(text)
    while i < n:
        word_start = i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_$#")
        if text[i] in "qQ" and word_start and text.startswith("'", i + 1) and i + 2 < n:  # q'[…]'
            close = {"[": "]", "(": ")", "{": "}", "<": ">"}.get(text[i + 2], text[i + 2]) + "'"
            j = text.find(close, i + 3)
            j = n if j < 0 else j + 2
        elif text[i] in "'\"":
            j = text.find(text[i], i + 1)
            j = n if j < 0 else j + 1
        elif text.startswith("--", i) or text.startswith("/*", i):
            block = text[i] == "/"
            k = text.find("*/" if block else "\n", i + 2)
            k = n if k < 0 else k
            comments.append(text[i + 2:k].strip())
            out = ["".join(out).rstrip(" \t"), " "]
            i = min(n, k + 2) if block else k  # a line comment leaves its newline
            while i < n and text[i] in " \t":
                i += 1
            continue
        else:
            j = i + 1
        out.append(text[i:j])
        i = j
    return "".join(out).strip(), tuple(comments)


# -- configuration -------------------------------------------------------------------------------
@dataclass(frozen=True)
class DdlFilter:
    """One INCLUDE or EXCLUDE clause; it holds when every criterion given holds."""

    kind: str  # INCLUDE | EXCLUDE
    scope: str | None = None  # MAPPED | UNMAPPED | OTHER | ALL
    optype: str | None = None
    objtype: str | None = None
    objname: str | None = None  # owner.name pattern; for MAPPED DDL, the MAP's target name
    instr: str | None = None  # in the statement without comments (case-insensitive)
    instrcomments: str | None = None  # in the comments only

    def __post_init__(self) -> None:
        put = functools.partial(object.__setattr__, self)
        put("kind", _choice(self.kind, ("INCLUDE", "EXCLUDE"), "DDL clause"))
        if self.scope is not None:
            put("scope", _choice(self.scope, SCOPES, f"{self.kind} scope"))
        if self.optype is not None:
            put("optype", _choice(self.optype, OPTYPES, f"{self.kind} OPTYPE"))
        if self.objtype is not None:
            put("objtype", " ".join(_text(self.objtype, f"{self.kind} OBJTYPE").upper().split()))
        if self.objname is not None:
            put("objname", _pattern(self.objname, f"{self.kind} OBJNAME"))
        for key in ("instr", "instrcomments"):
            if getattr(self, key) is not None:
                _text(getattr(self, key), f"{self.kind} {key.upper()}")
        if all(getattr(self, k) is None for k in CRITERIA):
            raise ConfigError(f"{self.kind} needs a criterion ({', '.join(SCOPES)}, OPTYPE, "
                              "OBJTYPE, OBJNAME, INSTR, INSTRCOMMENTS); ALL takes every DDL")

    def __str__(self) -> str:
        words = [self.kind] + ([self.scope] if self.scope else [])
        for key in CRITERIA[1:]:
            value = getattr(self, key)
            if value is not None:
                quote = key in ("objtype", "instr", "instrcomments")
                words += [key.upper(), "'" + value.replace("'", "''") + "'" if quote else value]
        return " ".join(words)


def check_clauses(filters: Any, where: str) -> tuple[DdlFilter, ...]:
    filters = tuple(filters)
    if not all(isinstance(f, DdlFilter) for f in filters):
        raise ConfigError(f"{where}: clauses must be DdlFilter objects")
    kinds = {f.kind for f in filters}
    exclude_all = any(f.kind == "EXCLUDE" and str(f) == "EXCLUDE ALL" for f in filters)
    if kinds == {"EXCLUDE"} and not exclude_all:
        raise ConfigError(f"{where}: EXCLUDE without any INCLUDE never includes anything "
                          "(GoldenGate refuses it too); add an INCLUDE clause, e.g. INCLUDE ALL")
    return filters


@dataclass(frozen=True)
class MapRule:
    """MAP source, TARGET target: ``*`` in a target part takes the source's part."""

    source: str
    target: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", _pattern(self.source, "MAP source"))
        target = _pattern(self.target, f"MAP {self.source} TARGET", target=True)
        for part in _NAME_PATTERN.fullmatch(target).groups():
            # A target part names tables (``*``: the source's part): "../etc" or "a`b" never can.
            if not IDENTIFIER.fullmatch(part.strip('"').replace("*", "X")):
                raise ConfigError(f"MAP {self.source} TARGET: {part!r} is not a plain name (a letter, then "
                                  "letters, digits, _, $ or #; at most 128 characters; * for the source's part)")
        object.__setattr__(self, "target", target)

    def matches(self, name: ObjectName | None) -> bool:
        return name is not None and name_matches(self.source, name)

    def target_for(self, name: ObjectName) -> ObjectName:
        """The target of ``name``.

        >>> MapRule("hr.*", "hr_copy.bak_*").target_for(ObjectName("HR", "EMPLOYEES"))
        ObjectName(owner='HR_COPY', name='BAK_EMPLOYEES')
        """
        parts = _NAME_PATTERN.fullmatch(self.target).groups()
        owner, table = (p.strip('"').replace("*", v or "")
                        for p, v in zip(parts, name, strict=True))
        return ObjectName(owner, table)


@dataclass(frozen=True)
class DdlSubst:
    """DDLSUBST 'search' WITH 'replace' [clauses]: a case-insensitive text substitution."""

    search: str
    replace: str
    filters: tuple[DdlFilter, ...] = ()

    def __post_init__(self) -> None:
        _text(self.search, "DDLSUBST search string")
        if not isinstance(self.replace, str):
            raise ConfigError(f"DDLSUBST {self.search!r} WITH: {self.replace!r} is not a string")
        object.__setattr__(self, "filters", check_clauses(self.filters, f"DDLSUBST {self.search!r}"))

    def apply(self, text: str) -> str:
        return re.sub(re.escape(self.search), lambda _: self.replace, text, flags=re.IGNORECASE)


@dataclass(frozen=True)
class DdlErrorRule:
    """DDLERROR {code | DEFAULT} {ABEND | IGNORE | DISCARD} [RETRYOP MAXRETRIES n] [clauses]."""

    error: str  # an Oracle error number (942, ORA-00942), PARSE, DDL, or DEFAULT
    action: str
    filters: tuple[DdlFilter, ...] = ()
    retries: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.error, int) and not isinstance(self.error, bool):
            object.__setattr__(self, "error", str(self.error))
        if not isinstance(self.error, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", self.error):
            raise ConfigError(f"DDLERROR: {self.error!r} is not an error code (942, ORA-00942, "
                              "PARSE) or DEFAULT")
        object.__setattr__(self, "error", _code_key(self.error))
        object.__setattr__(self, "action", _choice(self.action, ACTIONS, f"DDLERROR {self.error}"))
        object.__setattr__(self, "filters", check_clauses(self.filters, f"DDLERROR {self.error}"))
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or self.retries < 0:
            raise ConfigError(f"DDLERROR {self.error} MAXRETRIES: {self.retries!r} "
                              "is not a count >= 0")

    def __str__(self) -> str:
        return " ".join([self.error, self.action] + [str(f) for f in self.filters])


@dataclass(frozen=True)
class GgDdlConfig:
    """The DDL, MAP, DDLSUBST, DDLERROR and DDLOPTIONS parameters of one Replicat."""

    filters: tuple[DdlFilter, ...] = ()
    maps: tuple[MapRule, ...] = ()
    mapderived: bool = True
    substs: tuple[DdlSubst, ...] = ()
    error_rules: tuple[DdlErrorRule, ...] = ()
    remove_comments: str | None = None  # BEFORE | AFTER
    ignore_replicates: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "filters", check_clauses(self.filters, "DDL"))
        for key, cls in (("maps", MapRule), ("substs", DdlSubst), ("error_rules", DdlErrorRule)):
            value = tuple(getattr(self, key))
            if not all(isinstance(v, cls) for v in value):
                raise ConfigError(f"GoldenGate DDL configuration {key}: "
                                  f"every item must be a {cls.__name__}")
            object.__setattr__(self, key, value)
        for key in ("mapderived", "ignore_replicates"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(f"DDLOPTIONS {key}: {getattr(self, key)!r} is not true or false")
        if self.remove_comments is not None:
            when = _choice(self.remove_comments, ("BEFORE", "AFTER"), "DDLOPTIONS REMOVECOMMENTS")
            object.__setattr__(self, "remove_comments", when)


# -- records, state, outcome ----------------------------------------------------------------------
@dataclass(frozen=True)
class DdlRecord:
    """A captured DDL record, with what the capture says of it: ``owner`` qualifies the names
    the statement leaves unqualified, ``name`` stands where the parse finds no object name,
    ``object_type`` (when given) is the object type."""

    text: str
    tag: str | None = None  # None (or empty): a null tag, DDL made by a user
    owner: str | None = None
    name: str | None = None
    object_type: str | None = None


@dataclass(frozen=True)
class DdlFailure:
    code: str  # the executor's code (942, ORA-00942, …), PARSE or DDL
    message: str


@dataclass(frozen=True)
class TargetDdl:
    """The statement for one target; ``kind`` None while still in progress."""

    name: ObjectName | None  # the base object on the target
    text: str
    map: MapRule | None = None
    statement: DdlStatement | None = None
    kind: str | None = None  # APPLIED | EXCLUDED | IGNORED_ERROR | DISCARDED
    reason: str | None = None
    error: DdlFailure | None = None
    tree: exp.Expression | None = field(default=None, compare=False, repr=False)  # before DDLSUBST

    @property
    def live(self) -> bool:
        return self.kind is None and self.error is None


@dataclass(frozen=True)
class DdlState:
    """What the steps know of one record so far."""

    record: DdlRecord
    text: str
    execute: Callable[[TargetDdl], Any] | None = field(default=None, compare=False, repr=False)
    number_policy: str = "decimal"  # how a NUMBER without precision reads (the channel's)
    comments: tuple[str, ...] = ()
    tree: exp.Expression | None = field(default=None, compare=False, repr=False)
    optype: str | None = None
    object_type: str | None = None
    base: ObjectName | None = None
    derived: ObjectName | None = None  # index/trigger/synonym name, or a RENAME's new name
    rename: bool = False
    scope: str | None = None
    maps: tuple[MapRule, ...] = ()  # the MAPs naming the base object
    targets: tuple[TargetDdl, ...] = ()
    outcome: str | None = None
    reason: str | None = None
    trail: tuple[str, ...] = ()


@dataclass(frozen=True)
class DdlOutcome:
    """How one record ended, and the statement for each target."""

    kind: str  # one of OUTCOMES
    scope: str | None
    targets: tuple[TargetDdl, ...]
    reason: str | None
    trail: tuple[str, ...]
    record: DdlRecord  # kept whole, e.g. for a DISCARDED record's error queue

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(t.text for t in self.targets if t.kind == "APPLIED")

    @property
    def statements(self) -> tuple[DdlStatement, ...]:
        return tuple(t.statement for t in self.targets if t.kind == "APPLIED")

    @property
    def errors(self) -> tuple[DdlFailure, ...]:
        return tuple(t.error for t in self.targets if t.error is not None)


# -- reading statements ------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return [t.text.upper() for t in OracleDdl().tokenize(text)]


def _classify(words: list[str]) -> tuple[str | None, str | None]:
    """(operation, object type) from a statement's words."""
    if not words:
        return None, None
    verb, rest = words[0], words[1:]
    if verb == "RENAME":
        return verb, "TABLE"
    if verb in ("GRANT", "REVOKE"):  # object privileges name an object; system privileges do not
        return verb, "TABLE" if "ON" in rest else None
    if verb == "COMMENT":
        rest = rest[1:]
        if rest[:1] == ["COLUMN"]:
            return verb, "TABLE"
    while rest and rest[0] in _MODIFIERS:
        rest = rest[1:]
    for kind in _MULTI_WORD:
        if " ".join(rest[:kind.count(" ") + 1]) == kind:
            return verb, kind
    return verb, rest[0] if rest else None


def _objects(tree: exp.Expression | None) -> tuple[exp.Expression | None, exp.Expression | None]:
    """The nodes naming the base and the derived object of a statement's tree."""
    if isinstance(tree, exp.Create):
        if isinstance(tree.this, exp.Index):
            return tree.this.args.get("table"), tree.this.this
        return (tree.this.this if isinstance(tree.this, exp.Schema) else tree.this), None
    if isinstance(tree, exp.Alter):
        new = [a.this for a in tree.args.get("actions") or [] if isinstance(a, exp.AlterRename)]
        return tree.this, new[0] if new else None
    if isinstance(tree, exp.Drop):
        return (tree.args.get("tables") or [tree.this])[0], None
    if isinstance(tree, exp.TruncateTable):
        return tree.expressions[0], None
    if isinstance(tree, exp.Comment):
        return tree.this, None
    if isinstance(tree, (exp.Grant, exp.Revoke)):
        return tree.args.get("securable"), None
    return None, None


def _node_name(node: exp.Expression | None, owner: str | None) -> ObjectName | None:
    if isinstance(node, exp.Column):  # COMMENT ON COLUMN owner.table.column: the table
        db, this = node.args.get("db"), node.args.get("table")
    elif isinstance(node, exp.Table):
        db, this = node.args.get("db"), node.this
    else:
        db, this = None, node
    if not isinstance(this, exp.Identifier):
        return None
    return ObjectName(_norm(db) if isinstance(db, exp.Identifier) else owner, _norm(this))


def _norm(ident: exp.Identifier) -> str:
    return ident.this if ident.quoted else ident.this.upper()


def _set_name(node: exp.Expression, name: ObjectName) -> None:
    """Name ``node`` (a Table, Column or Identifier) ``name``, qualified if it has an owner."""
    owner = _ident(name.owner) if name.owner else None
    if isinstance(node, exp.Column):
        node.set("table", _ident(name.name))
        node.set("db", owner)
    elif isinstance(node, exp.Table):
        node.set("this", _ident(name.name))
        node.set("db", owner)
    else:
        node.replace(exp.Table(this=_ident(name.name), db=owner))


def _span(node: exp.Expression | None) -> tuple[int, int] | None:
    """Where in the parsed text the name ``node`` carries is written (first and last
    character): its owner and object identifiers (a COMMENT ON COLUMN keeps its column)."""
    if isinstance(node, exp.Column):
        parts = [node.args.get("db"), node.args.get("table")]
    elif isinstance(node, exp.Table):
        parts = [node.args.get("db"), node.this]
    else:
        parts = [node]
    idents = [p for p in parts if p is not None]
    if not idents or not all(isinstance(i, exp.Identifier) and "start" in i.meta for i in idents):
        return None
    return min(i.meta["start"] for i in idents), max(i.meta["end"] for i in idents)


def named_in_text(text: str, which: int, name: ObjectName) -> tuple[str, exp.Expression] | None:
    """``text`` with its base (``which`` 0) or derived (1) object named ``name``, and the tree
    of the result. The name is replaced where it is written, so everything else stays as
    captured, clauses the parser only reads (``NOT NULL ENABLE``, ``SEGMENT CREATION``,
    ``LOB (…) STORE AS``, ``VIRTUAL``) included; a text the parser cannot read as one
    statement, or whose name it reads without its place, gives None."""
    try:
        trees = [t for t in sqlglot.parse(text, read=OracleDdl) if t is not None]
    except sqlglot.errors.ParseError:
        return None
    if len(trees) != 1 or isinstance(trees[0], exp.Command):
        return None
    node = _objects(trees[0])[which]
    span = _span(node)
    if span is None:
        return None
    owner = _ident(name.owner) if name.owner else None
    written = exp.Table(this=_ident(name.name), db=owner).sql(dialect=OracleDdl)
    _set_name(node, name)
    return text[:span[0]] + written + text[span[1] + 1:], trees[0]


class _Facts(NamedTuple):
    scope: str | None
    optype: str | None
    objtype: str | None
    name: ObjectName | None
    text: str


def _facts(state: DdlState, target: TargetDdl, text: str | None = None) -> _Facts:
    text = target.text if text is None else text
    return _Facts(state.scope, state.optype, state.object_type, target.name, text)


def _holds(f: DdlFilter, facts: _Facts) -> bool:
    code, comments = split_comments(facts.text)
    return (f.scope in (None, "ALL") or f.scope == facts.scope) and (
        f.optype is None or f.optype == facts.optype) and (
        f.objtype is None or f.objtype == facts.objtype) and (
        f.objname is None or (facts.name is not None and name_matches(f.objname, facts.name))) and (
        f.instr is None or f.instr.lower() in code.lower()) and (
        f.instrcomments is None or any(f.instrcomments.lower() in c.lower() for c in comments))


def _decide(filters: tuple[DdlFilter, ...], facts: _Facts) -> tuple[bool, str]:
    """Included or not, and why: an EXCLUDE that holds wins; else an INCLUDE must hold."""
    if not filters:
        return True, "no INCLUDE or EXCLUDE clause"
    for kind in ("EXCLUDE", "INCLUDE"):
        for f in filters:
            if f.kind == kind and _holds(f, facts):
                return kind == "INCLUDE", f"{kind.lower()}d by {f}"
    return False, "no INCLUDE clause holds"


def _error_rule(config: GgDdlConfig, failure: DdlFailure, facts: _Facts) -> DdlErrorRule | None:
    """The first rule for the code whose clauses hold, else the first such DEFAULT rule."""
    for wanted in (_code_key(failure.code), "DEFAULT"):
        for rule in config.error_rules:
            if rule.error == wanted and _decide(rule.filters, facts)[0]:
                return rule
    return None


# -- the steps ----------------------------------------------------------------------------------
def _step(fn: Callable | None = None, *, always: bool = False) -> Callable:
    """Skip the step once the record is settled or (unless ``always``) no target is live."""
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(state: DdlState, config: GgDdlConfig) -> DdlState:
            if state.outcome is not None:
                return state
            if not always and state.targets and not any(t.live for t in state.targets):
                return state
            done = fn(state, config)
            return replace(done, trail=done.trail + (fn.__name__,))
        return run
    return wrap(fn) if fn is not None else wrap


def _each(state: DdlState, fn: Callable[[TargetDdl], TargetDdl]) -> DdlState:
    return replace(state, targets=tuple(fn(t) if t.live else t for t in state.targets))


def _why(targets: tuple[TargetDdl, ...]) -> str | None:
    many = len(targets) > 1
    return "; ".join(dict.fromkeys(f"{t.name}: {t.reason}" if many else t.reason
                                   for t in targets if t.reason)) or None


def _failed(state: DdlState, code: str, message: str) -> DdlState:
    failed = TargetDdl(state.base, state.text, error=DdlFailure(code, message))
    return replace(state, targets=(failed,))


@_step
def separate_comments(state: DdlState, config: GgDdlConfig) -> DdlState:
    """Set the statement's comments apart (INSTRCOMMENTS reads them)."""
    return replace(state, comments=split_comments(state.text)[1])


@_step
def ignore_replicates(state: DdlState, config: GgDdlConfig) -> DdlState:
    """IGNOREREPLICATES: DDL with a tag was made by an apply; GETREPLICATES keeps it."""
    if config.ignore_replicates and state.record.tag:
        return replace(state, outcome="IGNORED_REPLICATE",
                       reason=f"tag {state.record.tag}: DDL made by an apply (IGNOREREPLICATES)")
    return state


@_step
def identify(state: DdlState, config: GgDdlConfig) -> DdlState:
    """Operation, object type, base and derived object; a RENAME is flagged."""
    rec = state.record
    try:
        words = _words(state.text)
    except sqlglot.errors.TokenError as e:
        return _failed(state, PARSE, f"DDL does not tokenize: {e}")
    try:
        trees = [t for t in sqlglot.parse(state.text, read=OracleDdl) if t is not None]
    except sqlglot.errors.ParseError:
        trees = []  # read again (and refused with the reason) after DDLSUBST
    tree = trees[0] if len(trees) == 1 and not isinstance(trees[0], exp.Command) else None
    optype, objtype = _classify(words)
    base_node, derived_node = _objects(tree)
    base = _node_name(base_node, rec.owner)
    if base is None and rec.name:
        base = ObjectName(rec.owner, rec.name)
    rename = optype == "RENAME" or (isinstance(tree, exp.Alter) and derived_node is not None)
    derived = _node_name(derived_node, base.owner if rename and base else rec.owner)
    objtype = " ".join(rec.object_type.upper().split()) if rec.object_type else objtype
    return replace(state, tree=tree, optype="RENAME" if rename else optype, object_type=objtype,
                   base=base, derived=derived, rename=rename)


@_step
def rename_to_alter(state: DdlState, config: GgDdlConfig) -> DdlState:
    """RENAME a TO b becomes ALTER TABLE a RENAME TO b."""
    if state.rename and state.tree is not None and _words(state.text)[:1] == ["RENAME"]:
        return replace(state, text=state.tree.sql(dialect=OracleDdl))
    return state


@_step
def remove_comments_before(state: DdlState, config: GgDdlConfig) -> DdlState:
    """DDLOPTIONS REMOVECOMMENTS BEFORE: nothing later sees the comments."""
    if config.remove_comments != "BEFORE":
        return state
    tree = state.tree.copy() if state.tree is not None else None
    for node in tree.walk() if tree is not None else ():
        node.comments = None
    return replace(state, text=split_comments(state.text)[0], comments=(), tree=tree)


@_step
def determine_scope(state: DdlState, config: GgDdlConfig) -> DdlState:
    """OTHER if the object can't be mapped; MAPPED if a MAP names the base object; else UNMAPPED."""
    if state.object_type not in MAPPABLE.get(state.optype, ()):
        return replace(state, scope="OTHER")
    maps = tuple(m for m in config.maps if m.matches(state.base))
    if not maps and state.rename:
        maps = tuple(m for m in config.maps if m.matches(state.derived))
    return replace(state, scope="MAPPED" if maps else "UNMAPPED", maps=maps)


@_step
def map_base(state: DdlState, config: GgDdlConfig) -> DdlState:
    """One target per MAP naming the base object, its name replaced where it is written."""
    if state.scope != "MAPPED":
        return replace(state, targets=(TargetDdl(state.base, state.text),))
    targets = []
    for rule in state.maps:  # without a tree, ``reparse`` refuses the target (after the filters)
        name, tree, text = rule.target_for(state.base), None, state.text
        if state.tree is not None:
            done = named_in_text(text, 0, name)
            if done is not None:
                text, tree = done
        targets.append(TargetDdl(name, text, map=rule, tree=tree))
    return replace(state, targets=tuple(targets))


@_step
def map_derived(state: DdlState, config: GgDdlConfig) -> DdlState:
    """MAPDERIVED: the derived object follows its own MAP, else the base target's schema."""
    if state.derived is None or state.scope != "MAPPED":
        return state

    def one(t: TargetDdl) -> TargetDdl:
        if t.tree is None:
            return t
        rule = next((m for m in (t.map, *config.maps) if m.matches(state.derived)), None)
        if state.rename:  # the new name: never qualified, converted by a MAP that names it
            if not config.mapderived or rule is None:
                return t
            name = ObjectName(None, rule.target_for(state.derived).name)
        elif not config.mapderived:
            name = state.derived  # as on the source
        else:  # its own MAP, else the base target's schema
            name = (rule.target_for(state.derived) if rule
                    else ObjectName(t.name.owner, state.derived.name))
        done = named_in_text(t.text, 1, name)
        if done is None:  # refused by ``reparse``, after the filters
            return replace(t, tree=None)
        text, tree = done
        return replace(t, tree=tree, text=text)
    return _each(state, one)


@_step
def filter_ddl(state: DdlState, config: GgDdlConfig) -> DdlState:
    """DDL INCLUDE / EXCLUDE on each target; the record is EXCLUDED when no target is left."""
    def one(t: TargetDdl) -> TargetDdl:
        keep, why = _decide(config.filters, _facts(state, t))
        return replace(t, reason=why, kind=None if keep else "EXCLUDED")
    done = _each(state, one)
    if all(t.kind == "EXCLUDED" for t in done.targets):
        return replace(done, outcome="EXCLUDED", reason=_why(done.targets))
    return done


@_step
def substitute(state: DdlState, config: GgDdlConfig) -> DdlState:
    """Every DDLSUBST whose own clauses hold, in file order, each on the last one's output."""
    def one(t: TargetDdl) -> TargetDdl:
        text = t.text
        for s in config.substs:
            if _decide(s.filters, _facts(state, t, text))[0]:
                text = s.apply(text)
        return replace(t, text=text)
    return _each(state, one)


@_step
def remove_comments_after(state: DdlState, config: GgDdlConfig) -> DdlState:
    """DDLOPTIONS REMOVECOMMENTS AFTER."""
    if config.remove_comments != "AFTER":
        return state
    return _each(state, lambda t: replace(t, text=split_comments(t.text)[0]))


@_step
def reparse(state: DdlState, config: GgDdlConfig) -> DdlState:
    """Read each target's text again: what DDLSUBST made must parse."""
    def one(t: TargetDdl) -> TargetDdl:
        if t.map is not None and t.tree is None:
            why = "read only as a command: the MAP cannot replace its names"
            return replace(t, error=DdlFailure(PARSE, why))
        try:
            return replace(t, statement=parse_ddl(t.text, state.number_policy))
        except DdlError as e:
            return replace(t, error=DdlFailure(PARSE, str(e)))
    return _each(state, one)


@_step
def execute(state: DdlState, config: GgDdlConfig) -> DdlState:
    """Run each target with the executor, retrying as the DDLERROR rule's RETRYOP allows."""
    if state.execute is None:
        return state

    def one(t: TargetDdl) -> TargetDdl:
        tries = 0
        while True:
            try:
                state.execute(t)
                return t
            except DdlExecutionError as e:
                failure = DdlFailure(e.code, e.message)
            except DdlError as e:
                failure = DdlFailure(DDL, str(e))
            rule = _error_rule(config, failure, _facts(state, t))
            if rule is None or tries >= rule.retries:
                return replace(t, error=failure)
            tries += 1
    return _each(state, one)


@_step(always=True)
def handle_errors(state: DdlState, config: GgDdlConfig) -> DdlState:
    """DDLERROR: the rule for the code, else DEFAULT, else ABEND, decides each failure."""
    def one(t: TargetDdl) -> TargetDdl:
        if t.error is None or t.kind is not None:
            return t
        rule = _error_rule(config, t.error, _facts(state, t))
        how = f"DDLERROR {rule}" if rule else "no DDLERROR rule: GoldenGate abends"
        what = f"{t.error.code} on {t.name or 'the statement'}: {t.error.message} ({how})"
        if rule is None or rule.action == "ABEND":
            raise DdlAbend(what, t.error, state.record)
        kind = "IGNORED_ERROR" if rule.action == "IGNORE" else "DISCARDED"
        return replace(t, kind=kind, reason=what)
    return replace(state, targets=tuple(one(t) for t in state.targets))


@_step(always=True)
def conclude(state: DdlState, config: GgDdlConfig) -> DdlState:
    """Live targets are APPLIED; the record's outcome is the worst of its targets'."""
    targets = tuple(replace(t, kind="APPLIED") if t.live else t for t in state.targets)
    kinds = {t.kind for t in targets}
    kind = next((k for k in ("DISCARDED", "IGNORED_ERROR") if k in kinds), "APPLIED")
    return replace(state, targets=targets, outcome=kind, reason=_why(targets))


#: The procedure, in order; a caller may pass another tuple to ``process``.
STEPS = (separate_comments, ignore_replicates, identify, rename_to_alter, remove_comments_before,
         determine_scope, map_base, map_derived, filter_ddl, substitute, remove_comments_after,
         reparse, execute, handle_errors, conclude)


def process(record: DdlRecord, config: GgDdlConfig,
            execute: Callable[[TargetDdl], Any] | None = None,
            steps: tuple[Callable, ...] = STEPS, number_policy: str = "decimal") -> DdlOutcome:
    """Run ``steps`` on one record. ``execute`` is called with each target (a ``TargetDdl``:
    its text and parsed statement) and may raise ``DdlExecutionError`` (or ``DdlError``, code
    DDL); a DDLERROR rule saying ABEND (or no rule at all) raises ``DdlAbend``.
    ``number_policy``: how the re-parse reads a NUMBER without precision (as the record was).

    >>> from silver.gg_params import parse_params
    >>> cfg = parse_params("MAP hr.*, TARGET hr_copy.*;")
    >>> process(DdlRecord("ALTER TABLE hr.employees ADD (notes VARCHAR2(100))"), cfg).texts
    ('ALTER TABLE HR_COPY.EMPLOYEES ADD (notes VARCHAR2(100))',)
    """
    state = DdlState(record=record, text=record.text, execute=execute, number_policy=number_policy)
    for step in steps:
        state = step(state, config)
    if state.outcome is None:
        state = conclude(state, config)
    return DdlOutcome(state.outcome, state.scope, state.targets, state.reason, state.trail, record)

