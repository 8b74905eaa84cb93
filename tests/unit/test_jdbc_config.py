"""The `jdbc` source's config, without a JVM: the watermark token survives the pipeline file's
Jinja rendering, and a query without it is refused."""

from __future__ import annotations

import textwrap

import pytest

from lakefresh.config import load_config
from lakefresh.errors import ConfigError


def load(
    tmp_path, query: str, more: str = "", strategy: str = "{kind: key, keys: [id], date_column: modified_at}"
):
    path = tmp_path / "p.yml"
    text = f"""
    tables:
      - name: orders
        source:
          kind: jdbc
          url: jdbc:postgresql://db/shop
          user: "{{{{ env.get('PGUSER', 'shop') }}}}"
          query: {query}
          watermark_column: modified_at
          initial_watermark: 1970-01-01 00:00:00
          {more}
        strategy: {strategy}
    """
    path.write_text(textwrap.dedent(text))
    return load_config(path).tables[0].source


def test_the_token_is_kept_for_the_run_and_the_rest_is_rendered(tmp_path, monkeypatch):
    monkeypatch.delenv("PGUSER", raising=False)
    source = load(tmp_path, "SELECT * FROM orders WHERE modified_at > {{ watermark }}", "look_back: 10m")
    assert source.query == "SELECT * FROM orders WHERE modified_at > {{ watermark }}"
    assert source.user == "shop"
    assert source.look_back == 600
    assert load(tmp_path, "SELECT * FROM t WHERE n > {{watermark}}", "look_back: 100").look_back == 100


def test_a_query_without_the_token_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"the query must use the token \{\{ watermark \}\}"):
        load(tmp_path, "SELECT * FROM orders")


@pytest.mark.parametrize(
    ("query", "more"),
    [
        ("SELECT * FROM orders WHERE modified_at > {{ watermark }}", "look_back: 10m"),
        ("SELECT * FROM orders WHERE modified_at >= {{ watermark }}", ""),
    ],
    ids=["look_back", "greater_or_equal"],
)
def test_a_query_that_reads_rows_again_into_an_append_target_is_refused(tmp_path, query, more):
    """Each read would append its overlap again: every row of the look-back window (or of the
    watermark's own value) stored twice, silently."""
    with pytest.raises(
        ConfigError, match=r"reads rows it has read before .* an append target would store again"
    ):
        load(tmp_path, query, more, strategy="{kind: append}")
    assert load(tmp_path, query, more).look_back == (600 if more else None)  # a keyed target takes it
    assert load(
        tmp_path, "SELECT * FROM orders WHERE modified_at > {{ watermark }}", strategy="{kind: append}"
    )
    no_look_back = load(tmp_path, "SELECT * FROM t WHERE n > {{ watermark }}", "look_back: 0", "{kind: none}")
    assert no_look_back.look_back == 0  # 0 reads nothing again
