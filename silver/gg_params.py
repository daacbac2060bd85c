"""GoldenGate DDL parameters, as Replicat parameter text or as YAML, read into one
``silver.goldengate.GgDdlConfig``: ``DDL`` INCLUDE/EXCLUDE clauses, ``MAP … TARGET …``,
``DDLSUBST``, ``DDLERROR`` and ``DDLOPTIONS``. Both forms give equal objects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from lakestreams.errors import ConfigError
from silver.goldengate import (
    ACTIONS,
    CRITERIA,
    SCOPES,
    DdlErrorRule,
    DdlFilter,
    DdlSubst,
    GgDdlConfig,
    MapRule,
    check_clauses,
)


class _Tok(NamedTuple):
    kind: str  # WORD | STRING | COMMA | SEMI | AMP | EOL
    text: str
    line: int


def _tokens(text: str) -> list[_Tok]:
    """Words (with "quoted" parts), 'strings' ('' is a quote), commas, semicolons, line ends;
    ``--`` comments dropped; ``&`` ending a line joins the next line to it."""
    toks: list[_Tok] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            if toks and toks[-1].kind == "AMP":
                toks.pop()
            else:
                toks.append(_Tok("EOL", c, line))
            line, i = line + 1, i + 1
        elif c.isspace():
            i += 1
        elif text.startswith("--", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif c == "'":
            parts, j = [], i + 1
            while True:
                k = text.find("'", j)
                if k < 0 or "\n" in text[j:k]:
                    raise ConfigError(f"line {line}: a quoted string is not closed on its line")
                parts.append(text[j:k])
                if not text.startswith("''", k):
                    break
                parts, j = [*parts, "'"], k + 2
            toks.append(_Tok("STRING", "".join(parts), line))
            i = k + 1
        elif c in ",;&":
            toks.append(_Tok({",": "COMMA", ";": "SEMI", "&": "AMP"}[c], c, line))
            i += 1
        else:
            j = i
            while (j < n and not text[j].isspace() and text[j] not in ",;&'"
                   and not text.startswith("--", j)):
                k = text.find('"', j + 1) if text[j] == '"' else j
                if k < 0:
                    raise ConfigError(f"line {line}: a double-quoted name is not closed")
                j = k + 1
            toks.append(_Tok("WORD", text[i:j], line))
            i = j
    for t in toks:
        if t.kind == "AMP":
            raise ConfigError(f"line {t.line}: & continues a parameter on the next line: "
                              "it must end its line")
    return toks


def _at(line: int, make: Callable, *args: Any, **kwargs: Any) -> Any:
    try:
        return make(*args, **kwargs)
    except ConfigError as e:
        raise ConfigError(f"line {line}: {e}") from None


class _Cursor:
    def __init__(self, toks: list[_Tok], keyword: str, line: int) -> None:
        self.toks, self.i, self.keyword, self.line = toks, 0, keyword, line

    def done(self) -> bool:
        return self.i >= len(self.toks)

    def peek(self) -> str | None:
        t = None if self.done() else self.toks[self.i]
        return t.text.upper() if t is not None and t.kind == "WORD" else None

    def take(self, kind: str, what: str) -> _Tok:
        t = None if self.done() else self.toks[self.i]
        if t is None or t.kind != kind:
            found = "the end of the parameter" if t is None else repr(t.text)
            line = self.line if t is None else t.line
            raise ConfigError(f"line {line}: {self.keyword}: expected {what}, found {found}")
        self.i += 1
        return t

    def expect(self, word: str) -> None:
        t = self.take("WORD", word)
        if t.text.upper() != word:
            raise self.unknown(t, word)

    def commas(self) -> None:
        while not self.done() and self.toks[self.i].kind == "COMMA":
            self.i += 1

    def unknown(self, t: _Tok, expected: str) -> ConfigError:
        return ConfigError(f"line {t.line}: unknown keyword {t.text!r} in {self.keyword} "
                           f"(expected {expected})")


_PARAMETERS = ("DDL", "MAP", "DDLSUBST", "DDLERROR", "DDLOPTIONS")
_OPTIONS = {"OPTYPE": "optype", "OBJTYPE": "objtype", "OBJNAME": "objname", "INSTR": "instr",
            "INSTRCOMMENTS": "instrcomments"}


def _read_clauses(cur: _Cursor, where: str) -> tuple[DdlFilter, ...]:
    filters = []
    cur.commas()
    while not cur.done():
        head = cur.take("WORD", "INCLUDE or EXCLUDE")
        kind, crit = head.text.upper(), {}
        if kind not in ("INCLUDE", "EXCLUDE"):
            raise cur.unknown(head, "INCLUDE or EXCLUDE")
        cur.commas()
        while not cur.done() and cur.peek() not in ("INCLUDE", "EXCLUDE"):
            t = cur.take("WORD", "a criterion")
            key = t.text.upper()
            name = "scope" if key in SCOPES else _OPTIONS.get(key)
            if name is None:
                raise cur.unknown(t, ", ".join((*SCOPES, *_OPTIONS)))
            if name in crit:
                raise ConfigError(f"line {t.line}: {name.upper()} is given twice "
                                  f"in one {kind} clause")
            quoted = name in ("instr", "instrcomments") or (
                not cur.done() and cur.toks[cur.i].kind == "STRING")
            crit[name] = key if name == "scope" else cur.take(
                "STRING" if quoted else "WORD", f"{key}'s value").text
            cur.commas()
        filters.append(_at(head.line, DdlFilter, kind, **crit))
    return _at(cur.line, check_clauses, filters, where)


def parse_params(text: str) -> GgDdlConfig:
    """A configuration from GoldenGate parameter text: ``DDL``, ``MAP … ;``, ``DDLSUBST``,
    ``DDLERROR`` and ``DDLOPTIONS``, ``--`` comments, ``&`` continuing a line.

    >>> [str(f) for f in parse_params("DDL INCLUDE MAPPED &\\n  EXCLUDE OPTYPE TRUNCATE").filters]
    ['INCLUDE MAPPED', 'EXCLUDE OPTYPE TRUNCATE']
    """
    toks, i = _tokens(text), 0
    filters, maps, substs, rules, opts = None, [], [], [], {}
    while i < len(toks):
        head = toks[i]
        keyword, i = head.text.upper(), i + 1
        if head.kind in ("EOL", "SEMI"):
            continue
        if head.kind != "WORD" or keyword not in _PARAMETERS:
            raise ConfigError(f"line {head.line}: unknown keyword {head.text!r} "
                              "(this reader knows DDL, MAP, DDLSUBST, DDLERROR, DDLOPTIONS)")
        j = i
        ends = ("SEMI",) if keyword == "MAP" else ("SEMI", "EOL")  # only MAP spans lines freely
        while j < len(toks) and toks[j].kind not in ends:
            j += 1
        if keyword == "MAP" and j == len(toks):
            raise ConfigError(f"line {head.line}: MAP must end with ;")
        cur, i = _Cursor([t for t in toks[i:j] if t.kind != "EOL"], keyword, head.line), j + 1
        if keyword == "DDL":
            if filters is not None:
                raise ConfigError(f"line {head.line}: a second DDL parameter; "
                                  "put every clause in one")
            filters = _read_clauses(cur, "DDL")
        elif keyword == "MAP":
            source = cur.take("WORD", "the source owner.name").text
            cur.take("COMMA", "a comma")
            cur.expect("TARGET")
            target = cur.take("WORD", "the target owner.name").text
            cur.commas()
            if not cur.done():
                raise cur.unknown(cur.toks[cur.i], "; after the target: MAP options are not read")
            maps.append(_at(head.line, MapRule, source, target))
        elif keyword == "DDLSUBST":
            search = cur.take("STRING", "'search string'").text
            cur.expect("WITH")
            subst = cur.take("STRING", "'replacement string'").text
            substs.append(_at(head.line, DdlSubst, search, subst, _read_clauses(cur, "DDLSUBST")))
        elif keyword == "DDLERROR":
            code = cur.take("WORD", "an error code or DEFAULT").text
            action, retries = cur.take("WORD", ", ".join(ACTIONS)).text, "0"
            if cur.peek() == "RETRYOP":
                cur.expect("RETRYOP")
                cur.expect("MAXRETRIES")
                retries = cur.take("WORD", "a count").text
                if not retries.isdigit():
                    raise ConfigError(f"line {head.line}: MAXRETRIES {retries!r} is not a count")
            clauses = _read_clauses(cur, "DDLERROR")
            rules.append(_at(head.line, DdlErrorRule, code, action, clauses, int(retries)))
        else:
            while not cur.done():
                t = cur.take("WORD", "an option")
                opt = t.text.upper()
                if opt == "REMOVECOMMENTS":
                    opts["remove_comments"] = cur.take("WORD", "BEFORE or AFTER").text
                elif opt in ("MAPDERIVED", "NOMAPDERIVED"):
                    opts["mapderived"] = opt == "MAPDERIVED"
                elif opt in ("IGNOREREPLICATES", "GETREPLICATES"):
                    opts["ignore_replicates"] = opt == "IGNOREREPLICATES"
                else:
                    raise cur.unknown(t, "REMOVECOMMENTS, MAPDERIVED, NOMAPDERIVED, "
                                         "IGNOREREPLICATES, GETREPLICATES")
                cur.commas()
    return GgDdlConfig(filters or (), tuple(maps), substs=tuple(substs), error_rules=tuple(rules),
                       **opts)


def _keys(obj: Any, allowed: tuple[str, ...], where: str, required: tuple[str, ...] = ()) -> dict:
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: expected a mapping, got {obj!r}")
    for key in obj:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r} (accepted: {', '.join(allowed)})")
    for key in required:
        if key not in obj:
            raise ConfigError(f"{where}: {key!r} is required")
    return obj


def _items(obj: Any, where: str) -> list:
    if obj is not None and not isinstance(obj, list):
        raise ConfigError(f"{where}: expected a list, got {obj!r}")
    return obj or []


def _yaml_clauses(obj: Any, where: str) -> tuple[DdlFilter, ...]:
    filters = []
    for n, item in enumerate(_items(obj, where)):
        _keys(item, ("include", "exclude"), f"{where}[{n}]")
        if len(item) != 1:
            raise ConfigError(f"{where}[{n}]: give exactly one of include, exclude")
        [(kind, crit)] = item.items()
        filters.append(DdlFilter(kind, **_keys(crit, CRITERIA, f"{where}[{n}].{kind}")))
    return check_clauses(filters, where)


def config_from_yaml(obj: dict) -> GgDdlConfig:
    """The same configuration from YAML (keys as in the parameters, in lower case)::

        ddl:                       # clauses in order; criteria as in DdlFilter
          - include: {scope: MAPPED, objname: "hr_copy.*"}
          - exclude: {optype: TRUNCATE}
        maps: [{source: "hr.*", target: "hr_copy.*"}]
        ddlsubst: [{search: "users", replace: "hr_data", filters: [{include: {objtype: TABLE}}]}]
        ddlerror:
          - {error: 942, action: IGNORE, retries: 0, filters: [{include: {optype: DROP}}]}
          - {error: DEFAULT, action: ABEND}
        ddloptions: {remove_comments: AFTER, mapderived: true, ignore_replicates: true}
    """
    _keys(obj, ("ddl", "maps", "ddlsubst", "ddlerror", "ddloptions"), "goldengate")
    options = ("remove_comments", "mapderived", "ignore_replicates")
    opts = _keys(obj.get("ddloptions") or {}, options, "ddloptions")
    maps, substs, rules = [], [], []
    for n, m in enumerate(_items(obj.get("maps"), "maps")):
        maps.append(MapRule(**_keys(m, ("source", "target"), f"maps[{n}]", ("source", "target"))))
    for n, s in enumerate(_items(obj.get("ddlsubst"), "ddlsubst")):
        where = f"ddlsubst[{n}]"
        _keys(s, ("search", "replace", "filters"), where, ("search", "replace"))
        clauses = _yaml_clauses(s.get("filters"), f"{where}.filters")
        substs.append(DdlSubst(s["search"], s["replace"], clauses))
    for n, e in enumerate(_items(obj.get("ddlerror"), "ddlerror")):
        where = f"ddlerror[{n}]"
        _keys(e, ("error", "action", "retries", "filters"), where, ("error", "action"))
        clauses = _yaml_clauses(e.get("filters"), f"{where}.filters")
        rules.append(DdlErrorRule(e["error"], e["action"], clauses, e.get("retries", 0)))
    return GgDdlConfig(_yaml_clauses(obj.get("ddl"), "ddl"), tuple(maps), substs=tuple(substs),
                       error_rules=tuple(rules), **opts)
