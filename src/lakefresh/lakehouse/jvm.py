"""Java classes through Py4J, looked up once.

Py4J resolves `jvm.org.apache.iceberg.spark.Spark3Util` one name at a time, a round trip each,
and a name that is a package (`org`, `org.apache`...) is first tried as a class: a failed class
load that searches every jar on Spark's classpath, once for each of PySpark's imports.
`java_class` asks for the whole
name at once (one round trip, one successful load), through the session's kept view (below): the
class and its static methods are asked for once per JVM view, and a static method's call is then
one round trip.

PySpark itself looks its helpers up by short name on every call: each `F.lit`, `F.col` and each
list it passes asks the JVM view for `functions` or `PythonUtils`, which the JVM first tries as a
class of that bare name, then under each of PySpark's imports in turn (`java.lang.*`,
`org.apache.spark.api.java.*`...): up to seven failed class loads, each a search of every jar,
and three round trips per function call. `keep_lookups` makes a session's JVM view keep the
classes it found and their static methods (a class name stays that class, a method that method),
so each is asked for once per process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView

from lakefresh.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def java_class(spark: SparkSession, name: str) -> Any:
    """The Java class of fully qualified `name` (`org.apache.hadoop.fs.Path`): call it to
    construct, or call its static methods. Kept by the session's JVM view (`keep_lookups`: a
    session lakefresh did not build, a user's, gets it here)."""
    keep_lookups(spark)
    java = getattr(spark.sparkContext._jvm, name)
    if not isinstance(java, JavaClass):  # Py4J answers a name it cannot load as a package
        raise ConfigError(f"the Java class {name} is not on Spark's classpath (a missing jar?)")
    return java


def make_active(spark: SparkSession) -> None:
    """Make `spark` the active session of the calling thread's JVM thread. Spark reads a session's
    settings through the thread's active session where no session is passed along (its catalog
    manager loads a catalog by name so): a thread other than the one that built the session (a
    worker's, a scheduler's) has none, and would find none of the session's catalogs."""
    getter = getattr(type(spark), "_get_j_spark_session_class", None)  # PySpark 4: the classic one
    if getter is not None:
        session_class = getter(spark.sparkContext._jvm)
    else:
        session_class = java_class(spark, "org.apache.spark.sql.SparkSession")
    session_class.setActiveSession(spark._jsparkSession)


class _KeptClass(JavaClass):  # type: ignore[misc]  # py4j has no types
    """A class whose static methods and nested classes, once looked up, are kept (a field's value
    is asked for again each time: it may change)."""

    def __getattr__(self, name: str) -> Any:
        found = JavaClass.__getattr__(self, name)
        if isinstance(found, JavaClass) and not isinstance(found, _KeptClass):
            found = _KeptClass(found._fqn, found._gateway_client)
        if isinstance(found, (JavaMember, JavaClass)) and not name.startswith("_"):
            self.__dict__[name] = found
        return found


class _KeptView(JVMView):  # type: ignore[misc]
    """A JVM view that keeps the classes it found, by the name they were asked for (a name that
    is a package is asked for again: a jar added later may make it a class)."""

    def __getattr__(self, name: str) -> Any:
        found = JVMView.__getattr__(self, name)
        if isinstance(found, JavaClass) and not name.startswith("_"):
            found = _KeptClass(found._fqn, found._gateway_client)
            self.__dict__[name] = found
        return found


def keep_lookups(spark: SparkSession) -> None:
    """The session's JVM view keeps the classes and static methods it looked up (module doc)."""
    jvm = spark.sparkContext._jvm
    if jvm is not None and type(jvm) is JVMView:
        jvm.__class__ = _KeptView
