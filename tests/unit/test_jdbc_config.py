"""The `jdbc` source's config, without a JVM: the watermark token survives the pipeline file's
Jinja rendering, and a query without it is refused."""

from __future__ import annotations

import textwrap

import pytest

from lakefresh.config import load_config
from lakefresh.errors import ConfigError


def load(tmp_path, query: str, more: str = ""):
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
        strategy: {{kind: key, keys: [id], date_column: modified_at}}
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
