# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: apply progress
# MAGIC Per gold table and source: the applied SCN, what waits, errors and the last DDL; then
# MAGIC the applied SCN and the lag over time. Library calls only.

# COMMAND ----------

dbutils.widgets.text("channel", "sample_data/hr_demo.yml")  # noqa: F821
channel_file = dbutils.widgets.get("channel")  # noqa: F821

# COMMAND ----------

from lakestreams.config import load_channel
from lakestreams.explore import plot_progress, progress_over_time
from lakestreams.spark import ensure_schemas
from lakestreams.status import channel_status, format_status

ch = load_channel(channel_file)
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
