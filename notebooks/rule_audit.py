# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: rule audit
# MAGIC Each apply client's rule sets and rules, what each rule kept or discarded per silver
# MAGIC batch (and the row migrations), and the discard reasons. The notebook only calls the library.

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
from lakestreams.pipeline import discard_reasons, format_rule_report, rule_report
from lakestreams.spark import ensure_schemas
from silver.rules import build_clients, describe

ch = with_storage(load_channel(channel_file), catalog, schema)
ensure_schemas(spark, ch.storage)  # noqa: F821

# COMMAND ----------

# MAGIC %md ## Rule sets and rules (Oracle condition text)

# COMMAND ----------

display(spark.createDataFrame(describe(build_clients(ch))))  # noqa: F821

# COMMAND ----------

# MAGIC %md ## What each rule kept or discarded, per silver batch

# COMMAND ----------

print("\n".join(format_rule_report(rule_report(spark, ch))))  # noqa: F821
for reason, records in discard_reasons(spark, ch):  # noqa: F821
    print(f"{records:>8}  {reason}")
