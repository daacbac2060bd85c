"""Rules, rule sets and clients, evaluated over change records as Spark plans.

Rules read as Oracle prints them (``DBA_RULES``): system-created global, schema and
table rules, the three rules of ``ADD_SUBSET_RULES``, rules with an ``and_condition``
and raw rule conditions. Every condition is parsed and checked when the rule is defined
(``silver.condition``).

Evaluation keeps driver work proportional to rules, not rows:

* plain system-created rules (from ``PARAMETER_TABLE_FROM`` of them on) are rows of a
  parameter table, grouped per lookup key (owner and table, owner, or nothing) into
  short candidate lists that records pick up by broadcast hash joins: 10,000 table
  rules cost a hash lookup per record, not 10,000 OR-ed predicates;
* every other rule (subset, ``and_condition``, raw) is its compiled Spark Column.

A client keeps or discards a record as Table 5-1 says (negative set first, no set is not
an empty set). The rule that acts is the first TRUE rule in rule-set order: for a kept
record it decides row migration (subset rules) and the rule-based transformations.
Capture is evaluated first; the apply client sees what capture produced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakestreams.config import Channel, ClientSpec, RuleSpec, TransformSpec
from lakestreams.errors import ConfigError, RuleError
from silver.condition import (
    Condition,
    is_ddl_lcr,
    is_row_lcr,
    parse_condition,
    parse_subset_condition,
    rewrite_lcr,
)
from silver.transforms import apply_transformations, check

#: From this many plain system-created rules on, a client evaluates them through the
#: parameter table; below it, as per-row Columns (cheaper than a key pass and a join).
PARAMETER_TABLE_FROM = 64
SIMPLE_LEVELS = ("GLOBAL", "SCHEMA", "TABLE")
SUBSET_DML = ("INSERT", "UPDATE", "DELETE")


def _q(value: str) -> str:
    """An Oracle string literal (names are validated identifiers; quote doubling is belt and braces)."""
    return "'" + value.replace("'", "''") + "'"


def system_condition(spec: RuleSpec, kind: str) -> str:
    """The condition DBMS_STREAMS_ADM prints for a global, schema or table rule."""
    v = ":dml" if kind == "DML" else ":ddl"
    parts: list[str] = []
    if spec.level == "SCHEMA":
        if kind == "DML":
            parts.append(f"({v}.get_object_owner() = {_q(spec.owner)})")
        else:
            parts.append(f"({v}.get_object_owner() = {_q(spec.owner)} or {v}.get_base_table_owner() = {_q(spec.owner)})")
    elif spec.level == "TABLE":
        obj = f"({v}.get_object_owner() = {_q(spec.owner)} and {v}.get_object_name() = {_q(spec.table)})"
        if kind == "DML":
            parts.append(f"({obj})")
        else:
            base = f"({v}.get_base_table_owner() = {_q(spec.owner)} and {v}.get_base_table_name() = {_q(spec.table)})"
            parts.append(f"({obj} or {base})")
    if not spec.include_tagged_lcr:
        parts.append(f"{v}.is_null_tag() = 'Y'")
    if spec.source_database:
        parts.append(f"{v}.get_source_database_name() = {_q(spec.source_database)}")
    text = (
        "(" + " and ".join(parts) + " )"
        if parts
        else f"(( {v}.get_source_database_name()>=' ' OR {v}.get_source_database_name()<=' ') )"
    )
    if spec.and_condition:
        text = f"(({text}) and ({rewrite_lcr(spec.and_condition, v[1:])}))"
    return text


def subset_conditions(spec: RuleSpec, column_type=None) -> tuple[dict[str, str], tuple[str, ...]]:
    """The insert, update and delete rule conditions ADD_SUBSET_RULES generates, and the
    columns of the subset condition."""
    sub = parse_subset_condition(spec.dml_condition, column_type)
    prefix = f":dml.get_object_owner()={_q(spec.owner)} AND :dml.get_object_name()={_q(spec.table)} AND "
    if not spec.include_tagged_lcr:
        prefix += ":dml.is_null_tag()='Y' AND "
    if spec.source_database:
        prefix += f":dml.get_source_database_name()={_q(spec.source_database)} AND "

    def value(image: str, col: str) -> str:
        return f":dml.get_value('{image}','\"{col}\"')"

    def present(image: str) -> str:
        terms = [f"({value(image, c)} IS NOT NULL)" for c in sub.columns]
        return terms[0] if len(terms) == 1 else "(" + " AND ".join(terms) + ")"

    def outside(image: str) -> str:
        # The image is outside the subset: values known and the condition FALSE, or some
        # value NULL and the condition not TRUE (NOT EXISTS turns NULL into TRUE).
        access = [f"{value(image, c)}.{sub.access[c]}()" for c in sub.columns]
        known = " AND ".join(f"{a} IS NOT NULL" for a in access)
        unknown = " OR ".join(f"{a} IS NULL" for a in access)
        cond = sub.render(image)
        return (
            f"{present(image)} AND ((({known}) AND NOT ({cond})) OR "
            f"(({unknown}) AND NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE ({cond}))))"
        )

    new, old = sub.render("NEW"), sub.render("OLD")
    return ({
        "INSERT": (
            f"{prefix}:dml.get_command_type() IN ('UPDATE','INSERT') AND {present('NEW')} AND ({new}) AND "
            f"(:dml.get_command_type()='INSERT' OR ({outside('OLD')}))"
        ),
        "UPDATE": (
            f"{prefix}:dml.get_command_type()='UPDATE' AND {present('NEW')} AND {present('OLD')} AND "
            f"({old}) AND ({new})"
        ),
        "DELETE": (
            f"{prefix}:dml.get_command_type() IN ('UPDATE','DELETE') AND {present('OLD')} AND ({old}) AND "
            f"(:dml.get_command_type()='DELETE' OR ({outside('NEW')}))"
        ),
    }, sub.columns)


@dataclass(frozen=True)
class Rule:
    """One rule: its name, whether it is for row (DML) or DDL LCRs, and its condition."""

    name: str
    kind: str  # DML | DDL
    condition: str
    spec: RuleSpec | None = None
    subset_dml: str | None = None  # INSERT | UPDATE | DELETE for the rules of ADD_SUBSET_RULES
    subset_columns: tuple[str, ...] = ()
    parsed: Condition | None = field(default=None, compare=False, repr=False)

    @property
    def simple(self) -> bool:
        """Evaluated through the parameter table (no per-row condition needed)."""
        s = self.spec
        return s is not None and s.level in SIMPLE_LEVELS and not s.and_condition

    def column(self) -> Column:
        """The condition as a Spark boolean Column (NULL counts as FALSE)."""
        if self.simple:
            return _simple_column(self)
        guard = is_ddl_lcr() if self.kind == "DDL" else is_row_lcr()
        return guard & self.parsed.column()


def _simple_column(rule: Rule) -> Column:
    s = rule.spec
    conds = [is_ddl_lcr() if rule.kind == "DDL" else is_row_lcr()]
    owner_is = F.col("object_owner") == F.lit(s.owner)
    if s.level == "SCHEMA":
        conds.append(owner_is | (F.col("base_table_owner") == F.lit(s.owner)) if rule.kind == "DDL" else owner_is)
    elif s.level == "TABLE":
        obj = owner_is & (F.col("object_name") == F.lit(s.table))
        if rule.kind == "DDL":
            obj = obj | ((F.col("base_table_owner") == F.lit(s.owner)) & (F.col("base_table_name") == F.lit(s.table)))
        conds.append(obj)
    if not s.include_tagged_lcr:
        conds.append(F.col("tag").isNull())
    conds.append(F.col("source_database") == F.lit(s.source_database) if s.source_database
                 else F.col("source_database").isNotNull())
    return F.coalesce(reduce(lambda a, b: a & b, conds), F.lit(False))


@dataclass(frozen=True)
class RuleSet:
    name: str
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class Client:
    """A rules-engine client with its (possibly absent, possibly empty) rule sets."""

    streams_type: str
    name: str
    positive: RuleSet | None = None
    negative: RuleSet | None = None
    transformations: tuple[TransformSpec, ...] = ()
    number_policy: str = "decimal"

    @property
    def who(self) -> str:
        return f"{self.streams_type} {self.name}"

    def discard_reason(self) -> Column:
        """NULL when the client performs its task for a record, else why it discards it.

        Per-row form of the client's verdict (every rule as a Column); ``evaluate`` gives
        the same answer through the parameter table.
        """
        return _verdict_columns(self, None, None)[0]


@dataclass
class _Names:
    used: set[str] = field(default_factory=set)

    def take(self, name: str, where: str) -> str:
        if name in self.used:
            raise ConfigError(f"{where}: rule name {name} is used twice")
        self.used.add(name)
        return name

    def next(self, base: str) -> str:
        n = 1
        while f"{base}{n}" in self.used:
            n += 1
        return self.take(f"{base}{n}", base)


def _rules_of(spec: RuleSpec, base_name: str, names: _Names, column_types=None) -> list[Rule]:
    """The rules one request creates, named as DBMS_STREAMS_ADM names them (object + number)."""
    try:
        if spec.level == "CONDITION":
            parsed = parse_condition(spec.condition)
            if parsed.variable not in ("dml", "ddl"):
                raise RuleError("rule condition: use :dml or :ddl so the rule knows which LCRs it is for")
            name = names.take(spec.rule_name, spec.rule_name) if spec.rule_name else names.next(base_name)
            return [Rule(name, parsed.variable.upper(), spec.condition, spec, parsed=parsed)]
        if spec.level == "SUBSET":
            known = (column_types or {}).get((spec.owner, spec.table), {})
            texts, columns = subset_conditions(spec, known.get)
            return [
                Rule(names.next(spec.table), "DML", texts[d], spec, d, columns, parse_condition(texts[d]))
                for d in SUBSET_DML
            ]
        out = []
        for kind, wanted in (("DML", spec.include_dml), ("DDL", spec.include_ddl)):
            if wanted:
                if spec.and_condition:
                    # Alone first: pasted into the generated text, an and_condition such as
                    # "x = 1) OR (1 = 1" would close its parentheses and widen the whole rule.
                    try:
                        parse_condition(rewrite_lcr(spec.and_condition, kind.lower()))
                    except RuleError as e:
                        raise RuleError(f"and_condition must be one condition on its own: {e}") from None
                text = system_condition(spec, kind)
                parsed = parse_condition(text) if spec.and_condition else None
                out.append(Rule(names.next(spec.table or spec.owner or base_name), kind, text, spec, parsed=parsed))
        return out
    except RuleError as e:
        what = spec.dml_condition if spec.level == "SUBSET" else (spec.and_condition or spec.condition)
        raise RuleError(f"{e} in {what!r}") from e


def build_clients(channel: Channel | Sequence[ClientSpec], column_types=None) -> list[Client]:
    """Clients with their rule sets, capture first. Rule sets are shared by name: a set
    named by two clients holds the rules added through either (it may even be positive
    for one client and negative for the other). Rule names are unique in the channel.

    ``column_types`` ((owner, table) → {column: Oracle type}) picks the Access function of
    subset conditions; a Channel supplies its declared tables."""
    policy = channel.types.number_without_precision if isinstance(channel, Channel) else "decimal"
    if isinstance(channel, Channel) and column_types is None:
        from lakestreams.config import channel_column_types

        column_types = channel_column_types(channel)
    specs = list(channel.clients if isinstance(channel, Channel) else channel)
    specs.sort(key=lambda c: 0 if c.streams_type == "capture" else 1)
    if len({c.name.upper() for c in specs}) < len(specs):
        raise ConfigError(
            "capture and apply clients share the name "
            f"{specs[0].name!r}: their default rule sets would be one; give them different names"
        )
    names = _Names()
    set_rules: dict[str, list[Rule]] = {}
    set_names: list[tuple[str | None, str | None]] = []
    for c in specs:
        pos_name = c.positive_rule_set or f"{c.name.upper()}_RULESET"
        neg_name = c.negative_rule_set or f"{c.name.upper()}_NEGATIVE_RULESET"
        if pos_name == neg_name:
            raise RuleError(f"{c.streams_type} {c.name}: rule set {pos_name} cannot be both positive and negative")
        used_pos = used_neg = False
        for i, rs in enumerate(c.rules):
            try:
                created = _rules_of(rs, c.name.upper(), names, column_types)
            except RuleError as e:  # named as the channel file names it
                raise RuleError(f"{c.streams_type}.rules[{i}]: {e}") from e
            target = pos_name if rs.inclusion_rule else neg_name
            set_rules.setdefault(target, []).extend(created)
            used_pos |= bool(created) and rs.inclusion_rule
            used_neg |= bool(created) and not rs.inclusion_rule
        set_names.append(
            (pos_name if used_pos or c.positive_rule_set else None, neg_name if used_neg or c.negative_rule_set else None)
        )
    clients = []
    for c, (pos, neg) in zip(specs, set_names, strict=True):
        positive = RuleSet(pos, tuple(set_rules.get(pos, ()))) if pos else None
        negative = RuleSet(neg, tuple(set_rules.get(neg, ()))) if neg else None
        kept_rules = {r.name for r in (positive.rules if positive else ())}
        for t in c.transformations:
            check(t, policy)
            if t.rule not in kept_rules:
                raise ConfigError(
                    f"{c.streams_type} {c.name}: transformation {t.kind} names rule {t.rule}, which is not in the "
                    f"positive rule set {pos}; transformations run only for records a positive rule keeps"
                )
        clients.append(Client(c.streams_type, c.name, positive, negative, c.transformations, policy))
    return clients


# -- evaluation -------------------------------------------------------------------------

_RULE = "struct<ord:int,name:string>"


def _record_kind() -> Column:
    return F.when(is_ddl_lcr(), "DDL").when(is_row_lcr(), "DML")


def _simple_matches(df: DataFrame, simple: list[tuple[int, str, Rule]]) -> DataFrame:
    """Add ``_s_POS``/``_s_NEG``: the first TRUE plain rule of each polarity, per record.

    The rules are a parameter table, grouped on the driver per lookup key (DML/DDL,
    owner and table, owner, or nothing; and the rule's source database or any). For each
    key the first rule of each polarity is precomputed for tagged and untagged records.
    Records pick their answers up through broadcast hash joins (table rules by object
    and, for DDL, by base table; schema rules likewise by owner; global rules by kind)
    and keep the earliest: one pass over the records, plain expressions, whatever the
    number of rules.
    """
    spark = df.sparkSession
    lookups = [  # (rule level, DDL only, record columns, rule fields)
        ("TABLE", False, ("object_owner", "object_name"), ("owner", "table")),
        ("TABLE", True, ("base_table_owner", "base_table_name"), ("owner", "table")),
        ("SCHEMA", False, ("object_owner",), ("owner",)),
        ("SCHEMA", True, ("base_table_owner",), ("owner",)),
        ("GLOBAL", False, (), ()),
    ]
    answers = ("pu", "pt", "nu", "nt")  # positive/negative × untagged/tagged record
    df = df.withColumn("_k_kind", _record_kind())
    picks: dict[str, list[Column]] = {"POS": [], "NEG": []}
    temp: list[str] = ["_k_kind"]
    n = 0
    for level, ddl_only, rec_cols, fields in lookups:
        for any_source in (False, True):
            groups: dict[tuple, dict[str, tuple[int, str]]] = {}
            for o, pol, r in simple:
                s = r.spec
                if s.level != level or (ddl_only and r.kind != "DDL") or (s.source_database is None) != any_source:
                    continue
                key = (r.kind, *(getattr(s, f) for f in fields), s.source_database or "*")
                best = groups.setdefault(key, {})
                for tagged in (False, True):
                    if tagged and not s.include_tagged_lcr:
                        continue
                    slot = ("p" if pol == "POS" else "n") + ("t" if tagged else "u")
                    if slot not in best or (o, r.name) < best[slot]:
                        best[slot] = (o, r.name)
            if not groups:
                continue
            n += 1
            keys = [f"_k{n}_{c}" for c in ("kind", *fields, "src")]
            cols = [f"_k{n}_{a}" for a in answers]
            schema = ", ".join(f"{k} STRING" for k in keys) + "".join(f", {c} {_RULE}" for c in cols)
            rows = [(*k, *(v.get(a) for a in answers)) for k, v in groups.items()]
            # Grouped on the driver (work grows with rules): a local relation broadcasts
            # without a Spark job of its own.
            table = spark.createDataFrame(rows, schema, verifySchema=False)
            cond = [F.col("_k_kind") == F.col(keys[0])]
            cond += [F.col(r) == F.col(k) for r, k in zip(rec_cols, keys[1:-1], strict=True)]
            cond.append(F.col("source_database").isNotNull() if any_source else F.col("source_database") == F.col(keys[-1]))
            df = df.join(F.broadcast(table), reduce(lambda a, b: a & b, cond), "left").drop(*keys)
            untagged = F.col("tag").isNull()
            picks["POS"].append(F.when(untagged, F.col(cols[0])).otherwise(F.col(cols[1])))
            picks["NEG"].append(F.when(untagged, F.col(cols[2])).otherwise(F.col(cols[3])))
            temp += cols
    for pol, found in picks.items():
        first = F.lit(None).cast(_RULE) if not found else found[0] if len(found) == 1 else F.least(*found)
        df = df.withColumn(f"_s_{pol}", first)
    return df.drop(*temp)


def _first_true(rules: list[tuple[int, Rule]]) -> Column:
    out: Column = F.lit(None).cast(_RULE)
    for o, r in reversed(rules):
        out = F.when(r.column(), F.struct(F.lit(o).alias("ord"), F.lit(r.name).alias("name"))).otherwise(out)
    return out


def _earliest(a: Column | None, b: Column | None) -> Column:
    if a is None or b is None:
        return a if b is None else b
    return F.when(a.isNull() | (b.isNotNull() & (b["ord"] < a["ord"])), b).otherwise(a)


def _first_matches(client: Client, simple_pos: Column | None, simple_neg: Column | None):
    """For each existing rule set: per-row first TRUE rule (struct ord, name), and the
    parameter table's first match (or None when that set has no rules there)."""

    def first(rs: RuleSet | None, simple_first: Column | None):
        if rs is None:
            return None
        per_row = [(o, r) for o, r in enumerate(rs.rules) if not (r.simple and simple_first is not None)]
        return (_first_true(per_row) if per_row else None, simple_first)

    return first(client.positive, simple_pos), first(client.negative, simple_neg)


def _verdict(client: Client, pos: Column | None, neg: Column | None) -> tuple[Column, Column]:
    """(discard reason, acting rule) from each set's first TRUE rule, by Table 5-1."""
    who = client.who
    pos_set, neg_set = client.positive, client.negative
    reason: Column = F.lit(None).cast("string")
    acting: Column = F.lit(None).cast("string")
    if pos is not None:
        reason = F.when(pos.isNull(), F.lit(f"{who}: no rule of positive rule set {pos_set.name} is TRUE"))
        acting = pos["name"]
    if neg is not None:
        reason = F.when(
            neg.isNotNull(), F.concat(F.lit(f"{who}: negative rule "), neg["name"], F.lit(f" of {neg_set.name} is TRUE"))
        ).otherwise(reason)
        acting = F.coalesce(neg["name"], acting)
    if pos_set is not None and not pos_set.rules:
        reason = F.lit(f"{who}: positive rule set {pos_set.name} is empty")
        acting = F.lit(None).cast("string")
    return reason, acting


def _combine(parts) -> Column | None:
    if parts is None:
        return None
    per_row, simple = parts
    best = _earliest(simple, per_row)
    return best if best is not None else F.lit(None).cast(_RULE)


def _verdict_columns(client: Client, simple_pos: Column | None, simple_neg: Column | None) -> tuple[Column, Column]:
    """(discard reason, acting rule) as pure Columns (the per-row form)."""
    pos_parts, neg_parts = _first_matches(client, simple_pos, simple_neg)
    return _verdict(client, _combine(pos_parts), _combine(neg_parts))


def _evaluate_client(df: DataFrame, client: Client) -> DataFrame:
    """Add ``_discard`` (why the client discards, else NULL; an earlier discard is kept),
    ``_rule_<type>`` (the acting rule) and apply row migration for subset rules."""
    rules = [
        (o, pol, r)
        for pol, rs in (("POS", client.positive), ("NEG", client.negative)) if rs is not None
        for o, r in enumerate(rs.rules)
    ]
    simple = [x for x in rules if x[2].simple]
    sp = sn = None
    if len(simple) >= PARAMETER_TABLE_FROM:
        df = _simple_matches(df, simple)
        sp, sn = F.col("_s_POS"), F.col("_s_NEG")
        if not any(p == "POS" for _, p, _ in simple):
            sp = None
        if not any(p == "NEG" for _, p, _ in simple):
            sn = None
    # Each set's first TRUE rule is computed once into a column, then read by name.
    firsts = {}
    for label, parts in zip(("_c_pos", "_c_neg"), _first_matches(client, sp, sn), strict=True):
        if parts is None:
            continue
        per_row, simple = parts
        if per_row is not None:
            df = df.withColumn(f"{label}_rows", per_row)
            per_row = F.col(f"{label}_rows")
        df = df.withColumn(label, _combine((per_row, simple)))
        firsts[label] = F.col(label)
    reason, acting = _verdict(client, firsts.get("_c_pos"), firsts.get("_c_neg"))
    earlier = F.col("_discard")
    rule_col = f"_rule_{client.streams_type}"
    df = (
        df.withColumn("_c_reason", reason)
        .withColumn(rule_col, F.when(earlier.isNull(), acting))
        .withColumn("_discarded_by", F.when(earlier.isNull() & F.col("_c_reason").isNotNull(), F.lit(client.streams_type))
                    .otherwise(F.col("_discarded_by")))
        .withColumn("_discard", F.coalesce(earlier, F.col("_c_reason")))
        .drop("_c_reason", "_s_POS", "_s_NEG", "_c_pos", "_c_neg", "_c_pos_rows", "_c_neg_rows")
    )
    df = df.transform(_undecidable_subsets, client, earlier)
    return df.transform(migrate_rows, client)


def _undecidable_subsets(df: DataFrame, client: Client, earlier: Column) -> DataFrame:
    """An UPDATE or DELETE of a subset table whose subset columns are in neither image
    cannot be placed inside or outside the subset: an error, not a silent discard."""
    specs = {r.spec: r.subset_columns for r in (client.positive.rules if client.positive else ()) if r.subset_dml}
    if not specs:
        return df
    err: Column = F.lit(None).cast("string")
    for s, columns in sorted(specs.items(), key=lambda x: (x[0].owner, x[0].table, x[0].dml_condition)):
        missing = [
            F.when(
                F.expr(f"variant_get(old_values, '$[\"{c}\"]')").isNull()
                & F.expr(f"variant_get(new_values, '$[\"{c}\"]')").isNull(),
                F.lit(c),
            )
            for c in columns
        ]
        absent = F.array_join(F.filter(F.array(*missing), lambda x: x.isNotNull()), ", ")
        applies = (
            is_row_lcr() & F.col("command_type").isin("UPDATE", "DELETE")
            & (F.col("object_owner") == s.owner) & (F.col("object_name") == s.table)
            & (F.lit(s.include_tagged_lcr) | F.col("tag").isNull())
            & (F.lit(s.source_database is None) | (F.col("source_database") == F.lit(s.source_database or "")))
        )
        err = F.when(
            applies & (absent != ""),
            F.concat(
                F.lit(f"{client.who}: subset rule on {s.owner}.{s.table} ({s.dml_condition}) cannot place the row: "),
                absent,
                F.lit(" in neither the old nor the new image (supplemental logging of subset columns is required)"),
            ),
        ).otherwise(err)
    no_rule = (F.col("_discarded_by") == client.streams_type) & F.col("_discard").contains("no rule of positive")
    return df.withColumn("_rule_error", F.coalesce(F.col("_rule_error"), F.when(no_rule, err)))


def migrate_rows(df: DataFrame, client: Client) -> DataFrame:
    """Row migration: an UPDATE kept by a subset insert rule becomes an INSERT of the whole
    row (old ∪ new, new wins); kept by a subset delete rule it becomes a DELETE."""
    rule_col = f"_rule_{client.streams_type}"
    subset = [r for r in (client.positive.rules if client.positive else ()) if r.subset_dml in ("INSERT", "DELETE")]
    if not subset:
        return df
    to: Column = F.lit(None).cast("string")
    for r in subset:
        to = F.when(F.col(rule_col) == r.name, F.lit(r.subset_dml)).otherwise(to)
    move = F.when(F.col("_discard").isNull() & (F.col("command_type") == "UPDATE"), to)
    old_map = F.expr("try_variant_get(old_values, '$', 'map<string,variant>')")
    new_map = F.expr("try_variant_get(new_values, '$', 'map<string,variant>')")
    new_keys = F.coalesce(F.map_keys(new_map), F.array().cast("array<string>"))
    whole = F.map_concat(
        F.map_filter(F.coalesce(old_map, F.create_map().cast("map<string,variant>")),
                     lambda k, v: ~F.array_contains(new_keys, k)),
        F.coalesce(new_map, F.create_map().cast("map<string,variant>")),
    )
    return (
        df.withColumn("_move", move)
        .withColumn("new_values", F.when(F.col("_move") == "INSERT", F.to_variant_object(whole))
                    .when(F.col("_move") == "DELETE", F.lit(None).cast("variant")).otherwise(F.col("new_values")))
        .withColumn("old_values", F.when(F.col("_move") == "INSERT", F.lit(None).cast("variant"))
                    .otherwise(F.col("old_values")))
        .withColumn("_migrated_from", F.when(F.col("_move").isNotNull(), F.lit("UPDATE")).otherwise(F.col("_migrated_from")))
        .withColumn("_migrated_by", F.when(F.col("_move").isNotNull(), F.lit(client.streams_type))
                    .otherwise(F.col("_migrated_by")))
        .withColumn("command_type", F.coalesce(F.col("_move"), F.col("command_type")))
        .drop("_move")
    )


def evaluate(df: DataFrame, clients: Sequence[Client], transform=apply_transformations) -> DataFrame:
    """Run the clients over change records, capture first, each seeing what the previous
    one produced (row migration, transformations). Adds ``_discard`` and ``_discarded_by``,
    ``_rule_capture``/``_rule_apply`` (the acting rules), ``_migrated_from``/``_migrated_by``,
    ``_rule_error``, and keeps the source object in ``_source_owner``/``_source_name``."""
    df = df.withColumn("_discard", F.lit(None).cast("string")).withColumn(
        "_discarded_by", F.lit(None).cast("string")).withColumn("_migrated_by", F.lit(None).cast("string")).withColumn(
        "_source_owner", F.col("object_owner")).withColumn("_source_name", F.col("object_name")).withColumn(
        "_migrated_from", F.lit(None).cast("string")).withColumn("_rule_error", F.lit(None).cast("string"))
    for t in ("capture", "apply"):
        df = df.withColumn(f"_rule_{t}", F.lit(None).cast("string"))
    for c in clients:
        df = _evaluate_client(df, c)
        if transform is not None:
            df = transform(df, c)
    return df


def describe(clients: Sequence[Client]) -> list[dict[str, str]]:
    """Every rule with its client, rule set and Oracle condition (like DBA_STREAMS_RULES)."""
    out = []
    for client in clients:
        for kind, rs in (("POSITIVE", client.positive), ("NEGATIVE", client.negative)):
            for r in rs.rules if rs else ():
                out.append({
                    "streams_type": client.streams_type,
                    "streams_name": client.name,
                    "rule_set_type": kind,
                    "rule_set_name": rs.name,
                    "rule_name": r.name,
                    "rule_type": r.kind,
                    "subset_operation": r.subset_dml or "",
                    "condition": r.condition,
                })
    return out
