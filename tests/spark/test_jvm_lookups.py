"""PySpark asks the JVM for its Java helpers by short name on every call (lakehouse/jvm.py,
`keep_lookups`): in a session lakefresh built, each class and static method is asked for once."""

from __future__ import annotations

from contextlib import contextmanager

from pyspark.sql import functions as F


@contextmanager
def round_trips(spark):
    """The Py4J commands sent to the JVM inside the block, as a list of their first lines."""
    client = spark.sparkContext._gateway._gateway_client
    sent: list[str] = []
    send = client.send_command

    def counted(command, *args, **kwargs):
        sent.append(" ".join(command.split("\n")[:3]))
        return send(command, *args, **kwargs)

    client.send_command = counted
    try:
        yield sent
    finally:
        del client.send_command  # the instance's own attribute: the class's method again


def test_a_function_column_is_one_round_trip_once_its_helpers_were_found(spark):
    F.col("a"), F.lit(1), F.concat_ws(",", F.col("a"), F.col("b"))  # the helpers found once
    with round_trips(spark) as sent:
        F.col("a")
        F.lit(1)
        F.concat_ws(",", F.col("a"), F.col("b"))
    # no look-up of a class or a member (`r`, Py4J's reflection commands; twelve before
    # `keep_lookups`), only calls: the static methods `col`, `lit`, `concat_ws`, and the Java
    # list PySpark builds for `PythonUtils.toSeq` (Py4J's finalizer thread may send releases of
    # proxies, `m`, through the same client meanwhile)
    assert [s for s in sent if s.startswith("r ")] == []
    assert [s for s in sent if s.startswith("c z:")] == [
        "c z:org.apache.spark.sql.functions col",
        "c z:org.apache.spark.sql.functions lit",
        "c z:org.apache.spark.sql.functions col",
        "c z:org.apache.spark.sql.functions col",
        "c z:org.apache.spark.api.python.PythonUtils toSeq",
        "c z:org.apache.spark.sql.functions concat_ws",
    ]


def test_a_static_field_is_read_again_and_a_missing_class_stays_a_package(spark):
    jvm = spark.sparkContext._jvm
    system = getattr(jvm, "java.lang.System")
    assert getattr(jvm, "java.lang.System") is system  # kept
    assert system.currentTimeMillis is system.currentTimeMillis  # a static method: kept
    integer = getattr(jvm, "java.lang.Integer")
    assert integer.MAX_VALUE == 2**31 - 1  # a field: its value, not a method object
    assert "MAX_VALUE" not in vars(integer)
    assert "org.example.NotThere" not in vars(jvm)
    assert type(getattr(jvm, "org.example.NotThere")).__name__ == "JavaPackage"
    assert "org.example.NotThere" not in vars(jvm)  # asked for again next time
