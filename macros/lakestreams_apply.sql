{#
  lakestreams_apply: the one apply of every replicated table.
  The model's SQL yields the table's planned changes above its instantiation SCN
  (ordered by _seq, grouped into row incarnations by _root). This folds each
  incarnation into its net effect and MERGEs it into the target: an upsert at the
  incarnation's final key, a delete at the key it started from when the row moved
  or was deleted. Columns an UPDATE did not carry keep the target's value.
  The MERGE is keyed by (gold.<model>, plan id) through Delta's txnAppId/txnVersion,
  so a re-run after a crash does not apply the same plan twice.
#}
{% materialization lakestreams_apply, adapter='spark' %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing = load_relation(this) -%}
  {%- set keys = config.require('key_columns') -%}
  {%- set columns = config.require('columns') -%}
  {%- set plan_id = var('lakestreams_plan_id') | int -%}
  {{ run_hooks(pre_hooks) }}
  {% if existing is none %}
    {% call statement('create_target') %}
      create table {{ target_relation }} (
        {% for c in columns %}`{{ c[0] }}` {{ c[1] }}, {% endfor %}
        _source_database string, _transaction_id string, _commit_scn bigint, _commit_time timestamp
      ) using delta
      tblproperties ('delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true')
    {% endcall %}
  {% endif %}
  {% call statement('txn_app') %}set spark.databricks.delta.write.txnAppId = gold.{{ this.identifier }}{% endcall %}
  {% call statement('txn_version') %}set spark.databricks.delta.write.txnVersion = {{ plan_id }}{% endcall %}
  {% call statement('main') %}
    merge into {{ target_relation }} t
    using ({{ lakestreams_net_effect(sql, target_relation, keys, columns) }}) s
    on {{ lakestreams_key_match('t', 's', keys) }}
    when matched and s._action = 'D' then delete
    when matched then update set
      {% for c in columns %}t.`{{ c[0] }}` = s.`{{ c[0] }}`, {% endfor %}
      t._source_database = s._source_database, t._transaction_id = s._transaction_id,
      t._commit_scn = s._commit_scn, t._commit_time = s._commit_time
    when not matched and s._action = 'U' then insert
      ({% for c in columns %}`{{ c[0] }}`, {% endfor %} _source_database, _transaction_id, _commit_scn, _commit_time)
      values ({% for c in columns %}s.`{{ c[0] }}`, {% endfor %} s._source_database, s._transaction_id, s._commit_scn, s._commit_time)
  {% endcall %}
  {% call statement('txn_reset_app') %}reset spark.databricks.delta.write.txnAppId{% endcall %}
  {% call statement('txn_reset_version') %}reset spark.databricks.delta.write.txnVersion{% endcall %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{# Null-safe equality of the key columns of two relations (a substitute key may hold NULLs). #}
{% macro lakestreams_key_match(left, right, keys) -%}
  {% for k in keys %}{{ left }}.`{{ k }}` <=> {{ right }}.`{{ k }}`{% if not loop.last %} and {% endif %}{% endfor %}
{%- endmacro %}


{# Net effect of planned changes per row incarnation: rows with _action U (upsert) or D (delete). #}
{% macro lakestreams_net_effect(changes_sql, target_relation, keys, columns) -%}
  with c as (
    {{ changes_sql }}
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
      max_by(_commit_time, _seq) as _commit_time
      {%- for c in columns if c[0] not in keys %},
      max_by(_new.`{{ c[0] }}`, _seq) filter (where array_contains(_new_present, '{{ c[0] }}')) as `{{ c[0] }}`,
      count_if(array_contains(_new_present, '{{ c[0] }}')) > 0 as `_set__{{ c[0] }}`
      {%- endfor %}
    from c
    group by _root
  ),
  b as (
    select r.*
      {%- for c in columns if c[0] not in keys %}, t.`{{ c[0] }}` as `_base__{{ c[0] }}`{% endfor %}
    from r
    left join {{ target_relation }} t
      on r._first_op <> 'I'
      {% for k in keys %}and t.`{{ k }}` <=> r._start_key.`{{ k }}` {% endfor %}
  ),
  u as (
    select
      {% for c in columns %}
        {%- if c[0] in keys -%}
          _final_key.`{{ c[0] }}` as `{{ c[0] }}`,
        {%- else -%}
          case when `_set__{{ c[0] }}` then `{{ c[0] }}` else `_base__{{ c[0] }}` end as `{{ c[0] }}`,
        {%- endif %}
      {% endfor %}
      _source_database, _transaction_id, _commit_scn, _commit_time, 'U' as _action
    from b
    where _last_op <> 'D'
  ),
  d as (
    select
      {% for c in columns %}
        {%- if c[0] in keys -%}
          _start_key.`{{ c[0] }}` as `{{ c[0] }}`,
        {%- else -%}
          cast(null as {{ c[1] }}) as `{{ c[0] }}`,
        {%- endif %}
      {% endfor %}
      _source_database, _transaction_id, _commit_scn, _commit_time, 'D' as _action
    from b
    where _first_op <> 'I' and (_last_op = 'D' or not (_start_key <=> _final_key))
  )
  select * from u
  union all
  select d.* from d left anti join u on {{ lakestreams_key_match('d', 'u', keys) }}
{%- endmacro %}
