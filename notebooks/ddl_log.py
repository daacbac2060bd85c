# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: DDL log and table revisions
# MAGIC Each DDL record with its GoldenGate scope, the decision and why, and the target
# MAGIC statements; then the source dictionary's revisions per table. Library calls only.

# COMMAND ----------

dbutils.widgets.text("channel", "sample_data/hr_demo.yml")  # noqa: F821
dbutils.widgets.text("table", "")  # noqa: F821  OWNER.TABLE, or empty for all
channel_file = dbutils.widgets.get("channel")  # noqa: F821
table = dbutils.widgets.get("table")  # noqa: F821

# COMMAND ----------

from lakestreams.config import load_channel, split_table_name
from lakestreams.explore import table_revisions
from lakestreams.pipeline import format_ddl_log
from lakestreams.spark import ensure_schemas

ch = load_channel(channel_file)
ensure_schemas(spark, ch.storage)  # noqa: F821

# COMMAND ----------

# MAGIC %md ## DDL log

# COMMAND ----------

print(format_ddl_log(spark, ch, split_table_name(table, "table") if table else None))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Table revisions (the source dictionary)

# COMMAND ----------

display(table_revisions(spark, ch))  # noqa: F821
