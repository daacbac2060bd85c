# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: error queue
# MAGIC The failed transactions waiting in the error queue. After fixing the cause, set the
# MAGIC `action` widget to `execute` (one transaction, or all when `transaction` is empty)
# MAGIC or `delete`, and run again. Library calls only.

# COMMAND ----------

dbutils.widgets.text("channel", "sample_data/hr_demo.yml")  # noqa: F821
dbutils.widgets.text("action", "")  # noqa: F821  empty (list), execute or delete
dbutils.widgets.text("transaction", "")  # noqa: F821
channel_file = dbutils.widgets.get("channel")  # noqa: F821
action = dbutils.widgets.get("action")  # noqa: F821
transaction = dbutils.widgets.get("transaction") or None  # noqa: F821

# COMMAND ----------

from lakestreams.config import load_channel
from lakestreams.explore import error_queue_action, error_queue_frame
from lakestreams.pipeline import format_error_queue
from lakestreams.spark import ensure_schemas

ch = load_channel(channel_file)
ensure_schemas(spark, ch.storage)  # noqa: F821

# COMMAND ----------

done = error_queue_action(spark, ch, action, transaction)  # noqa: F821
if done:
    print(done)

# COMMAND ----------

# MAGIC %md ## The queue

# COMMAND ----------

print(format_error_queue(spark, ch))  # noqa: F821
display(error_queue_frame(spark, ch))  # noqa: F821
