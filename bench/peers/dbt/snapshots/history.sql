{#- dbt's snapshot of the source's current state: the check strategy on every column, hard
    deletes invalidated (dbt 1.9+), on an Iceberg table. -#}
{% snapshot history %}
{{ config(
    target_schema=var('schema'),
    unique_key='id',
    strategy='check',
    check_cols='all',
    hard_deletes='invalidate',
    file_format='iceberg',
    tblproperties=var('tblproperties', {}),
) }}
select * from parquet.`{{ var('state') }}`
{% endsnapshot %}
