{# Gold tables live in the target schema itself (lakestreams_gold), not in target_custom. #}
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ custom_schema_name if custom_schema_name else target.schema }}
{%- endmacro %}
