"""Value conflicts: the old values of a change against the row its previous change left.

An UPDATE or DELETE carries old values. Each compared non-key column is checked
against the row as the key's previous change left it: the change before it in the
same row incarnation of this plan, else the row gold holds. Changes are judged in plan
order (SCN within a source), so the same records always give the same conflicts.

A conflict in the columns of an update conflict handler is resolved by its method:
OVERWRITE applies the record's values of the column list, DISCARD keeps the row's,
MAXIMUM (MINIMUM) applies them only if the record's resolution column is greater
(smaller) than the row's; a NULL on either side cannot be compared and is not
resolved. A conflict no handler resolves, and any conflict of a DELETE, fails the
transaction (ORA-26786). Discarded columns leave the change's ``_new_present``, so the
apply's fold keeps the row's values.

Where no change of a row incarnation fails or loses columns, the row before a change
is what the changes before it set: a window over the incarnation. Elsewhere what a
change meets depends on how the one before it was judged, so those incarnations (few:
they hold a conflict) are folded in order by ``aggregate`` in Spark, a failing change
leaving the row as it was; never on the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from gold.late import after_floors
from gold.snapshot import above_instantiation
from lakestreams.config import Channel
from lakestreams.errors import ApplyError
from lakestreams.spark import release
from lakestreams.timing import step
from silver.dictionary import TableDef

#: Methods that may keep the row's values.
SEQUENTIAL_METHODS = ("DISCARD", "MAXIMUM", "MINIMUM")
RESOLUTION = "STRUCT<method: STRING, columns: STRING, resolution: STRING>"
JUDGED = f"STRUCT<_seq: BIGINT, _cerr: STRING, _dropped: ARRAY<STRING>, _resolutions: ARRAY<{RESOLUTION}>>"


@dataclass(frozen=True)
class Group:
    """A column list: with a handler (method, resolution column) or without one."""

    method: str | None
    resolution: str | None
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Policy:
    """How one target's changes are judged."""

    update_compared: frozenset[str]
    delete_compared: frozenset[str]
    groups: tuple[Group, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for g in self.groups for c in g.columns)


def comparable(table: TableDef) -> tuple[str, ...]:
    """Non-key columns whose old values can be compared (VARIANT values have no equality)."""
    return tuple(c.name for c in table.columns if c.name not in table.key_columns and c.type.spark != "VARIANT")


def policy_for(channel: Channel, table: TableDef) -> Policy:
    """The target's handlers and compared columns; a setting naming a column the target
    lacks, or a key column, is refused before anything is applied."""
    label = f"{table.owner}.{table.name}"
    nonkey = comparable(table)

    def check(columns: tuple[str, ...], what: str) -> None:
        for c in columns:
            if c in table.key_columns:
                raise ApplyError(f"{what} of {label} names key column {c}: rows are found by it, it is never compared")
            if c not in nonkey:
                raise ApplyError(
                    f"{what} of {label} names {c}, which is not a comparable column of the target "
                    f"(comparable: {', '.join(nonkey) or 'none'})"
                )

    groups = []
    for h in channel.conflict_handlers:
        if (h.owner, h.table) == (table.owner, table.name):
            check(h.columns, f"the {h.method} update conflict handler")
            groups.append(Group(h.method, h.resolution_column, h.columns))
    handled = {c for g in groups for c in g.columns}
    rest = tuple(c for c in nonkey if c not in handled)
    if rest:
        groups.append(Group(None, None, rest))
    compared = {"UPDATE": set(nonkey), "DELETE": set(nonkey)}
    for s in channel.compare_old_values:
        if (s.owner, s.table) != (table.owner, table.name):
            continue
        cols = nonkey if s.columns == ("*",) else s.columns
        check(cols, "compare_old_values")
        for op in ("UPDATE", "DELETE"):
            if s.operation in (op, "*"):
                compared[op] = compared[op] | set(cols) if s.compare else compared[op] - set(cols)
    return Policy(frozenset(compared["UPDATE"]), frozenset(compared["DELETE"]), tuple(groups))


def _judge(x: dict[str, Column], cur: dict[str, Column], policy: Policy, label: str) -> tuple[Column, Column, Column, dict[str, Column]]:
    """One change against the row before it: (error or NULL, dropped columns, resolutions,
    the row after it). ``x`` holds the change's fields, ``cur`` the row's values."""
    is_u, is_d = x["_op"] == "U", x["_op"] == "D"
    conflict: dict[str, Column] = {}
    for c in policy.columns:
        when = [w for w, on in ((is_u, c in policy.update_compared), (is_d, c in policy.delete_compared)) if on]
        if not when:
            conflict[c] = F.lit(False)
            continue
        differs = F.array_contains(x["_old_present"], c) & ~x["_old"][c].eqNullSafe(cur[c])
        conflict[c] = (when[0] if len(when) == 1 else (when[0] | when[1])) & differs
    unresolved_cols, dropped, resolutions = [], [], []
    for g in policy.groups:
        g_conf = F.lit(False)
        for c in g.columns:
            g_conf = g_conf | conflict[c]
        if g.method is None:
            unresolved = g_conf
        elif g.method == "OVERWRITE":
            unresolved = g_conf & is_d
        elif g.method == "DISCARD":
            unresolved = g_conf & is_d
            dropped += [F.when(g_conf & is_u, F.lit(c)) for c in g.columns]
        else:
            r = g.resolution
            record = F.when(F.array_contains(x["_new_present"], r), x["_new"][r]).otherwise(x["_old"][r])
            unresolved = g_conf & (is_d | record.isNull() | cur[r].isNull())
            wins = record > cur[r] if g.method == "MAXIMUM" else record < cur[r]
            dropped += [F.when(g_conf & ~unresolved & ~wins, F.lit(c)) for c in g.columns]
        unresolved_cols += [F.when(unresolved & conflict[c], F.lit(c)) for c in g.columns]
        if g.method is not None:
            lost = dropped[-1] if g.method in SEQUENTIAL_METHODS else F.lit(None)
            resolutions.append(F.when(
                g_conf & ~unresolved,
                F.struct(F.lit(g.method).alias("method"), F.lit(", ".join(g.columns)).alias("columns"),
                         F.when(lost.isNotNull(), "discarded").otherwise("applied").alias("resolution")),
            ))
    bad = F.filter(F.array(*unresolved_cols, F.lit(None).cast("string")), lambda v: v.isNotNull())
    dropped_arr = F.filter(F.array(*dropped, F.lit(None).cast("string")), lambda v: v.isNotNull())
    res_arr = F.filter(F.array(*resolutions, F.lit(None).cast(RESOLUTION)), lambda v: v.isNotNull())
    error = F.when(
        F.size(bad) > 0,
        F.concat(
            F.when(is_d, F.lit("DELETE")).otherwise(F.lit("UPDATE")),
            F.lit(f" of {label} finds the row with key "), F.to_json(x["_okey"]),
            F.lit(" holding other values than the record's old values in "), F.array_join(bad, ", "),
            F.lit(" (ORA-26786: a row with key exists but has conflicting column(s))"),
            F.when(is_u, F.lit("; no update conflict handler resolves them")).otherwise(F.lit("")),
        ),
    )
    after = {
        c: F.when(F.array_contains(x["_new_present"], c) & ~F.array_contains(dropped_arr, c), x["_new"][c]).otherwise(cur[c])
        for c in policy.columns
    }
    return error, dropped_arr, res_arr, after


def at_keys(replica: DataFrame, keys: DataFrame) -> DataFrame:
    """The rows of ``replica`` (keyed by ``_gk``) at the few keys of ``keys`` (one column),
    for a join that then needs no shuffle: the keys are broadcast to the replica's scan and
    the rows found there broadcast back, rather than the whole replica shuffled to meet them."""
    wanted = F.broadcast(keys.toDF("_wk"))
    return F.broadcast(replica.join(wanted, F.col("_gk").eqNullSafe(F.col("_wk")), "left_semi"))


def judge_values(
    spark: SparkSession, planned: DataFrame, with_inst: Callable[[DataFrame], DataFrame], gold_table: str,
    table: TableDef, policy: Policy,
    floors: DataFrame | None = None, few: bool = False,
) -> DataFrame:
    """``planned`` with value conflicts judged (from a checkpoint): ``_new_present`` without
    discarded columns, ``_cerr`` (the conflict no handler resolves) and ``_resolutions``;
    also ``_above`` (above the instantiation SCN, which ``with_inst`` adds per source:
    ``gold.plan.with_inst_literals``), the incarnation's ``_first_op`` and
    ``_start_key``, and for row_conflicts ``_no_row`` and ``_found_here`` (gold holds a
    live row at the change's old key, after ``floors``). Changes at or below the
    instantiation SCN are not judged and leave no state. A decided change (``_decided``:
    applied history of a re-folded key, ``gold.late``) always applies; what would fail
    it is ``_derr``, never ``_cerr``. ``few``: the changes are few (``gold.plan.
    broadcasts``), and the replica's rows are looked up by their keys (``at_keys``)."""
    out_cols = list(planned.columns)
    label = f"{table.owner}.{table.name}"
    # Nothing compared (compare_old_values off for every column): no value can conflict.
    cols = policy.columns if policy.update_compared or policy.delete_compared else ()
    row_type = "STRUCT<" + (", ".join(f"`{c}`: {table.column(c).type.spark}" for c in cols) or "_none: INT") + ">"
    rows = with_inst(planned).withColumn("_above", above_instantiation()).drop("instantiation_scn", "snapshot_transaction")
    # The row gold holds at each change's old key; the incarnation's first change above
    # the instantiation SCN (an UPDATE or DELETE: its old key is where it starts) picks it.
    name = gold_table.replace("`", "")
    if spark.catalog.tableExists(name):
        gold = spark.table(name)
        gold = gold.where(~F.col("_is_deleted")) if "_is_deleted" in gold.columns else gold  # soft deletes
        gold = after_floors(gold, floors)  # rows a TRUNCATE removes
        gold = gold.select(
            F.struct(*[F.col(f"`{k}`") for k in table.key_columns]).alias("_gk"),
            (F.struct(*[F.col(f"`{c}`") for c in cols]) if cols else F.lit(None)).cast(row_type).alias("_at_key"),
        )
        if few:
            # The lookup and the join both read the ordered changes: ordered once (a job
            # over few rows), not once for each.
            rows = rows.localCheckpoint()
            gold = at_keys(gold, rows.select("_okey"))
        rows = rows.join(gold, rows["_okey"].eqNullSafe(gold["_gk"]), "left").withColumn(
            "_found_here", F.col("_gk").isNotNull()).drop("_gk")
    else:
        rows = rows.withColumn("_at_key", F.lit(None).cast(row_type)).withColumn("_found_here", F.lit(False))
    whole = Window.partitionBy("_root").orderBy("_seq").rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    prior = Window.partitionBy("_root").orderBy("_seq").rowsBetween(Window.unboundedPreceding, -1)
    first_op = F.first(F.when(F.col("_above"), F.col("_op")), True).over(whole)
    start = F.first(F.when(F.col("_above"), F.struct("_okey", "_at_key", "_found_here", "_gap")), True).over(whole)
    has_row = (F.col("_first_op") == "I") | (F.col("_start._found_here") & ~F.col("_start._gap"))
    rows = rows.withColumn("_first_op", first_op).withColumn("_start", start).select(
        *out_cols, "_above", "_first_op", "_found_here",
        F.col("_start._okey").alias("_start_key"),
        F.when(F.col("_first_op") != "I", F.col("_start._at_key")).alias("_b"),
        # An incarnation that starts with an UPDATE or DELETE where no row is: row_conflicts'
        # ORA-01403. Only changes whose row exists are judged for values.
        (F.col("_above") & ~has_row).alias("_no_row"),
        (F.col("_above") & has_row).alias("_judged"),
    )
    if not cols:
        return rows.select(*out_cols, "_above", "_first_op", "_found_here", "_start_key", "_no_row",
                           F.lit(None).cast("string").alias("_cerr"),
                           F.lit(None).cast("string").alias("_derr"),
                           F.array().cast(f"ARRAY<{RESOLUTION}>").alias("_resolutions")).localCheckpoint()
    fields = ("_seq", "_op", "_okey", "_old", "_old_present", "_new", "_new_present")
    # Every change judged as if all before it were applied whole: exact for an incarnation
    # where no change fails or loses columns.
    cur = {}
    for i, c in enumerate(cols):
        prev = F.last(F.when(F.col("_above") & F.array_contains("_new_present", c), F.struct(F.col("_new")[c].alias("v"))),
                      True).over(prior)
        cur[c] = F.when(prev.isNotNull(), prev["v"]).otherwise(F.col("_b")[c]).alias(f"_cur{i}")
    # The row before each change as columns of their own: the judging refers to them many
    # times, and window expressions repeated in one tree would be planned as often.
    rows = rows.select("*", *cur.values())
    error, dropped, res, _ = _judge({f: F.col(f) for f in fields}, {c: F.col(f"_cur{i}") for i, c in enumerate(cols)},
                                    policy, label)
    cerr = F.when(F.col("_judged"), error)
    drops = F.when(F.col("_judged"), dropped).otherwise(F.array().cast("array<string>"))
    # ``_uneven``: the incarnation holds a change that fails or loses columns; a window in
    # the same checkpoint (the rows are partitioned by incarnation already), over the judged
    # columns so the judging is not repeated. A decided change (applied history of a
    # re-folded key) stays applied whole whatever it meets: its error does not fail it.
    uneven = (F.col("_cerr").isNotNull() & ~F.col("_decided")) | (F.size("_dropped") > 0)
    with step("plan.values.window"):
        judged = rows.select(
            *[c for c in rows.columns if not c.startswith("_cur")],
            cerr.alias("_cerr"), drops.alias("_dropped"),
            F.when(F.col("_judged"), res).otherwise(F.array().cast(f"ARRAY<{RESOLUTION}>")).alias("_resolutions"),
        ).withColumn("_uneven", F.max(uneven).over(Window.partitionBy("_root"))).localCheckpoint()
    kept = [c for c in judged.columns if c != "_uneven"]
    with step("plan.values.uneven"):
        has_uneven = judged.where("_uneven").limit(1).count() > 0
    if has_uneven:
        # Where a change fails or loses columns, what the next one meets depends on it:
        # those incarnations (they hold a conflict) are folded in order, a failing change
        # leaving the row as it was.
        row = F.struct(*[F.col(c) for c in kept])
        per_root = judged.where("_uneven").groupBy("_root").agg(
            F.first(F.when(F.col("_above"), F.col("_b")), True).alias("_b0"),
            F.array_sort(F.collect_list(row), lambda a, b: F.when(a["_seq"] < b["_seq"], -1)
                         .when(a["_seq"] > b["_seq"], 1).otherwise(0)).alias("_changes"),
        )

        def fold(acc: Column, x: Column) -> Column:
            err, drop, resolved, after = _judge({f: x[f] for f in fields}, {c: acc["cur"][c] for c in cols}, policy, label)
            err = F.when(x["_judged"], err)
            drop = F.when(x["_judged"], drop).otherwise(F.array().cast("array<string>"))
            resolved = F.when(x["_judged"], resolved).otherwise(F.array().cast(f"ARRAY<{RESOLUTION}>"))
            keep = ~x["_above"] | (err.isNotNull() & ~x["_decided"])
            out = F.struct(x["_seq"].alias("_seq"), err.alias("_cerr"), drop.alias("_dropped"), resolved.alias("_resolutions"))
            state = F.struct(*[F.when(keep, acc["cur"][c]).otherwise(after[c]).alias(c) for c in cols])
            return F.struct(state.alias("cur"), F.concat(acc["out"], F.array(out)).alias("out"))

        zero = F.struct(F.col("_b0").alias("cur"), F.array().cast(f"ARRAY<{JUDGED}>").alias("out"))
        # The fold judges the changes in the order it holds them: its n-th judgement is the
        # n-th change's, so the two arrays zip back into rows (no join with the changes).
        folded = per_root.select(F.explode(F.arrays_zip(
            "_changes", F.aggregate("_changes", zero, fold)["out"].alias("_out"))).alias("_z"))
        judgement = ("_cerr", "_dropped", "_resolutions")
        redo = folded.select(*[F.col("_z._out" if c in judgement else "_z._changes")[c].alias(c) for c in kept])
        whole_judged = judged
        judged = judged.where(~F.col("_uneven")).select(*kept).unionByName(redo).localCheckpoint()
        release(whole_judged)  # read by the checkpoint just made, by nothing after
    # A projection of the checkpoint (``_uneven`` left out): no further job.
    return judged.select(
        *[c for c in out_cols if c != "_new_present"],
        F.array_except("_new_present", "_dropped").alias("_new_present"),
        "_above", "_first_op", "_found_here", "_start_key", "_no_row",
        F.when(~F.col("_decided"), F.col("_cerr")).alias("_cerr"), F.when(F.col("_decided"), F.col("_cerr")).alias("_derr"),
        F.when(~F.col("_decided"), F.col("_resolutions")).otherwise(F.array().cast(f"ARRAY<{RESOLUTION}>"))
        .alias("_resolutions"),
    )


def value_conflicts(judged: DataFrame) -> DataFrame:
    """Failures in the plan's (source, transaction, error, failing record) form, with where
    the change is (its ``_seq``, ``_root``, ``_decided``, keys)."""
    return judged.where("_cerr IS NOT NULL").select(
        "_source_database", "_transaction_id", F.col("_cerr").alias("_error"),
        F.lit(None).cast("string").alias("failing_record"), "_seq", "_root", "_decided", "_okey", "_nkey", "_position")


def resolutions(judged: DataFrame, plan_id: int, model: str) -> DataFrame:
    """One row per resolved conflict of a column list: the apply_conflicts log."""
    return judged.select(
        "_source_database", "_transaction_id", "_commit_scn", "_seq", F.to_json("_okey").alias("key"),
        F.explode("_resolutions").alias("r"),
    ).select(
        F.lit(plan_id).cast("bigint").alias("plan_id"), F.lit(model).alias("target"),
        F.col("_source_database").alias("source_database"), F.col("_transaction_id").alias("transaction_id"),
        "_commit_scn", "key", "r.method", "r.columns", "r.resolution",
    ).withColumnRenamed("_commit_scn", "commit_scn")
