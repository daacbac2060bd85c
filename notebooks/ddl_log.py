# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: DDL log and table revisions
# MAGIC Each DDL record with its GoldenGate scope, the decision and why, and the target
# MAGIC statements; then the source dictionary's revisions per table. Library calls only.

# COMMAND ----------

# MAGIC %md The synced repository (this folder's parent) as a package, with what it needs
# MAGIC but Spark and Delta, which the runtime has. A job whose environment has the wheel can skip it.

# COMMAND ----------

# MAGIC %pip install --quiet ..

# COMMAND ----------

dbutils.widgets.text("channel", "../sample_data/hr_demo.yml")  # noqa: F821  from this folder
dbutils.widgets.text("catalog", "")  # noqa: F821  empty: the channel file's
dbutils.widgets.text("schema", "")  # noqa: F821  empty: the channel file's
dbutils.widgets.text("table", "")  # noqa: F821  OWNER.TABLE, or empty for all
channel_file = dbutils.widgets.get("channel")  # noqa: F821
catalog, schema = dbutils.widgets.get("catalog"), dbutils.widgets.get("schema")  # noqa: F821
table = dbutils.widgets.get("table")  # noqa: F821

# COMMAND ----------

from lakestreams.config import load_channel, split_table_name, with_storage
from lakestreams.explore import table_revisions
from lakestreams.pipeline import format_ddl_log
from lakestreams.spark import ensure_schemas

ch = with_storage(load_channel(channel_file), catalog, schema)
ensure_schemas(spark, ch.storage)  # noqa: F821

# COMMAND ----------

# MAGIC %md ## DDL log

# COMMAND ----------

print(format_ddl_log(spark, ch, split_table_name(table, "table") if table else None))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Table revisions (the source dictionary)

# COMMAND ----------

display(table_revisions(spark, ch))  # noqa: F821
