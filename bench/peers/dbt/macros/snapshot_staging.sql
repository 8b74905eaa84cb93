{#- dbt-spark makes a snapshot's staging table a catalog view so that `describe` can read its
    columns; Iceberg's Hadoop catalog (the benchmark's warehouse folder) has no views, and Spark
    describes a temporary view just as well. This is the one change to dbt-spark's macro of the
    same name (dbt-spark 1.11, macros/materializations/snapshot.sql). -#}
{% macro spark_build_snapshot_staging_table(strategy, sql, target_relation) %}
    {% set tmp_identifier = target_relation.identifier ~ '__dbt_tmp' %}
    {%- set tmp_relation = api.Relation.create(identifier=tmp_identifier, schema=none,
                                               database=none, type='view') -%}
    {% set select = snapshot_staging_table(strategy, sql, target_relation) %}
    {% call statement('build_snapshot_staging_relation') %}
        create or replace temporary view {{ tmp_relation }} as {{ select }}
    {% endcall %}
    {% do return(tmp_relation) %}
{% endmacro %}
