"""DDL records as structured changes, and the dictionary revision each one makes.

``parse_ddl`` reads a DDL record's text with sqlglot (the Oracle dialect extended in
``silver.oracle_ddl``) into a ``DdlStatement``: what kind of statement, on which object,
and a tuple of typed actions. ``evolve`` applies a statement's actions to the table's
dictionary entry (a ``TableDef``) and gives the next revision. Both are pure: no Spark.

A statement the parser cannot read raises ``DdlError`` with the reason; the caller routes
the record to DDL error handling (it is never dropped). Statements on objects that carry
no rows (views, synonyms, triggers, procedures, functions, packages, users, roles,
directories, sequences, indexes, grants, comments) are recognised by their leading
keywords and come back as ``kind == "IGNORED"`` with the object type.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from lakestreams.config import IDENTIFIER
from lakestreams.errors import DdlError
from silver.dictionary import (
    ColumnDef,
    TableDef,
    _ident,
    is_virtual,
    parse_create_table,
    read_column,
    read_constraint,
    refuse_subqueries,
    table_with_keys,
)
from silver.oracle_ddl import ConstraintRename, OracleDdl, ProcedureCalls
from silver.types import ColumnType, map_oracle_type

#: Object types whose DDL changes no table structure (still logged, and scoped by filters).
IGNORED_OBJECTS = (
    "VIEW", "MATERIALIZED VIEW", "SYNONYM", "PUBLIC SYNONYM", "TRIGGER", "PROCEDURE", "FUNCTION",
    "PACKAGE", "PACKAGE BODY", "TYPE", "TYPE BODY", "USER", "ROLE", "DIRECTORY", "SEQUENCE", "INDEX",
    "UNIQUE INDEX", "BITMAP INDEX", "TABLESPACE", "DATABASE LINK", "PROFILE", "CONTEXT", "LIBRARY", "JAVA", "CLUSTER",
)
#: Keys the replication key is chosen from: constraints, and unique indexes on columns.
KEY_KINDS = ("PRIMARY KEY", "UNIQUE", "UNIQUE INDEX")
#: Statements that act on privileges or metadata only.
IGNORED_STATEMENTS = ("GRANT", "REVOKE", "COMMENT", "ANALYZE", "AUDIT", "NOAUDIT", "PURGE", "FLASHBACK")


@dataclass(frozen=True)
class ColumnSpec:
    """A column as a DDL statement names it. In MODIFY, ``None`` means "not stated"."""

    name: str
    type: ColumnType | None = None
    nullable: bool | None = None
    default: str | None = None  # the default expression, as Oracle SQL sqlglot regenerates
    virtual: bool = False  # a virtual column (AS (…)): no record carries its value


@dataclass(frozen=True)
class AddColumn:
    column: ColumnSpec


@dataclass(frozen=True)
class DropColumn:
    name: str


@dataclass(frozen=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True)
class ModifyColumn:
    column: ColumnSpec


@dataclass(frozen=True)
class AddConstraint:
    kind: str  # PRIMARY KEY | UNIQUE | FOREIGN KEY | CHECK | UNIQUE INDEX
    columns: tuple[str, ...] = ()
    name: str | None = None
    #: A UNIQUE INDEX's schema where the statement names it (``CREATE UNIQUE INDEX ops.k_uk
    #: ON hr.k``); else the record's owner's. Where the index lives, not what it does to
    #: the table: not compared (a MAP to another schema changes it).
    index_owner: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class DropConstraint:
    name: str | None = None  # DROP CONSTRAINT name
    kind: str | None = None  # DROP PRIMARY KEY | DROP UNIQUE (columns) | INDEX (DROP INDEX name)
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class RenameIndex:
    """ALTER INDEX … RENAME TO ``name``: a unique index keeps its key under its new name
    (``old``: the index's name, set once ``silver.evolution.read_ddl`` found its table)."""

    name: str
    old: str | None = None


@dataclass(frozen=True)
class RenameConstraint:
    """ALTER TABLE … RENAME CONSTRAINT ``old`` TO ``name``: a key keeps its columns."""

    old: str
    name: str


@dataclass(frozen=True)
class RenameTable:
    owner: str | None  # None: the same owner
    name: str


@dataclass(frozen=True)
class Physical:
    """A storage or partition clause: no effect on columns or keys."""

    text: str


@dataclass(frozen=True)
class Redefinition:
    """``DBMS_REDEFINITION.FINISH_REDEF_TABLE``: the table takes the structure of the
    interim table ``owner.name`` (and the interim the table's); ``partition``: only that
    partition was redefined (storage: the table's structure is unchanged)."""

    owner: str
    name: str
    partition: str | None = None


Action = (AddColumn | DropColumn | RenameColumn | ModifyColumn | AddConstraint | DropConstraint | RenameIndex
          | RenameConstraint | RenameTable | Physical | Redefinition)


@dataclass(frozen=True)
class DdlStatement:
    """One DDL record, understood.

    ``kind``: CREATE TABLE, CREATE TABLE AS SELECT, ALTER TABLE, DROP TABLE, TRUNCATE
    TABLE, CREATE UNIQUE INDEX (``owner``/``name``: its table; one ``AddConstraint`` UNIQUE
    INDEX named as the index: a replication key candidate), DROP INDEX and ALTER INDEX (a
    rename; ``owner``/``name``: the index; ``silver.evolution.read_ddl`` finds the table whose
    key it is), or IGNORED
    (``object_type`` says what it was about)."""

    kind: str
    object_type: str
    owner: str | None
    name: str | None
    actions: tuple[Action, ...] = ()
    table: TableDef | None = None  # CREATE TABLE: the new table's first revision

    @property
    def operation(self) -> str:
        """The statement's operation in GoldenGate's ``OPTYPE`` sense (CREATE, ALTER, …)."""
        return "RENAME" if any(isinstance(a, RenameTable) for a in self.actions) else self.kind.split(" ")[0]


def _head(text: str) -> list[str]:
    """The statement's first few words (tokens, upper case): enough to tell its object type."""
    try:
        toks = OracleDdl().tokenize(text)
    except sqlglot.errors.TokenError as e:
        raise DdlError(f"DDL does not tokenize: {e}") from e
    return [tk.text.upper() for tk in toks[:6] if tk.token_type != TokenType.SEMICOLON]


def _ignored_object(words: list[str]) -> str | None:
    """The object type of a CREATE/ALTER/DROP of an object without rows, else None."""
    if not words:
        return None
    if words[0] in IGNORED_STATEMENTS:
        return words[0]
    if words[0] not in ("CREATE", "ALTER", "DROP"):
        return None
    rest = words[1:]
    while rest and rest[0] in ("OR", "REPLACE", "EDITIONABLE", "NONEDITIONABLE", "FORCE", "NOFORCE", "AND",
                               "COMPILE", "SHARED", "NO"):
        rest = rest[1:]
    for n in (3, 2, 1):
        kind = " ".join(rest[:n])
        if kind in IGNORED_OBJECTS:
            return kind
    return None


def _name(table: exp.Expression) -> tuple[str | None, str]:
    owner = table.args.get("db")
    return (_ident(owner) if owner else None), _ident(table.this)


def _added_column(node: exp.ColumnDef, number_policy: str) -> list[Action]:
    """ADD of one column, then the keys declared inline with it (``id NUMBER CONSTRAINT
    e_pk PRIMARY KEY``), as ADD CONSTRAINT would declare them."""
    name, ctype, nullable, default, keys = read_column(node, number_policy)
    return [AddColumn(ColumnSpec(name, ctype, nullable, default, is_virtual(node))),
            *(AddConstraint(kind, columns, key_name) for key_name, kind, columns in keys)]


def _constraint(node: exp.Expression) -> AddConstraint:
    read = read_constraint(node)
    if read is None:
        raise DdlError(f"constraint is not understood: {node.sql('oracle')}")
    name, kind, columns = read
    return AddConstraint(kind, columns, name)


def _alter_actions(tree: exp.Alter, number_policy: str) -> tuple[Action, ...]:
    actions: list[Action] = []
    for a in tree.args.get("actions") or []:
        if isinstance(a, exp.Schema):  # ADD (c1 type, c2 type)
            for item in a.expressions:
                if not isinstance(item, exp.ColumnDef):
                    actions.append(_constraint(item))
                    continue
                actions.extend(_added_column(item, number_policy))
        elif isinstance(a, exp.ColumnDef):
            actions.extend(_added_column(a, number_policy))
        elif isinstance(a, exp.AddConstraint):
            actions.extend(_constraint(c) for c in a.expressions)
        elif isinstance(a, exp.Drop):
            kind = str(a.args.get("kind") or "").upper()
            if kind == "COLUMN":
                actions.extend(DropColumn(_ident(c)) for c in a.args.get("tables") or [])
            elif kind == "CONSTRAINT":
                actions.extend(DropConstraint(name=_ident(c.this)) for c in a.args.get("tables") or [])
            elif kind == "PRIMARY KEY":
                actions.append(DropConstraint(kind="PRIMARY KEY"))
            elif kind == "UNIQUE":
                actions.append(DropConstraint(kind="UNIQUE", columns=tuple(_ident(c) for c in a.args["tables"])))
            else:
                raise DdlError(f"ALTER TABLE DROP {kind or '?'} is not understood")
        elif isinstance(a, exp.RenameColumn):
            actions.append(RenameColumn(_ident(a.this), _ident(a.args["to"])))
        elif isinstance(a, ConstraintRename):
            actions.append(RenameConstraint(_ident(a.this), _ident(a.args["to"])))
        elif isinstance(a, exp.AlterRename):
            owner, name = _name(a.this)
            actions.append(RenameTable(owner, name))
        elif isinstance(a, exp.AlterColumn):
            dtype, default, allow_null = a.args.get("dtype"), a.args.get("default"), a.args.get("allow_null")
            actions.append(ModifyColumn(ColumnSpec(
                _ident(a.this), map_oracle_type(dtype, number_policy) if dtype else None,
                None if allow_null is None else bool(allow_null), default.sql("oracle") if default else None)))
            actions.extend(Physical(text) for text in a.meta.get("properties", ()))
        elif isinstance(a, exp.Property) and a.name == "PHYSICAL":
            actions.append(Physical(a.args["value"].name))
        else:
            raise DdlError(f"ALTER TABLE action is not understood: {a.sql('oracle')}")
    for o in tree.args.get("options") or []:
        if isinstance(o, exp.Property) and o.name == "PHYSICAL":
            actions.append(Physical(o.args["value"].name))
        else:  # TABLESPACE, PCTFREE, STORAGE, LOGGING, …: physical too
            actions.append(Physical(o.sql("oracle")))
    if not actions:
        raise DdlError("ALTER TABLE without an action this parser understands")
    return tuple(actions)


def _one_table(tables: list[exp.Expression], what: str) -> exp.Expression:
    """The one table of a DROP or TRUNCATE: Oracle's take one, and acting on the first of a
    list would leave the others unsaid."""
    if len(tables) != 1:
        names = ", ".join(t.sql("oracle") for t in tables)
        raise DdlError(f"{what} names one table in Oracle; this one names {len(tables)}: {names}")
    return tables[0]


def _unique_index(index: exp.Index) -> DdlStatement:
    """CREATE UNIQUE INDEX on plain columns: a unique key of its table, named as the index.
    On expressions (``UPPER(email)``) it is no key a row can be found by: ignored."""
    table = index.args.get("table")
    params = index.args.get("params")
    ordered = (params.args.get("columns") if params else None) or []
    plain = [o.this for o in ordered if isinstance(o, exp.Ordered) and isinstance(o.this, exp.Column)]
    if table is None or not ordered or len(plain) != len(ordered):
        return DdlStatement("IGNORED", "UNIQUE INDEX", None, None)
    node = index.this
    index_owner, name = _name(node) if isinstance(node, exp.Table) else (None, _ident(node))
    owner, table_name = _name(table)
    key = AddConstraint("UNIQUE INDEX", tuple(_ident(c.this) for c in plain), name, index_owner)
    return DdlStatement("CREATE UNIQUE INDEX", "UNIQUE INDEX", owner, table_name, (key,))


def _alter_index(text: str) -> DdlStatement:
    """ALTER INDEX … RENAME TO: a unique index keeps its key under the new name (DROP INDEX
    names it so afterwards). Any other ALTER INDEX (REBUILD, UNUSABLE, …) is physical."""
    dialect = OracleDdl()
    try:
        tokens = dialect.tokenize(text)
    except sqlglot.errors.TokenError:
        tokens = []
    if "RENAME" not in (t.text.upper() for t in tokens):  # REBUILD, UNUSABLE, …: not parsed (sqlglot warns of each)
        return DdlStatement("IGNORED", "INDEX", None, None)
    try:  # the tokens read above, parsed
        trees = [t for t in dialect.parser().parse(tokens, text) if t is not None]
    except sqlglot.errors.ParseError:
        trees = []
    tree = trees[0] if len(trees) == 1 else None
    actions = (tree.args.get("actions") or []) if isinstance(tree, exp.Alter) else []
    if len(actions) == 1 and isinstance(actions[0], exp.AlterRename):
        owner, name = _name(tree.this)
        _, new = _name(actions[0].this)
        return DdlStatement("ALTER INDEX", "INDEX", owner, name, (RenameIndex(new),))
    return DdlStatement("IGNORED", "INDEX", None, None)


def parse_ddl(text: str, number_policy: str = "decimal") -> DdlStatement:
    """A DDL record's text as a ``DdlStatement``.

    >>> s = parse_ddl("ALTER TABLE hr.emp MODIFY (name VARCHAR2(50) NOT NULL)")
    >>> (s.kind, s.owner, s.name, s.actions[0].column.name, s.actions[0].column.nullable)
    ('ALTER TABLE', 'HR', 'EMP', 'NAME', False)
    >>> parse_ddl("RENAME emp TO staff").actions
    (RenameTable(owner=None, name='STAFF'),)
    >>> parse_ddl("CREATE OR REPLACE VIEW hr.v AS SELECT 1 FROM dual").object_type
    'VIEW'
    """
    if not text or not text.strip():
        raise DdlError("the DDL record has no text")
    words = _head(text)
    if words[:2] == ["ALTER", "INDEX"]:
        return _alter_index(text)
    # A unique index is a key the replication key may be chosen from (HVR's hierarchy).
    key_index = words[:3] == ["CREATE", "UNIQUE", "INDEX"] or words[:2] == ["DROP", "INDEX"]
    ignored = None if key_index else _ignored_object(words)
    if ignored is not None:
        return DdlStatement("IGNORED", ignored, None, None)
    try:
        trees = [t for t in sqlglot.parse(text, read=OracleDdl) if t is not None]
    except sqlglot.errors.ParseError as e:
        raise DdlError(f"DDL does not parse: {str(e).splitlines()[0]}") from e
    if len(trees) != 1:
        raise DdlError(f"a DDL record holds one statement; this one holds {len(trees)}")
    tree = trees[0]
    if isinstance(tree, exp.Alter):
        refuse_subqueries(tree)  # CREATE TABLE: parse_create_table checks its column list
    if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE":
        if isinstance(tree.this, exp.Schema):
            t = parse_create_table(text, number_policy, tree=tree, require_owner=False)
            return DdlStatement("CREATE TABLE", "TABLE", t.owner, t.name, table=t)
        owner, name = _name(tree.this)
        return DdlStatement("CREATE TABLE AS SELECT", "TABLE", owner, name)
    if isinstance(tree, exp.Alter) and str(tree.args.get("kind", "")).upper() == "TABLE":
        owner, name = _name(tree.this)
        return DdlStatement("ALTER TABLE", "TABLE", owner, name, _alter_actions(tree, number_policy))
    if isinstance(tree, exp.Drop) and str(tree.args.get("kind", "")).upper() == "TABLE":
        owner, name = _name(_one_table(tree.args.get("tables") or [tree.this], "DROP TABLE"))
        return DdlStatement("DROP TABLE", "TABLE", owner, name)
    if isinstance(tree, exp.Create) and isinstance(tree.this, exp.Index):
        return _unique_index(tree.this)
    if isinstance(tree, exp.Drop) and str(tree.args.get("kind", "")).upper() == "INDEX":
        owner, name = _name(_one_table(tree.args.get("tables") or [tree.this], "DROP INDEX"))
        return DdlStatement("DROP INDEX", "INDEX", owner, name)
    if isinstance(tree, exp.TruncateTable):
        if str(tree.args.get("option") or "").upper() == "CASCADE":
            raise DdlError("TRUNCATE TABLE … CASCADE also empties the child tables of ON DELETE CASCADE foreign keys, "
                           "which no record names: apply it by hand and load those tables from a snapshot")
        owner, name = _name(_one_table(tree.expressions, "TRUNCATE TABLE"))
        return DdlStatement("TRUNCATE TABLE", "TABLE", owner, name)
    if isinstance(tree, ProcedureCalls) or (isinstance(tree, exp.Dot) and isinstance(tree.expression, exp.Anonymous)):
        return _procedure_calls(tree.expressions if isinstance(tree, ProcedureCalls) else [tree])
    if isinstance(tree, exp.Command):
        raise DdlError(f"statement not understood by the DDL parser: {text.strip()[:80]}")
    raise DdlError(f"not a DDL statement this parser knows: {text.strip()[:80]}")


#: DBMS_REDEFINITION.FINISH_REDEF_TABLE's parameters, in order.
FINISH_REDEF_PARAMETERS = ("UNAME", "ORIG_TABLE", "INT_TABLE", "PART_NAME", "DML_LOCK_TIMEOUT",
                           "CONTINUE_AFTER_ERRORS", "DISABLE_ROLLBACK")


def _procedure_calls(calls: list[exp.Expression]) -> DdlStatement:
    """PL/SQL calls (procedural replication): of DBMS_REDEFINITION only. Its
    FINISH_REDEF_TABLE swaps a table with its interim table (a ``Redefinition``); its other
    procedures (START_REDEF_TABLE, SYNC_INTERIM_TABLE, COPY_TABLE_DEPENDENTS, ABORT_…) leave
    the table as it is. Anything else is refused with what it called."""
    names = []
    for call in calls:
        package = _qualifier(call.this) if isinstance(call, exp.Dot) else None
        if package is None or not isinstance(call.expression, exp.Anonymous):
            shown = call.sql()[:60] if isinstance(call, exp.Expression) else "nothing"
            raise DdlError(f"a PL/SQL block of calls to DBMS_REDEFINITION only is read; this one has {shown}")
        names.append((package, call.expression.name.upper()))
    other = [f"{p}.{n}" for p, n in names if p not in ("DBMS_REDEFINITION", "SYS.DBMS_REDEFINITION")]
    if other or not calls:
        raise DdlError(f"PL/SQL calls are read for DBMS_REDEFINITION only; this record calls {other[0] if other else 'nothing'}")
    finish = [c for c, (_, n) in zip(calls, names, strict=True) if n == "FINISH_REDEF_TABLE"]
    if not finish:
        return DdlStatement("IGNORED", "DBMS_REDEFINITION", None, None)
    if len(finish) > 1:
        raise DdlError("one record finishes one redefinition; this one calls FINISH_REDEF_TABLE "
                       f"{len(finish)} times")
    args: dict[str, str | None] = {}
    for i, arg in enumerate(finish[0].expression.expressions):
        name = arg.this.name.upper() if isinstance(arg, exp.Kwarg) else (
            FINISH_REDEF_PARAMETERS[i] if i < len(FINISH_REDEF_PARAMETERS) else None)
        value = arg.expression if isinstance(arg, exp.Kwarg) else arg
        if name not in FINISH_REDEF_PARAMETERS or name in args:
            raise DdlError(f"FINISH_REDEF_TABLE takes {', '.join(FINISH_REDEF_PARAMETERS)} once each; "
                           f"argument {i + 1} is {arg.sql()[:40]}")
        if isinstance(value, exp.Null):
            args[name] = None
        elif isinstance(value, exp.Literal) and value.is_string:
            args[name] = value.this
        elif name in FINISH_REDEF_PARAMETERS[:4]:
            raise DdlError(f"FINISH_REDEF_TABLE's {name} must be a string literal, not {value.sql()[:40]}")
    missing = [p for p in FINISH_REDEF_PARAMETERS[:3] if not args.get(p)]
    if missing:
        raise DdlError(f"FINISH_REDEF_TABLE names no {', '.join(missing)}")
    owner, orig, interim = (_object_name(args[p], p) for p in FINISH_REDEF_PARAMETERS[:3])
    partition = args.get("PART_NAME")
    return DdlStatement("DBMS_REDEFINITION", "TABLE", owner, orig, (Redefinition(owner, interim, partition),))


def _qualifier(node: exp.Expression) -> str | None:
    """A called procedure's package (``pkg`` or ``owner.pkg``; quoted names as written
    inside their quotes, others in upper case), or None for anything else."""
    if isinstance(node, exp.Identifier):
        return node.name if node.quoted else node.name.upper()
    if isinstance(node, exp.Dot):
        left, right = _qualifier(node.this), _qualifier(node.expression)
        return None if left is None or right is None else f"{left}.{right}"
    return None


def _object_name(text: str, parameter: str) -> str:
    """A name passed as a string: upper case, unless written in double quotes (as Oracle
    reads DBMS_REDEFINITION's names); a plain identifier either way."""
    quoted = len(text) > 1 and text[0] == text[-1] == '"'
    name = text[1:-1] if quoted else text.upper()
    if not IDENTIFIER.fullmatch(name):
        raise DdlError(f"FINISH_REDEF_TABLE's {parameter} {text!r} is not a plain name")
    return name


def evolve(table: TableDef, stmt: DdlStatement) -> TableDef:
    """The dictionary revision ``stmt`` (an ALTER TABLE of ``table``) makes.

    Keys follow: a renamed key column is renamed in the key; dropping a key column drops
    its key constraints; the replication key is then chosen again (primary key, else the
    smallest unique key with a NOT NULL column, else all columns but LOBs)."""
    cols = list(table.columns)
    keys = list(table.constraints)  # (name, PRIMARY KEY | UNIQUE, columns)
    owner, name = table.owner, table.name

    def find(col: str) -> int:
        for i, c in enumerate(cols):
            if c.name == col:
                return i
        raise DdlError(f"{owner}.{name} has no column {col}", "904")

    for a in stmt.actions:
        if isinstance(a, AddColumn):
            if any(c.name == a.column.name for c in cols):
                raise DdlError(f"{owner}.{name} already has a column {a.column.name}", "1430")
            if a.column.type is None:
                raise DdlError(f"column {a.column.name} is added without a type")
            cols.append(ColumnDef(a.column.name, a.column.type, a.column.nullable is not False, a.column.default,
                                  virtual=a.column.virtual))
        elif isinstance(a, DropColumn):
            del cols[find(a.name)]
            keys = [k for k in keys if a.name not in k[2]]
        elif isinstance(a, RenameColumn):
            i = find(a.old)
            if any(c.name == a.new for c in cols):
                raise DdlError(f"{owner}.{name} already has a column {a.new}", "957")
            cols[i] = replace(cols[i], name=a.new)
            keys = [(n, kind, tuple(a.new if c == a.old else c for c in kc)) for n, kind, kc in keys]
        elif isinstance(a, ModifyColumn):
            i, spec = find(a.column.name), a.column
            cols[i] = replace(
                cols[i], type=spec.type or cols[i].type,
                nullable=cols[i].nullable if spec.nullable is None else spec.nullable,
                default=spec.default if spec.default is not None else cols[i].default)
        elif isinstance(a, AddConstraint) and a.kind in KEY_KINDS:
            for c in a.columns:
                find(c)
            if a.kind == "PRIMARY KEY" and any(k[1] == "PRIMARY KEY" for k in keys):
                raise DdlError(f"{owner}.{name} already has a primary key", "2260")
            keys.append((a.name, a.kind, a.columns))
        elif isinstance(a, DropConstraint):
            # An index and a constraint may share a name (CREATE UNIQUE INDEX emp_pk, then ADD
            # CONSTRAINT emp_pk PRIMARY KEY): DROP INDEX removes the index, DROP CONSTRAINT the constraint.
            keys = [k for k in keys if not (
                (a.name is not None and k[0] == a.name and (k[1] == "UNIQUE INDEX") == (a.kind == "INDEX"))
                or (a.kind == "PRIMARY KEY" and k[1] == "PRIMARY KEY")
                or (a.kind == "UNIQUE" and k[1] == "UNIQUE" and k[2] == a.columns))]
        elif isinstance(a, RenameIndex):
            keys = [(a.name if k[0] == a.old and k[1] == "UNIQUE INDEX" else k[0], k[1], k[2]) for k in keys]
        elif isinstance(a, RenameConstraint):  # a constraint the dictionary does not keep (CHECK): nothing
            keys = [(a.name if k[0] == a.old and k[1] != "UNIQUE INDEX" else k[0], k[1], k[2]) for k in keys]
        elif isinstance(a, RenameTable):
            owner, name = a.owner or owner, a.name
    return table_with_keys(owner, name, tuple(cols), tuple(keys))
