# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: explore a channel
# MAGIC Bronze change records and quarantine, silver outcomes and dictionary, gold tables,
# MAGIC apply progress and the error queue. All logic lives in the library; this notebook
# MAGIC only calls it and shows the results.

# COMMAND ----------

dbutils.widgets.text("channel", "sample_data/hr_demo.yml")  # noqa: F821
channel_file = dbutils.widgets.get("channel")  # noqa: F821

# COMMAND ----------

from lakestreams.audit import run_audit
from lakestreams.config import load_channel
from lakestreams.pipeline import format_summary, gold_summary
from lakestreams.spark import ensure_schemas

ch = load_channel(channel_file)
ensure_schemas(spark, ch.storage)  # noqa: F821
t = ch.storage.table

# COMMAND ----------

# MAGIC %md ## Accounting

# COMMAND ----------

print(format_summary(run_audit(spark, ch), gold_summary(spark, ch), spark.table(t("gold", "error_queue")).count()))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Bronze: quarantine reasons

# COMMAND ----------

display(spark.table(t("bronze", "quarantine")).groupBy("reason").count())  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Silver: the rules, what each kept or discarded (and migrated), and the DDL log

# COMMAND ----------

from silver.rules import build_clients, describe

display(spark.createDataFrame(describe(build_clients(ch))))  # noqa: F821
display(spark.table(t("silver", "rule_outcomes")).groupBy("streams_type", "rule_name", "outcome", "migration").sum("records"))  # noqa: F821
display(spark.table(t("silver", "outcomes")).where("bucket = 'discarded'").groupBy("reason").sum("records"))  # noqa: F821
display(spark.table(t("silver", "ddl_log")).orderBy("source_database", "commit_scn"))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Gold: status per table, apply progress and error queue
# MAGIC The other notebooks go further: `rule_audit`, `ddl_log`, `error_queue`, `apply_progress`.

# COMMAND ----------

from lakestreams.status import channel_status, format_status

print(format_status(channel_status(spark, ch)))  # noqa: F821
display(spark.table(t("gold", "apply_progress")).orderBy("plan_id", "target"))  # noqa: F821
display(spark.table(t("gold", "error_queue")).select("source_database", "transaction_id", "commit_scn", "error", "record_count"))  # noqa: F821
