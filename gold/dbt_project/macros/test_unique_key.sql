{# Generic test: the combination of key columns is unique in the model (composite keys included). #}
{% test unique_key(model, columns) %}
  select {% for c in columns %}`{{ c }}`, {% endfor %} count(*) as n
  from {{ model }}
  group by {% for c in columns %}`{{ c }}`{% if not loop.last %}, {% endif %}{% endfor %}
  having count(*) > 1
{% endtest %}
