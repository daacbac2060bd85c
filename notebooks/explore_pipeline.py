# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: explore a channel
# MAGIC The accounting; the tables of bronze, silver and gold; quarantine reasons; silver's
# MAGIC transactions; the status per gold table and the error queue.
# MAGIC All logic lives in the library; this notebook only calls it and shows the results.
# MAGIC The other notebooks go further: `rule_audit`, `ddl_log`, `error_queue`, `apply_progress`.

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

from lakestreams.audit import run_audit
from lakestreams.config import load_channel, with_storage
from lakestreams.explore import error_queue_frame, layer_tables, quarantine_reasons, recent_transactions
from lakestreams.pipeline import discard_reasons, format_summary, gold_summary
from lakestreams.spark import ensure_schemas
from lakestreams.status import channel_status, format_status

ch = with_storage(load_channel(channel_file), catalog, schema)
ensure_schemas(spark, ch.storage)  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Accounting: every landed record in one bucket

# COMMAND ----------

status = channel_status(spark, ch)  # noqa: F821
print(format_summary(run_audit(spark, ch), gold_summary(spark, ch), status.error_queue, discard_reasons(spark, ch)))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## The tables of bronze, silver and gold, with their rows

# COMMAND ----------

display(layer_tables(spark, ch))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Bronze: quarantine reasons

# COMMAND ----------

display(quarantine_reasons(spark, ch))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Silver: transactions, newest commit first

# COMMAND ----------

display(recent_transactions(spark, ch))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Gold: status per table and the error queue

# COMMAND ----------

print(format_status(status))
display(error_queue_frame(spark, ch))  # noqa: F821
