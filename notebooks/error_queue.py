# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: error queue
# MAGIC The failed transactions waiting in the error queue. After fixing the cause, set the
# MAGIC `action` widget to `execute` (one transaction, or all when `transaction` is empty)
# MAGIC or `delete`, and run again. Library calls only.

# COMMAND ----------

# MAGIC %md The synced repository (this folder's parent) as a package, with what it needs
# MAGIC but Spark and Delta, which the runtime has. A job whose environment has the wheel can skip it.

# COMMAND ----------

# MAGIC %pip install --quiet ..

# COMMAND ----------

dbutils.widgets.text("channel", "../sample_data/hr_demo.yml")  # noqa: F821  from this folder
dbutils.widgets.text("catalog", "")  # noqa: F821  empty: the channel file's
dbutils.widgets.text("schema", "")  # noqa: F821  empty: the channel file's
dbutils.widgets.text("action", "")  # noqa: F821  empty (list), execute or delete
dbutils.widgets.text("transaction", "")  # noqa: F821
channel_file = dbutils.widgets.get("channel")  # noqa: F821
catalog, schema = dbutils.widgets.get("catalog"), dbutils.widgets.get("schema")  # noqa: F821
action = dbutils.widgets.get("action")  # noqa: F821
transaction = dbutils.widgets.get("transaction") or None  # noqa: F821

# COMMAND ----------

from lakestreams.config import load_channel, with_storage
from lakestreams.explore import error_queue_action, error_queue_frame
from lakestreams.pipeline import format_error_queue
from lakestreams.spark import ensure_schemas

ch = with_storage(load_channel(channel_file), catalog, schema)
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
