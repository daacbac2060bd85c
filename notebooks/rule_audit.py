# Databricks notebook source
# MAGIC %md
# MAGIC # lakestreams: rule audit
# MAGIC Each apply client's rule sets and rules, what each rule kept or discarded per silver
# MAGIC batch (and the row migrations), and the discard reasons. The notebook only calls the library.

# COMMAND ----------

dbutils.widgets.text("channel", "sample_data/hr_demo.yml")  # noqa: F821
channel_file = dbutils.widgets.get("channel")  # noqa: F821

# COMMAND ----------

from lakestreams.config import load_channel
from lakestreams.pipeline import discard_reasons, format_rule_report, rule_report
from lakestreams.spark import ensure_schemas
from silver.rules import build_clients, describe

ch = load_channel(channel_file)
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
