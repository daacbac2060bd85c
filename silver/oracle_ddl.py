"""sqlglot's Oracle dialect, extended for the DDL a capture carries.

sqlglot reads most Oracle DDL but gives up (returns ``Command``) on some statements a
replication stream is full of, and on the clauses ``DBMS_METADATA.GET_DDL`` prints. This
dialect teaches the parser those, so that every form reaches the same tree:

- ``ALTER TABLE … MODIFY (col type [NULL | NOT NULL], …)`` and ``MODIFY col …``: one
  ``exp.AlterColumn`` per column (``dtype``; ``allow_null`` True/False when stated);
- ``ALTER TABLE … DROP (a, b)``, ``DROP PRIMARY KEY``, ``DROP UNIQUE (a, b)``, and
  ``SET UNUSED (a, b)`` / ``SET UNUSED COLUMN a`` as a DROP of those columns;
- ``TRUNCATE TABLE t`` with Oracle's options (``REUSE STORAGE``, ``DROP [ALL] STORAGE``,
  ``PRESERVE``/``PURGE MATERIALIZED VIEW LOG``, ``CASCADE``);
- ``ALTER TABLE … RENAME CONSTRAINT a TO b``: a ``ConstraintRename``;
- PL/SQL procedure calls, as a capture of procedural replication writes them (``BEGIN
  pkg.proc(…); …; END;``, ``CALL pkg.proc(…)``, ``EXEC[UTE] pkg.proc(…)``, or the bare
  call): a ``ProcedureCalls`` holding each call as sqlglot reads an expression (named
  arguments ``name => value`` as ``exp.Kwarg``);
- ``RENAME a TO b``: the same ``exp.Alter`` with an ``exp.AlterRename`` as ``ALTER TABLE a
  RENAME TO b`` (GoldenGate's Extract turns the one into the other too);
- ``CREATE [UNIQUE] INDEX owner.name ON table (columns)``, the storage and build options
  after the column list read and left out;
- partition and physical clauses of ``ALTER TABLE`` (``MOVE``, ``ADD/DROP/TRUNCATE/SPLIT/
  MERGE/EXCHANGE … PARTITION``, ``SHRINK SPACE``, ``ENABLE/DISABLE ROW MOVEMENT``, …):
  an ``exp.Property`` named ``PHYSICAL`` (no effect on the table's columns);
- Oracle types sqlglot does not read: ``LONG RAW`` and ``INTERVAL YEAR [(p)] TO MONTH`` /
  ``INTERVAL DAY [(p)] TO SECOND [(s)]``, as a user-defined type named as Oracle writes it;
  a column's ``ENCRYPT …``, ``VISIBLE`` and ``INVISIBLE`` (how it is stored or shown, not its
  values) where a column is defined;
- virtual columns as ``DBMS_METADATA`` prints them, ``GENERATED ALWAYS AS (…) VIRTUAL``, and
  ``AS (…)`` after a column property: an ``exp.ComputedColumnConstraint`` (or sqlglot's
  ``GeneratedAsIdentityColumnConstraint`` holding the expression), as ``c NUMBER AS (…)``;
- what ``DBMS_METADATA`` adds to a CREATE TABLE: constraint states (``ENABLE``,
  ``DISABLE``, ``VALIDATE``, ``NOVALIDATE``, ``RELY``), ``USING INDEX`` with its
  attributes, ``SUPPLEMENTAL LOG DATA/GROUP``, ``SEGMENT CREATION``, ``COMPRESS``,
  ``LOB (…) STORE AS``, ``CACHE``, ``PARALLEL``, ``ROW MOVEMENT`` and partitioning
  clauses; these are read (token by token, brackets balanced) and kept as properties
  the dictionary ignores.

Nothing here looks at the text with patterns: the statements are tokenized by sqlglot
and the added grammar consumes tokens.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp, tokens
from sqlglot.dialects.oracle import Oracle
from sqlglot.parsers.oracle import OracleParser
from sqlglot.tokens import TokenType

#: Keywords that open a physical (storage, partition) clause of ALTER TABLE.
PHYSICAL_ALTER_ACTIONS = (
    "MOVE", "SPLIT", "MERGE", "EXCHANGE", "COALESCE", "SHRINK", "ALLOCATE", "DEALLOCATE",
    "ENABLE", "DISABLE", "LOGGING", "NOLOGGING", "COMPRESS", "NOCOMPRESS", "PARALLEL", "NOPARALLEL",
    "CACHE", "NOCACHE", "ROW", "PCTFREE", "PCTUSED", "INITRANS", "MAXTRANS", "STORAGE", "READ", "UPGRADE",
    "TRUNCATE",
)
#: Keywords of CREATE TABLE's physical clauses the dictionary ignores (after the column list).
PHYSICAL_TABLE_PROPERTIES = (
    "SEGMENT", "COMPRESS", "NOCOMPRESS", "LOB", "CACHE", "NOCACHE", "PARALLEL", "NOPARALLEL", "ROW",
    "MONITORING", "NOMONITORING", "ORGANIZATION", "ENABLE", "DISABLE", "RESULT_CACHE", "FLASHBACK",
    "INMEMORY", "NO", "COLUMN", "NESTED", "XMLTYPE", "VARRAY", "OVERFLOW", "ROWDEPENDENCIES",
    "NOROWDEPENDENCIES", "FILESYSTEM_LIKE_LOGGING",
)
#: Options of DROP INDEX that say how the index goes.
DROP_INDEX_OPTIONS = ("ONLINE", "FORCE", "DEFERRED", "IMMEDIATE", "INVALIDATION")
#: Column properties MODIFY may change that leave the column's type and values alone.
COLUMN_PROPERTIES = ("ENCRYPT", "DECRYPT", "VISIBLE", "INVISIBLE", "COLLATE")
#: The words of an INTERVAL type after INTERVAL (each may carry a precision in brackets).
INTERVAL_WORDS = ("YEAR", "MONTH", "DAY", "SECOND", "TO")
#: States a constraint may carry (``NOT NULL ENABLE``, ``PRIMARY KEY (…) ENABLE NOVALIDATE``).
CONSTRAINT_STATES = ("ENABLE", "DISABLE", "VALIDATE", "NOVALIDATE", "RELY", "NORELY")
#: Words that end a run of physical attributes inside a column list.
_LIST_END = (TokenType.COMMA, TokenType.R_PAREN)


class ConstraintRename(exp.Expression):
    """``ALTER TABLE … RENAME CONSTRAINT this TO to``."""

    arg_types: t.ClassVar = {"this": True, "to": True}


class ProcedureCalls(exp.Expression):
    """PL/SQL procedure calls (``pkg.proc(args)``), in order: a block's, or one."""

    arg_types: t.ClassVar = {"expressions": True}


class OracleDdlParser(OracleParser):
    """The Oracle parser with the replication stream's DDL (see the module docstring)."""

    ALTER_PARSERS: t.ClassVar = {
        **OracleParser.ALTER_PARSERS,
        "MODIFY": lambda self: self._parse_alter_modify(),
        "DROP": lambda self: self._parse_oracle_drop(),
        "SET": lambda self: self._parse_oracle_set(),
        "RENAME": lambda self: self._parse_oracle_rename(),
        **{k: (lambda self: [self._physical_clause()]) for k in PHYSICAL_ALTER_ACTIONS},
    }

    STATEMENT_PARSERS: t.ClassVar = {
        **OracleParser.STATEMENT_PARSERS,
        TokenType.RENAME: lambda self: self._parse_rename_statement(),
        TokenType.EXECUTE: lambda self: self._parse_procedure_call(),
    }

    CONSTRAINT_PARSERS: t.ClassVar = {
        **OracleParser.CONSTRAINT_PARSERS,
        **{k: (lambda self: self._parse_constraint_state()) for k in CONSTRAINT_STATES},
        "USING": lambda self: self._parse_using_index(),
        "SUPPLEMENTAL": lambda self: self._physical_clause(stop=_LIST_END),
        **{k: (lambda self: self._column_property()) for k in ("ENCRYPT", "VISIBLE", "INVISIBLE")},
        # A virtual column: VIRTUAL after GENERATED ALWAYS AS (…), and AS (…) after a
        # column property (the base parser reads AS (…) right after the type only).
        "VIRTUAL": lambda self: self._physical("VIRTUAL"),
        "AS": lambda self: self._parse_virtual_expression(),
    }

    SCHEMA_UNNAMED_CONSTRAINTS: t.ClassVar = OracleParser.SCHEMA_UNNAMED_CONSTRAINTS | {"SUPPLEMENTAL"}

    PROPERTY_PARSERS: t.ClassVar = {
        **OracleParser.PROPERTY_PARSERS,
        **{k: (lambda self: self._physical_clause()) for k in PHYSICAL_TABLE_PROPERTIES},
        "PARTITION BY": lambda self: self._physical_clause(),
    }

    def _parse(self, parse_method: t.Callable, raw_tokens: list[tokens.Token], sql: str | None = None,
               ) -> list[exp.Expr | None]:
        """A PL/SQL block (``BEGIN … END;``) is one statement: its calls are read as the
        statements between its semicolons, and come back as one ``ProcedureCalls``."""
        end = len(raw_tokens)
        while end and raw_tokens[end - 1].token_type == TokenType.SEMICOLON:
            end -= 1
        if end < 2 or raw_tokens[0].token_type != TokenType.BEGIN or raw_tokens[end - 1].text.upper() != "END":
            return super()._parse(parse_method, raw_tokens, sql)
        calls = [c for c in super()._parse(parse_method, raw_tokens[1:end - 1], sql) if c is not None]
        return [ProcedureCalls(expressions=calls)]

    def _parse_procedure_call(self) -> exp.Expr:
        """CALL, EXEC or EXECUTE and the call after it."""
        call = self._parse_expression()
        if call is None:
            self.raise_error("expected a procedure call after CALL, EXEC or EXECUTE")
        return self.expression(ProcedureCalls(expressions=[call]))

    # -- helpers ---------------------------------------------------------------------------
    def _skip_balanced(self) -> None:
        """Consume one parenthesised group (the opening bracket is current)."""
        depth = 0
        while self._curr:
            if self._curr.token_type == TokenType.L_PAREN:
                depth += 1
            elif self._curr.token_type == TokenType.R_PAREN:
                depth -= 1
            self._advance()
            if depth == 0:
                return
        self.raise_error("unbalanced brackets")

    def _skip_clause(self, stop: tuple = (), stop_words: tuple = ()) -> str:
        """Consume tokens (groups balanced) up to the end, or to a token of type ``stop`` or
        word of ``stop_words`` at depth 0; the words consumed, for the property's name."""
        words = [self._prev.text.upper()]
        while self._curr and self._curr.token_type not in stop and self._curr.text.upper() not in stop_words:
            if self._curr.token_type == TokenType.L_PAREN:
                self._skip_balanced()
                continue
            words.append(self._curr.text.upper())
            self._advance()
        return " ".join(words)

    def _physical_clause(self, prefix: str = "", stop: tuple = ()) -> exp.Property:
        """The clause opened by the previous token, read to the end (or to ``stop``), as a
        PHYSICAL property: storage and partitioning, no effect on columns or keys."""
        return self._physical(prefix + self._skip_clause(stop=stop))

    def _physical(self, text: str) -> exp.Property:
        return self.expression(exp.Property(this=exp.var("PHYSICAL"), value=exp.Literal.string(text)))

    # -- types ---------------------------------------------------------------------------------
    def _parse_types(self, check_func: bool = False, schema: bool = False, allow_identifiers: bool = True,
                     with_collation: bool = False) -> exp.Expr | None:
        curr, nxt = self._curr, self._next
        if curr is not None and nxt is not None:
            head, second = curr.text.upper(), nxt.text.upper()
            if head == "LONG" and second == "RAW":
                self._advance(2)
                return exp.DataType(this=exp.DataType.Type.USERDEFINED, kind="LONG RAW")
            if curr.token_type == TokenType.INTERVAL and second in ("YEAR", "DAY"):
                self._advance()
                words = ["INTERVAL"]
                while self._curr is not None and self._curr.text.upper() in INTERVAL_WORDS:
                    words.append(self._curr.text.upper())
                    self._advance()
                    if self._match(TokenType.L_PAREN):
                        words[-1] += f"({self._parse_number().sql('oracle')})"
                        self._match_r_paren()
                return exp.DataType(this=exp.DataType.Type.USERDEFINED, kind=" ".join(words))
        return super()._parse_types(check_func=check_func, schema=schema, allow_identifiers=allow_identifiers,
                                    with_collation=with_collation)

    def _parse_type_size(self) -> exp.DataTypeParam | None:
        """A type's size parameter; a negative one too: ``NUMBER(5,-2)`` rounds to hundreds."""
        if self._curr and self._curr.token_type == TokenType.DASH and self._next and \
                self._next.token_type == TokenType.NUMBER:
            self._advance(2)
            return self.expression(exp.DataTypeParam(this=exp.Literal.number(f"-{self._prev.text}")))
        return super()._parse_type_size()

    def _column_property(self) -> exp.Expr:
        """VISIBLE, INVISIBLE, or ENCRYPT [USING 'algorithm'] [IDENTIFIED BY password]
        ['integrity algorithm'] [[NO] SALT] in a column's definition: exactly its own
        words, so what follows (NOT NULL, PRIMARY KEY, GENERATED …, AS (…)) is read as usual."""
        words = [self._prev.text.upper()]
        if words[0] == "ENCRYPT":
            if self._match_text_seq("USING"):
                words.append("USING")
                self._match(TokenType.STRING)
            if self._match_text_seq("IDENTIFIED", "BY"):
                words.append("IDENTIFIED BY")
                self._advance()  # the password: not kept
            if self._match(TokenType.STRING):
                words.append("(integrity algorithm)")
            if self._match_text_seq("NO", "SALT"):
                words.append("NO SALT")
            elif self._match_text_seq("SALT"):
                words.append("SALT")
        return self._physical(" ".join(words))

    def _parse_virtual_expression(self) -> exp.Expr:
        """``AS (expression) [VIRTUAL]`` of a virtual column."""
        if not self._match(TokenType.L_PAREN, advance=False):
            self.raise_error("expected AS (expression) of a virtual column")
        expression = self._parse_disjunction()
        self._match_text_seq("VIRTUAL")
        return self.expression(exp.ComputedColumnConstraint(this=expression, persisted=False))

    # -- ALTER TABLE -------------------------------------------------------------------------
    def _parse_modify_item(self) -> exp.Expr | None:
        column = self._parse_field(any_token=True)
        if column is None:
            return None
        dtype = None
        if not (self._curr and self._curr.text.upper() in ("NULL", "NOT", "DEFAULT", "CONSTRAINT", *COLUMN_PROPERTIES)):
            dtype = self._parse_types(schema=True)
        default = self._parse_disjunction() if self._match(TokenType.DEFAULT) else None
        # ENCRYPT … / DECRYPT / (IN)VISIBLE / COLLATE: how the column is stored or shown,
        # not its values.
        properties = []
        while self._match_texts(COLUMN_PROPERTIES):
            properties.append(self._skip_clause(
                stop=(TokenType.COMMA, TokenType.R_PAREN), stop_words=("NOT", "NULL", "CONSTRAINT", *COLUMN_PROPERTIES)))
        self._match(TokenType.CONSTRAINT) and self._parse_id_var()
        allow_null = None
        if self._match_text_seq("NOT", "NULL"):
            allow_null = False
        elif self._match(TokenType.NULL):
            allow_null = True
        while self._match_texts(CONSTRAINT_STATES):
            pass
        while self._match_texts(COLUMN_PROPERTIES):  # after the constraint as well
            properties.append(self._skip_clause(stop=(TokenType.COMMA, TokenType.R_PAREN), stop_words=COLUMN_PROPERTIES))
        if dtype is None and default is None and allow_null is None:
            if properties:
                return self._physical(f"{properties[0]} OF {column.sql('oracle')}")
            self.raise_error(f"MODIFY {column.sql('oracle')} changes nothing this parser knows")
        altered = self.expression(exp.AlterColumn(this=column, dtype=dtype, default=default, allow_null=allow_null))
        # A property stated with a change (``MODIFY (b VARCHAR2(20) ENCRYPT)``) is kept too:
        # the DDL reading makes it a physical action of its own, as when it stands alone.
        altered.meta["properties"] = [f"{p} OF {column.sql('oracle')}" for p in properties]
        return altered

    def _parse_alter_modify(self) -> list[exp.Expr]:
        # MODIFY PARTITION BY … [ONLINE] (made partitioned), MODIFY PARTITION p …, LOB, DEFAULT
        # ATTRIBUTES, a constraint's state: physical.
        if self._match_texts(("PARTITION", "PARTITION BY", "SUBPARTITION", "LOB", "DEFAULT")) or self._match_text_seq(
            "CONSTRAINT"
        ) or self._match(TokenType.PRIMARY_KEY) or self._match(TokenType.UNIQUE):
            return [self._physical_clause("MODIFY ")]
        if self._match(TokenType.L_PAREN):
            items = self._parse_csv(self._parse_modify_item)
            self._match_r_paren()
            return items
        return [self._parse_modify_item()]

    def _drop_column_options(self) -> None:
        """[CASCADE CONSTRAINTS] [INVALIDATE] [CHECKPOINT n] [ONLINE] after a column drop: how
        Oracle goes about it, not what is dropped."""
        while True:
            if self._match_text_seq("CASCADE", "CONSTRAINTS") or self._match_texts(("INVALIDATE", "ONLINE")):
                continue
            if self._match_text_seq("CHECKPOINT"):
                self._match(TokenType.NUMBER)
                continue
            return

    def _parse_oracle_drop(self) -> list[exp.Expr]:
        if self._match(TokenType.L_PAREN):  # DROP (a, b): columns
            columns = self._parse_csv(self._parse_column)
            self._match_r_paren()
            self._drop_column_options()
            return [self.expression(exp.Drop(tables=columns, kind="COLUMN"))]
        if self._match(TokenType.PRIMARY_KEY) or self._match_text_seq("PRIMARY", "KEY"):
            self._skip_clause()
            return [self.expression(exp.Drop(kind="PRIMARY KEY", tables=[]))]
        if self._match(TokenType.UNIQUE):
            columns = self._parse_wrapped_csv(self._parse_column)
            self._skip_clause()
            return [self.expression(exp.Drop(kind="UNIQUE", tables=columns))]
        if self._match_texts(("PARTITION", "SUBPARTITION", "UNUSED", "SUPPLEMENTAL", "COLUMNS")):
            return [self._physical_clause("DROP ")]  # DROP COLUMNS CONTINUE: a drop's rest
        drops = self._parse_alter_table_drop()
        self._drop_column_options()
        # DROP CONSTRAINT … KEEP INDEX | DROP INDEX: what becomes of the constraint's index.
        self._match_text_seq("KEEP", "INDEX") or self._match_text_seq("DROP", "INDEX")
        return drops

    def _parse_oracle_rename(self) -> exp.Expr | None:
        """RENAME CONSTRAINT a TO b besides the base parser's RENAME [COLUMN] … TO …."""
        if not self._match(TokenType.CONSTRAINT):
            return self._parse_alter_table_rename()
        old = self._parse_id_var()
        if old is None or not self._match_text_seq("TO"):
            self.raise_error("expected RENAME CONSTRAINT old_name TO new_name")
        new = self._parse_id_var()
        if new is None:
            self.raise_error("expected RENAME CONSTRAINT old_name TO new_name")
        return self.expression(ConstraintRename(this=old, to=new))

    def _parse_oracle_set(self) -> list[exp.Expr] | exp.Expr:
        """SET UNUSED (a, b) and SET UNUSED COLUMN a: the columns are gone for every reader
        and writer (their space is freed later by DROP UNUSED COLUMNS), so read as DROP."""
        if not self._match_text_seq("UNUSED"):
            return OracleParser.ALTER_PARSERS["SET"](self)
        if self._match(TokenType.L_PAREN):
            columns = self._parse_csv(self._parse_column)
            self._match_r_paren()
        else:
            self._match(TokenType.COLUMN)
            columns = [self._parse_column()]
        if not columns or any(c is None for c in columns):
            self.raise_error("expected SET UNUSED (columns) or SET UNUSED COLUMN name")
        while self._match_text_seq("CASCADE", "CONSTRAINTS") or self._match_texts(("INVALIDATE", "ONLINE")):
            pass
        return [self.expression(exp.Drop(tables=columns, kind="COLUMN"))]

    def _parse_truncate_table(self) -> exp.TruncateTable | None | exp.Expr:
        """Oracle's TRUNCATE TABLE t [{PRESERVE | PURGE} MATERIALIZED VIEW LOG]
        [{DROP [ALL] | REUSE} STORAGE] [CASCADE]: the storage and log options say what
        becomes of the space and of a materialized view log; CASCADE (the option of the
        tree) also empties the child tables of ON DELETE CASCADE foreign keys."""
        index = self._index
        if not self._match(TokenType.TABLE):
            return super()._parse_truncate_table()
        table = self._parse_table(schema=True)
        option = None
        while self._curr:
            if (self._match_text_seq("PRESERVE", "MATERIALIZED", "VIEW", "LOG")
                    or self._match_text_seq("PURGE", "MATERIALIZED", "VIEW", "LOG")
                    or self._match_text_seq("DROP", "ALL", "STORAGE") or self._match_text_seq("DROP", "STORAGE")
                    or self._match_text_seq("REUSE", "STORAGE")):
                continue
            if self._match_text_seq("CASCADE"):
                option = "CASCADE"
                continue
            break
        if self._curr or table is None:
            self._retreat(index)
            return super()._parse_truncate_table()
        return self.expression(exp.TruncateTable(expressions=[table], option=option))

    def _parse_alter_table_add(self) -> list[exp.Expr]:
        if self._match_texts(("PARTITION", "SUBPARTITION", "SUPPLEMENTAL")):
            return [self._physical_clause("ADD ")]
        return super()._parse_alter_table_add()

    def _parse_rename_statement(self) -> exp.Alter:
        old = self._parse_table_parts(schema=True)
        if not self._match_text_seq("TO"):
            self.raise_error("expected RENAME old_name TO new_name")
        new = self._parse_table_parts(schema=True)
        return self.expression(exp.Alter(this=old, kind="TABLE", actions=[exp.AlterRename(this=new)]))

    # -- CREATE TABLE's DBMS_METADATA clauses -------------------------------------------------
    def _parse_constraint_state(self) -> exp.Expr:
        return self.expression(exp.Property(this=exp.var("STATE"), value=exp.var(self._prev.text.upper())))

    def _parse_using_index(self) -> exp.Expr | None:
        if not self._match(TokenType.INDEX):
            return None
        return self._physical("USING " + self._skip_clause(stop=_LIST_END, stop_words=CONSTRAINT_STATES))

    def _parse_unique(self) -> exp.UniqueColumnConstraint:
        # As the base parser, but USING INDEX is an index clause here, not an index type.
        self._match_texts(("KEY", "INDEX"))
        return self.expression(exp.UniqueColumnConstraint(
            this=self._parse_schema(self._parse_unique_key()), options=self._parse_key_constraint_options()))

    def _parse_index_params(self) -> exp.IndexParameters:
        # A key's USING INDEX clause is read with the key's options (its attributes vary).
        if self._match_text_seq("USING", "INDEX", advance=False):
            return self.expression(exp.IndexParameters())
        return super()._parse_index_params()

    def _parse_key_constraint_options(self) -> list[str]:
        options = super()._parse_key_constraint_options()
        while True:
            if self._match_texts(CONSTRAINT_STATES):
                options.append(self._prev.text.upper())
            elif self._match_text_seq("USING", "INDEX"):
                options.append(self._skip_clause(stop=_LIST_END, stop_words=CONSTRAINT_STATES))
            else:
                return options

    # -- CREATE [UNIQUE] INDEX ----------------------------------------------------------------
    def _parse_index(self, index: exp.Expr | None = None, anonymous: bool = False) -> exp.Index | None:
        # Oracle qualifies index names (CREATE INDEX hr.emp_ix ON …); the base parser reads one part.
        if index is not None and self._match(TokenType.DOT):
            index = self.expression(exp.Table(this=self._parse_id_var(), db=index))
        out = super()._parse_index(index=index, anonymous=anonymous)
        if index is not None and out is not None and self._curr is not None \
                and self._curr.token_type not in (TokenType.SEMICOLON, TokenType.SENTINEL):
            # After the column list: how the index is stored and built (TABLESPACE, PCTFREE,
            # LOCAL (PARTITION …), ONLINE, COMPRESS, …), not what it makes unique: read and
            # left out of the tree (no target of ours stores an index).
            self._skip_clause(stop=(TokenType.SEMICOLON,))
        return out

    def _parse_drop(self, exists: bool = False, kind: str | None = None) -> exp.Expr:
        drop = super()._parse_drop(exists=exists, kind=kind)
        if isinstance(drop, exp.Drop) and str(drop.args.get("kind", "")).upper() == "INDEX":
            # DROP INDEX … ONLINE | FORCE | DEFERRED/IMMEDIATE INVALIDATION: how, not what.
            while self._match_texts(DROP_INDEX_OPTIONS):
                pass
        return drop


class OracleDdl(Oracle):
    """Oracle, as the capture's DDL records write it."""

    class Tokenizer(Oracle.Tokenizer):
        # RENAME is a statement here, not a command whose text is kept as a string; so are
        # the procedure calls CALL, EXEC and EXECUTE.
        COMMANDS = {c for c in tokens.Tokenizer.COMMANDS if c not in (TokenType.RENAME, TokenType.EXECUTE)}
        KEYWORDS: t.ClassVar = {**Oracle.Tokenizer.KEYWORDS, "CALL": TokenType.EXECUTE, "EXEC": TokenType.EXECUTE}

    Parser = OracleDdlParser

    class Generator(Oracle.Generator):
        TRANSFORMS: t.ClassVar = {
            **Oracle.Generator.TRANSFORMS,
            ConstraintRename: lambda self, e: f"RENAME CONSTRAINT {self.sql(e, 'this')} TO {self.sql(e, 'to')}",
        }

