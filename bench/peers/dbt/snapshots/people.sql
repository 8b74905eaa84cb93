{#- A dbt snapshot with the timestamp strategy (tests/spark/test_adopt_dbt.py, which adopts the
    table it writes): dbt_valid_from is the row's updated_at, so the versions depend on the data
    alone, never on when dbt ran. -#}
{% snapshot people %}
{{ config(
    target_schema=var('schema'),
    unique_key='id',
    strategy='timestamp',
    updated_at='updated_at',
    file_format='iceberg',
) }}
select * from parquet.`{{ var('state') }}`
{% endsnapshot %}
