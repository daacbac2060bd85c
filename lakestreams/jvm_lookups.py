"""Java class and static method lookups from Python, made once per name.

PySpark reaches the JVM through Py4J, and every name it reaches through the gateway's
``jvm`` view is a round trip: ``F.col("a")`` asks the JVM what
``org.apache.spark.sql.functions`` is, then what its ``col`` is, then calls it; a helper
named without its package (``PythonUtils``) is tried under each package PySpark imports,
and every miss searches the whole class path (288 jars in a local session) before the
next one. A run builds tens of thousands of column expressions that way: a channel of 4
targets made about 38,000 JVM calls per run, 12,300 of them such lookups, which cost 0.1 to
0.8 ms each against 0.04 ms for a plain call.

``cache_jvm_lookups`` puts a view in front of the gateway's that keeps what it found: a
class stays that class and a static method that method for the process's life (the JVM
does not unload them), so later uses are Python attribute reads. Static *fields* are not
kept (their values may change), nor is a name that was not found.
"""

from __future__ import annotations

from py4j.java_gateway import JavaClass, JavaMember, JavaPackage, JVMView
from pyspark import SparkContext
from pyspark.sql import SparkSession


def _kept(found: object) -> object:
    """What a lookup found, as the caching kind of itself (a field's value as it is)."""
    if type(found) is JavaClass:
        return _Class(found._fqn, found._gateway_client)
    if type(found) is JavaPackage:
        return _Package(found._fqn, found._gateway_client, found._jvm_id)
    return found


def _keep(holder: object, name: str, found: object) -> object:
    if isinstance(found, (JavaClass, JavaPackage, JavaMember)):
        # Read before ``__getattr__`` from now on: no JVM call for this name again.
        holder.__dict__[name] = found
    return found


class _Class(JavaClass):
    """A class whose static methods and nested classes, once looked up, are kept."""

    def __getattr__(self, name: str) -> object:
        return _keep(self, name, _kept(super().__getattr__(name)))


class _Package(JavaPackage):
    """A package whose classes and subpackages, once looked up, are kept."""

    def __getattr__(self, name: str) -> object:
        return _keep(self, name, _kept(super().__getattr__(name)))


class CachedJVMView(JVMView):
    """The gateway's view (same JVM-side view, same imports), keeping what it finds."""

    def __init__(self, view: JVMView) -> None:  # noqa: D107 - shares the view's state
        self.__dict__.update(view.__dict__)

    def __getattr__(self, name: str) -> object:
        return _keep(self, name, _kept(super().__getattr__(name)))


def cache_jvm_lookups(spark: SparkSession) -> None:
    """Have PySpark (the context's and the session's view) look names up through a
    ``CachedJVMView``; once per process: a view in place already stays."""
    view = SparkContext._jvm
    if view is None or isinstance(view, CachedJVMView):
        cached = view
    else:
        cached = CachedJVMView(view)
        SparkContext._jvm = cached
    if cached is not None:
        spark._jvm = cached
