{#
  lakestreams_apply: the one apply of every replicated table.
  The model's SQL yields the table's planned changes above its instantiation SCN
  (ordered by _seq, grouped into row incarnations by _root). This folds each
  incarnation into its net effect and MERGEs it into the target: an upsert at the
  incarnation's final key, a delete at the key it started from when the row moved
  or was deleted. Columns an UPDATE did not carry keep the target's value: where the plan
  moves no row to another key (LAKESTREAMS_IN_PLACE), the row the MERGE matches is the one
  the incarnation started from, and its values are kept there; elsewhere the replica is
  joined at each incarnation's first key for them.
  With soft_delete, a delete marks the row (_is_deleted) instead of removing it. A
  TRUNCATE (a plan row with _op T) first removes (or marks) every row an earlier change
  wrote.
  With history 'timekey', every applied change is appended to <model>__changes; with
  'scd2', <model>__history keeps one version per transaction (valid from/to SCN).
  The history is written first (its base is the replica before this plan), then the
  replica. Every write is keyed by the plan id through Delta's txnAppId/txnVersion, so a
  re-run after a crash does not apply the same plan twice. Delta keeps the key in each
  table's own log, and these session settings are one for the whole process, so the key is
  set one of two ways (LAKESTREAMS_KEY):
  - run: gold.dbt set (gold.plan, plan id) for the whole dbt run, and models run side by
    side; each table is written once, so the one key serves every write;
  - statement: each write sets (gold.<table>, plan id) and resets it after; a TRUNCATE
    writes the replica (and its history) twice, so a truncating model runs this way, in a
    dbt run of one thread.
#}
{% materialization lakestreams_apply, adapter='spark' %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing = load_relation(this) -%}
  {%- set keys = config.require('key_columns') -%}
  {%- set columns = config.require('columns') -%}
  {%- set history = config.get('history') -%}
  {%- set soft_delete = config.get('soft_delete', false) -%}
  {%- set plan_id = env_var('LAKESTREAMS_PLAN_ID') | int -%}
  {{ run_hooks(pre_hooks) }}
  {% if existing is none %}
    {% call statement('create_target') %}
      create table {{ target_relation }} (
        {% for c in columns %}`{{ c[0] }}` {{ c[1] }}, {% endfor %}
        _source_database string, _transaction_id string, _commit_scn bigint, _commit_time timestamp
        {%- if soft_delete %}, _is_deleted boolean{% endif %}
      ) using delta
      {{ lakestreams_gold_properties() }}
    {% endcall %}
  {% endif %}
  {%- set truncating = this.identifier in fromjson(env_var('LAKESTREAMS_TRUNCATING', '[]')) -%}
  {%- if truncating and lakestreams_run_keyed() -%}
    {{ exceptions.raise_compiler_error("lakestreams_apply: " ~ this.identifier ~ " truncates in this plan and writes "
       ~ "its tables twice: it must run keyed per statement (LAKESTREAMS_KEY=statement), not by the run's one key") }}
  {%- endif -%}
  {% if history == 'timekey' %}
    {{ lakestreams_timekey(sql, keys, columns, plan_id) }}
  {% elif history == 'scd2' %}
    {{ lakestreams_scd2(sql, target_relation, keys, columns, plan_id, soft_delete, truncating) }}
  {% endif %}
  {% if truncating %}
    {% call statement('truncate') %}
      {{ lakestreams_truncate(sql, target_relation, keys, soft_delete) }}
    {% endcall %}
  {% endif %}
  {%- set in_place = this.identifier in fromjson(env_var('LAKESTREAMS_IN_PLACE', '[]')) -%}
  {#- A small plan (LAKESTREAMS_BROADCAST): its net effect is broadcast to the MERGE's search for
      matching files, which would otherwise shuffle the whole replica to meet it (the planner
      cannot tell its size from its query). -#}
  {%- set small = this.identifier in fromjson(env_var('LAKESTREAMS_BROADCAST', '[]')) -%}
  {% set body %}
    merge into {{ target_relation }} t
    using (
      {%- if small %}select /*+ BROADCAST(n) */ * from ({% endif -%}
      {{ lakestreams_net_effect(sql, target_relation, keys, columns, soft_delete, in_place) }}
      {%- if small %}) n{% endif -%}
    ) s
    on {{ lakestreams_key_match('t', 's', keys) }}
    {% if soft_delete %}
    when matched and s._action = 'D' then update set
      t._is_deleted = true,
      t._source_database = coalesce(s._source_database, t._source_database),
      t._transaction_id = coalesce(s._transaction_id, t._transaction_id),
      t._commit_scn = coalesce(s._commit_scn, t._commit_scn), t._commit_time = coalesce(s._commit_time, t._commit_time)
    {% else %}
    when matched and s._action = 'D' then delete
    {% endif %}
    when matched then update set
      {% for c in columns -%}
        {%- if c[0] in keys or not in_place -%}
          t.`{{ c[0] }}` = s.`{{ c[0] }}`,
        {%- else -%}
          t.`{{ c[0] }}` = case when s.`_keep__{{ c[0] }}` {% if soft_delete %}and not t._is_deleted {% endif -%}
            then t.`{{ c[0] }}` else s.`{{ c[0] }}` end,
        {%- endif %}
      {% endfor %}
      t._source_database = s._source_database, t._transaction_id = s._transaction_id,
      t._commit_scn = s._commit_scn, t._commit_time = s._commit_time
      {%- if soft_delete %}, t._is_deleted = s._deleted{% endif %}
    when not matched and s._action = 'U' then insert
      ({% for c in columns %}`{{ c[0] }}`, {% endfor %} _source_database, _transaction_id, _commit_scn, _commit_time
       {%- if soft_delete %}, _is_deleted{% endif %})
      values ({% for c in columns %}s.`{{ c[0] }}`, {% endfor %} s._source_database, s._transaction_id, s._commit_scn, s._commit_time
       {%- if soft_delete %}, s._deleted{% endif %})
  {% endset %}
  {{ lakestreams_keyed('main', target_relation, plan_id, body) }}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{# A sibling table of the model (its history), as a relation. #}
{% macro lakestreams_sibling(suffix) -%}
  {{ return(api.Relation.create(database=this.database, schema=this.schema, identifier=this.identifier ~ suffix, type='table')) }}
{%- endmacro %}


{# Whether this dbt run's writes are keyed by the one key gold.dbt set for it (LAKESTREAMS_KEY run). #}
{% macro lakestreams_run_keyed() -%}
  {%- set mode = env_var('LAKESTREAMS_KEY', 'statement') -%}
  {%- if mode not in ('run', 'statement') -%}
    {{ exceptions.raise_compiler_error("LAKESTREAMS_KEY must be run or statement, not " ~ mode) }}
  {%- endif -%}
  {{ return(mode == 'run') }}
{%- endmacro %}


{# Run one write keyed by the plan id: skipped if that write committed. Keyed by the run's
   key (gold.plan, plan id), or, per statement, by (gold.<table>, plan id). #}
{% macro lakestreams_keyed(name, relation, plan_id, body) -%}
  {% if lakestreams_run_keyed() %}
    {% call statement(name) %}{{ body }}{% endcall %}
  {% else %}
    {% call statement(name ~ '_app') %}set spark.databricks.delta.write.txnAppId = gold.{{ relation.identifier }}{% endcall %}
    {% call statement(name ~ '_version') %}set spark.databricks.delta.write.txnVersion = {{ plan_id }}{% endcall %}
    {% call statement(name) %}{{ body }}{% endcall %}
    {% call statement(name ~ '_reset_app') %}reset spark.databricks.delta.write.txnAppId{% endcall %}
    {% call statement(name ~ '_reset_version') %}reset spark.databricks.delta.write.txnVersion{% endcall %}
  {% endif %}
{%- endmacro %}


{#
  TimeKey: every change applied now, appended once (HVR's TimeKey): the operation, its
  commit SCN and position, and the values it carried (an INSERT's or UPDATE's new values;
  NULL for a column it did not carry, _columns lists those it did), at the key it holds
  (a DELETE: the key it removes, no values). Append-only, so a late change simply lands
  with its SCN.
#}
{% macro lakestreams_timekey(changes_sql, keys, columns, plan_id) -%}
  {%- set rel = lakestreams_sibling('__changes') -%}
  {% if load_relation(rel) is none %}
    {% call statement('create_timekey') %}
      create table {{ rel }} (
        {% for c in columns %}`{{ c[0] }}` {{ c[1] }}, {% endfor %}
        _op string, _columns array<string>, _source_database string, _transaction_id string,
        _commit_scn bigint, _commit_time timestamp, _position bigint, _plan_id bigint
      ) using delta
      {{ lakestreams_gold_properties() }}
    {% endcall %}
  {% endif %}
  {% set body %}
    insert into {{ rel }}
    select
      {% for c in columns %}
        {%- if c[0] in keys -%}
          case when _op = 'D' then _okey.`{{ c[0] }}` else _nkey.`{{ c[0] }}` end,
        {%- else -%}
          case when _op <> 'D' and array_contains(_new_present, '{{ c[0] }}') then _new.`{{ c[0] }}` end,
        {%- endif %}
      {% endfor %}
      _op, case when _op = 'D' then array() else _new_present end,
      _source_database, _transaction_id, _commit_scn, _commit_time, cast(_position as bigint), {{ plan_id }}
    from ({{ changes_sql }}) c
    where not _decided
  {% endset %}
  {{ lakestreams_keyed('timekey', rel, plan_id, body) }}
{%- endmacro %}


{# Null-safe equality of the key columns of two relations (a substitute key may hold NULLs). #}
{% macro lakestreams_key_match(left, right, keys) -%}
  {% for k in keys %}{{ left }}.`{{ k }}` <=> {{ right }}.`{{ k }}`{% if not loop.last %} and {% endif %}{% endfor %}
{%- endmacro %}


{# Net effect of planned changes per row incarnation: rows with _action U (upsert; _deleted when
   soft deletes keep a deleted incarnation) or D (delete), at most one per key. in_place: no
   incarnation moves (a move raises an error); a column no change set is NULL with _keep__<c>
   true where the row the MERGE matches holds its value (an incarnation not opened by an
   INSERT). Otherwise the replica at the incarnation's first key gives those values. #}
{% macro lakestreams_net_effect(changes_sql, target_relation, keys, columns, soft_delete=false, in_place=false) -%}
  with c as (
    select * from ({{ changes_sql }}) where _op <> 'T'
  ),
  r as (
    select _root,
      min_by(_okey, _seq) as _start_key,
      max_by(_nkey, _seq) as _final_key,
      min_by(_op, _seq) as _first_op,
      max_by(_op, _seq) as _last_op,
      max_by(_source_database, _seq) as _source_database,
      max_by(_transaction_id, _seq) as _transaction_id,
      max_by(_commit_scn, _seq) as _commit_scn,
      max_by(_commit_time, _seq) as _commit_time,
      max(_seq) as _last_seq
      {%- for c in columns if c[0] not in keys %},
      max_by(_new.`{{ c[0] }}`, _seq) filter (where array_contains(_new_present, '{{ c[0] }}')) as `{{ c[0] }}`,
      count_if(array_contains(_new_present, '{{ c[0] }}')) > 0 as `_set__{{ c[0] }}`
      {%- endfor %}
    from c
    group by _root
  ),
  b as (
    {% if in_place %}
    select r.*,
      case when r._first_op = 'I' or r._start_key <=> r._final_key then r._first_op <> 'I'
        else raise_error('lakestreams_apply: the plan was applied as moving no row, but an incarnation moves from key '
                         || to_json(r._start_key) || ' to ' || to_json(r._final_key))
      end as _in_place
    from r
    {% else %}
    select r.*
      {%- for c in columns if c[0] not in keys %}, t.`{{ c[0] }}` as `_base__{{ c[0] }}`{% endfor %}
    from r
    left join {{ target_relation }} t
      on r._first_op <> 'I' {% if soft_delete %}and not t._is_deleted{% endif %}
      {% for k in keys %}and t.`{{ k }}` <=> r._start_key.`{{ k }}` {% endfor %}
    {% endif %}
  ),
  e as (
    -- What each incarnation leaves, in one pass over b (so the plan table is read once):
    -- the row it ends as (an upsert at its final key; with soft deletes a deleted one too)
    -- and the key it vacates (where it started, when it moved away or was deleted).
    select explode(filter(array(
        case when {% if soft_delete %}true{% else %}_last_op <> 'D'{% endif %} then named_struct('k', _final_key, 'u', true, 's', _last_seq) end,
        case when _first_op <> 'I' and (_last_op = 'D' or not (_start_key <=> _final_key))
          then named_struct('k', _start_key, 'u', false, 's', cast(null as bigint)) end
      ), x -> x is not null)) as _e,
      named_struct(
        {% for c in columns if c[0] not in keys %}
          {%- if in_place -%}
          {#- NULL where no change set it (max_by's filter): _keep__ says whether the matched row keeps it. -#}
          '{{ c[0] }}', `{{ c[0] }}`, '_keep__{{ c[0] }}', _in_place and not `_set__{{ c[0] }}`,
          {%- else -%}
          '{{ c[0] }}', case when `_set__{{ c[0] }}` then `{{ c[0] }}` else `_base__{{ c[0] }}` end,
          {%- endif %}
        {% endfor %}
        '_source_database', _source_database, '_transaction_id', _transaction_id,
        '_commit_scn', _commit_scn, '_commit_time', _commit_time, '_deleted', _last_op = 'D'
      ) as _p
    from b
    {% if this.identifier in fromjson(env_var('LAKESTREAMS_REFOLDING', '[]')) %}
    -- Every re-folded key is vacated too (its history is in the plan: what gold holds there is replaced).
    union all
    select named_struct('k', _okey, 'u', false, 's', cast(null as bigint)), null from c where _refold_old
    union all
    select named_struct('k', _nkey, 'u', false, 's', cast(null as bigint)), null from c where _refold_new
    {% endif %}
  ),
  k as (
    -- One row per key: the last incarnation ending there (with soft deletes several may: a
    -- deleted one stays as a marked row), else a delete of the key.
    select _e.k as _k, max_by(_p, case when _e.u then _e.s end) as _p, count_if(_e.u) as _ends
    from e
    group by _e.k
  )
  select
    {% for c in columns %}
      {%- if c[0] in keys -%}
        _k.`{{ c[0] }}` as `{{ c[0] }}`,
      {%- else -%}
        _p.`{{ c[0] }}` as `{{ c[0] }}`,
      {%- endif %}
    {% endfor %}
    {%- if in_place %}
    {%- for c in columns if c[0] not in keys %}
    coalesce(_p.`_keep__{{ c[0] }}`, false) as `_keep__{{ c[0] }}`,
    {%- endfor %}
    {%- endif %}
    _p._source_database, _p._transaction_id, _p._commit_scn, _p._commit_time,
    coalesce(_p._deleted, true) as _deleted,
    case
      {% if not soft_delete -%}
      when _ends > 1 then raise_error('lakestreams_apply: ' || cast(_ends as string) || ' live incarnations end at key ' || to_json(_k))
      {% endif -%}
      when _ends > 0 then 'U' else 'D'
    end as _action
  from k
{%- endmacro %}


{#
  SCD type 2: one version per row incarnation and transaction (the row after the
  transaction's last change of it), valid from its commit SCN/time until the next
  version's or the DELETE's (_valid_to_* NULL: current). A plan closes the current
  version where an incarnation continues a row gold holds, and adds its versions; at a
  re-folded key (a late change: its whole history is in the plan) the versions are
  replaced. One MERGE, keyed by plan id.
#}
{% macro lakestreams_scd2(changes_sql, target_relation, keys, columns, plan_id, soft_delete, truncating=false) -%}
  {%- set rel = lakestreams_sibling('__history') -%}
  {%- set values = [] -%}
  {%- for c in columns if c[0] not in keys %}{% do values.append(c) %}{% endfor -%}
  {% if load_relation(rel) is none %}
    {% call statement('create_history') %}
      create table {{ rel }} (
        {% for c in columns %}`{{ c[0] }}` {{ c[1] }}, {% endfor %}
        _valid_from_scn bigint, _valid_from_time timestamp, _valid_to_scn bigint, _valid_to_time timestamp,
        _is_current boolean, _op string, _source_database string, _transaction_id string, _plan_id bigint
      ) using delta
      {{ lakestreams_gold_properties() }}
    {% endcall %}
  {% endif %}
  {% if truncating %}
    {#- A TRUNCATE closes every current version an earlier change opened (idempotent). -#}
    {% call statement('truncate_history') %}
      merge into {{ rel }} t
      using (
        select {% for k in keys %}r.`{{ k }}`, {% endfor %}
          min(f._commit_scn) as _to_scn, min_by(f._commit_time, f._commit_scn) as _to_time
        from {{ rel }} r
        join (select * from ({{ changes_sql }}) where _op = 'T') f
          on r._valid_to_scn is null and {{ lakestreams_later('f', 'r', '_valid_from_scn', '_valid_from_time') }}
        group by {% for k in keys %}r.`{{ k }}`{% if not loop.last %}, {% endif %}{% endfor %}
      ) s
      on t._valid_to_scn is null and {{ lakestreams_key_match('t', 's', keys) }}
      when matched then update set t._valid_to_scn = s._to_scn, t._valid_to_time = s._to_time, t._is_current = false
    {% endcall %}
  {% endif %}
  {% set body %}
    merge into {{ rel }} t
    using (
      with c as (
        select * from ({{ changes_sql }}) where _op <> 'T'
      ),
      s as (
        select c.*,
          first_value(_op) over (partition by _root order by _seq) as _first_op,
          first_value(_okey) over (partition by _root order by _seq) as _start_key,
          first_value(_refold_old) over (partition by _root order by _seq) as _start_refold,
          row_number() over (partition by _root, _source_database, _transaction_id order by _seq desc) as _txn_last
          {%- for c in values %},
          last_value(case when array_contains(_new_present, '{{ c[0] }}') then named_struct('v', _new.`{{ c[0] }}`) end, true)
            over (partition by _root order by _seq rows between unbounded preceding and current row) as `_v__{{ c[0] }}`
          {%- endfor %}
        from c
      ),
      b as (
        select s.*
          {%- for c in values %}, r.`{{ c[0] }}` as `_base__{{ c[0] }}`{% endfor %}
        from s
        left join {{ target_relation }} r
          on s._first_op <> 'I' {% if soft_delete %}and not r._is_deleted {% endif %}
          {% for k in keys %}and r.`{{ k }}` <=> s._start_key.`{{ k }}` {% endfor %}
      ),
      v as (
        select b.*,
          lead(_commit_scn) over (partition by _root order by _seq) as _next_scn,
          lead(_commit_time) over (partition by _root order by _seq) as _next_time
        from b
        where _txn_last = 1
      ),
      k as (
        select _okey as _k from c where _refold_old
        union
        select _nkey from c where _refold_new
      )
      select
        {% for c in columns %}
          {%- if c[0] in keys -%} _nkey.`{{ c[0] }}` as `{{ c[0] }}`,
          {%- else -%} case when `_v__{{ c[0] }}` is not null then `_v__{{ c[0] }}`.v else `_base__{{ c[0] }}` end as `{{ c[0] }}`,
          {%- endif %}
        {% endfor %}
        _commit_scn as _valid_from_scn, _commit_time as _valid_from_time, _next_scn as _valid_to_scn,
        _next_time as _valid_to_time, _next_scn is null as _is_current, _op, _source_database, _transaction_id,
        'N' as _action
      from v
      where _op <> 'D'
      union all
      select
        {% for c in columns %}
          {%- if c[0] in keys -%} _start_key.`{{ c[0] }}`,
          {%- else -%} cast(null as {{ c[1] }}),
          {%- endif %}
        {% endfor %}
        min_by(_commit_scn, _seq), min_by(_commit_time, _seq), cast(null as bigint), cast(null as timestamp),
        false, null, null, null, 'C'
      from s
      where _first_op <> 'I' and not _start_refold
      group by _root, _start_key
      union all
      select
        {% for c in columns %}
          {%- if c[0] in keys -%} _k.`{{ c[0] }}`,
          {%- else -%} cast(null as {{ c[1] }}),
          {%- endif %}
        {% endfor %}
        cast(null as bigint), cast(null as timestamp), cast(null as bigint), cast(null as timestamp),
        false, null, null, null, 'X'
      from k
    ) s
    on s._action <> 'N' and {{ lakestreams_key_match('t', 's', keys) }}
    when matched and s._action = 'X' then delete
    when matched and s._action = 'C' and t._valid_to_scn is null then update set
      t._valid_to_scn = s._valid_from_scn, t._valid_to_time = s._valid_from_time, t._is_current = false
    when not matched and s._action = 'N' then insert
      ({% for c in columns %}`{{ c[0] }}`, {% endfor %} _valid_from_scn, _valid_from_time, _valid_to_scn, _valid_to_time,
       _is_current, _op, _source_database, _transaction_id, _plan_id)
      values ({% for c in columns %}s.`{{ c[0] }}`, {% endfor %} s._valid_from_scn, s._valid_from_time, s._valid_to_scn,
       s._valid_to_time, s._is_current, s._op, s._source_database, s._transaction_id, {{ plan_id }})
  {% endset %}
  {{ lakestreams_keyed('scd2', rel, plan_id, body) }}
{%- endmacro %}



{#- The TRUNCATE f orders after the change that wrote row r: within a source by commit SCN
    (then transaction), across sources by commit time (then source name). -#}
{% macro lakestreams_later(f, r, scn='_commit_scn', time='_commit_time') -%}
  case when {{ f }}._source_database = {{ r }}._source_database
    then {{ f }}._commit_scn > {{ r }}.{{ scn }}
         or ({{ f }}._commit_scn = {{ r }}.{{ scn }} and {{ f }}._transaction_id > {{ r }}._transaction_id)
    else {{ f }}._commit_time > {{ r }}.{{ time }}
         or ({{ f }}._commit_time = {{ r }}.{{ time }} and {{ f }}._source_database > {{ r }}._source_database)
  end
{%- endmacro %}


{# Remove (soft deletes: mark) every row of the replica a TRUNCATE of the plan orders after. #}
{% macro lakestreams_truncate(changes_sql, target_relation, keys, soft_delete) -%}
  merge into {{ target_relation }} t
  using (
    select distinct {% for k in keys %}r.`{{ k }}`{% if not loop.last %}, {% endif %}{% endfor %}
    from {{ target_relation }} r
    {#- A row the apply did not write (no stamp) goes too: the table is replaced. #}
    join (select * from ({{ changes_sql }}) where _op = 'T') f
      on {{ lakestreams_later('f', 'r') }} or r._source_database is null
    {% if soft_delete %}where not r._is_deleted{% endif %}
  ) s
  on {{ lakestreams_key_match('t', 's', keys) }}
  when matched then {% if soft_delete %}update set t._is_deleted = true{% else %}delete{% endif %}
{%- endmacro %}


{#- Gold tables' properties: column mapping and type widening (renames, drops, widening in
    place), unless the channel keeps gold on the basic Delta protocol (gold.column_mapping:
    false), where such changes rewrite the table. Deletion vectors start off: on small
    replicas they make the MERGEs cheaper but every other read of the table dearer, and a run
    no shorter (measured in gold.structure, DELETION_VECTOR_BYTES). A replica that grows past
    that size takes them for its next MERGEs (gold.structure.enable_deletion_vectors). -#}
{% macro lakestreams_gold_properties() -%}
  {%- if config.get('column_mapping', true) -%}
    tblproperties ('delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true')
  {%- else -%}
    {#- Where deletion vectors are on by default (Databricks), they too would raise the protocol. -#}
    tblproperties ('delta.enableDeletionVectors' = 'false')
  {%- endif -%}
{%- endmacro %}
