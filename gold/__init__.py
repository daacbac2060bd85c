"""Gold: the apply plan and dbt materialisation of replicated target tables."""
