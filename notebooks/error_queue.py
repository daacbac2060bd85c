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

from lakestreams.api import Streams
from lakestreams.config import load_channel
from lakestreams.pipeline import format_error_queue
from lakestreams.spark import ensure_schemas

ch = load_channel(channel_file)
ensure_schemas(spark, ch.storage)  # noqa: F821
streams = Streams(ch)

# COMMAND ----------

if action == "execute":
    result = streams.execute_error(spark, transaction) if transaction else streams.execute_all_errors(spark)  # noqa: F821
    print(result)
elif action == "delete" and transaction:
    print(f"removed {streams.delete_error(spark, transaction)} transaction(s)")  # noqa: F821
elif action:
    raise ValueError(f"action {action!r}: use execute, or delete with a transaction")

# COMMAND ----------

# MAGIC %md ## The queue

# COMMAND ----------

print(format_error_queue(spark, ch))  # noqa: F821
display(spark.table(ch.storage.table("gold", "error_queue")).select("source_database", "transaction_id", "commit_scn", "error", "record_count", "plan_id"))  # noqa: F821
