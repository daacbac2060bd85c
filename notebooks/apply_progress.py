# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: apply progress
# MAGIC Per gold table and source: the applied SCN, what waits, errors and the last DDL; then
# MAGIC the applied SCN and the lag over time. Library calls only.

# COMMAND ----------

# MAGIC %md The synced repository (this folder's parent) as a package, with what it needs
# MAGIC but Spark and Delta, which the runtime has. A job whose environment has the wheel can skip it.

# COMMAND ----------

# MAGIC %pip install --quiet ..

# COMMAND ----------

dbutils.widgets.text("channel", "../sample_data/hr_demo.yml")  # noqa: F821  from this folder
dbutils.widgets.text("catalog", "")  # noqa: F821  empty: the channel file's
dbutils.widgets.text("schema", "")  # noqa: F821  empty: the channel file's
channel_file = dbutils.widgets.get("channel")  # noqa: F821
catalog, schema = dbutils.widgets.get("catalog"), dbutils.widgets.get("schema")  # noqa: F821

# COMMAND ----------

from lakestreams.config import load_channel, with_storage
from lakestreams.explore import plot_progress, progress_over_time
from lakestreams.spark import ensure_schemas
from lakestreams.status import channel_status, format_status

ch = with_storage(load_channel(channel_file), catalog, schema)
ensure_schemas(spark, ch.storage)  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Status

# COMMAND ----------

print(format_status(channel_status(spark, ch)))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Applied SCN and lag over time

# COMMAND ----------

progress = progress_over_time(spark, ch)  # noqa: F821
display(progress)  # noqa: F821
display(plot_progress(progress))  # noqa: F821
