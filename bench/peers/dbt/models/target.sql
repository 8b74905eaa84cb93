{#- The incremental merge model of dbt-spark's documentation (incremental_strategy: merge on an
    Iceberg table, unique_key), with the usual is_incremental() filter on the record date. The
    batch is a Parquet file, as lakefresh's files source reads it. -#}
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='id',
    file_format='iceberg',
    tblproperties=var('tblproperties', {}),
) }}

select * from parquet.`{{ var('batch') }}`
{% if is_incremental() %}
where updated_at >= (select max(updated_at) from {{ this }})
{% endif %}
