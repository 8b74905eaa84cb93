"""Secrets stay secret: what loading a pipeline registers, and what `redact`
masks. The end-to-end search of every output and control-table row is in
tests/spark/test_secrets_stay_secret.py."""

from __future__ import annotations

import pytest

from lakefresh import secrets
from lakefresh.config.loader import load_config, render
from lakefresh.secrets import MASK, redact


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "jdbc.password",
        "PGPASSWORD",
        "s3.secret-access-key",
        "s3.access-key-id",
        "secret_access_key",
        "access_key_id",
        "AWS_SECRET_ACCESS_KEY",
        "fs.azure.account.key.acct.dfs.core.windows.net",
        "token",
        "gcs.oauth2.token",
        "credential",
        "client_secret",
        "API_KEY",
    ],
)
def test_secret_looking_names(name):
    assert secrets.is_secret_name(name)


@pytest.mark.parametrize("name", ["keys", "key_column", "user", "url", "warehouse", "PATH", "sequence_by"])
def test_ordinary_names(name):
    assert not secrets.is_secret_name(name)


def test_credentials_are_masked_by_their_shape_when_nobody_registered_them():
    text = (
        "cannot query jdbc:postgresql://lf:Unregistered1@db:5432/shop?user=lf&password=Other2;"
        " token=abc.def; sig=Zz%2F"
    )
    assert redact(text) == (
        f"cannot query jdbc:postgresql://lf:{MASK}@db:5432/shop?user=lf&password={MASK};"
        f" token={MASK}; sig={MASK}"
    )


def test_a_pipelines_secrets_are_registered_and_masked_in_any_wording(tmp_path, monkeypatch):
    monkeypatch.setenv("LF_TEST_DB_PASSWORD", "from-the-env-6a1f")
    monkeypatch.setenv("LF_TEST_HOST", "db.example.org")
    (tmp_path / "p.yml").write_text(
        """
catalog:
  name: shared
  type: jdbc
  properties: {uri: "jdbc:postgresql://db/catalog", jdbc.user: lf, jdbc.password: catalog-pw-77c2}
spark:
  conf: {spark.hadoop.fs.s3a.secret.key: s3-secret-9d0e}
storage:
  s3: {endpoint: "http://127.0.0.1:9000", access_key_id: AKIA-1f2e, secret_access_key: store-secret-0b7a}
tables:
  - name: orders
    source:
      kind: jdbc
      url: "jdbc:postgresql://{{ env.LF_TEST_HOST }}/shop?user=lf&password=url-pw-31b8"
      user: lf
      password: "{{ env.LF_TEST_DB_PASSWORD }}"
      query: SELECT * FROM orders WHERE m > {{ watermark }}
      watermark_column: m
      initial_watermark: 0
    strategy: {kind: key, keys: [id]}
""",
        encoding="utf-8",
    )
    load_config(tmp_path / "p.yml")
    known = secrets.registered()
    for value in (
        "from-the-env-6a1f",
        "catalog-pw-77c2",
        "s3-secret-9d0e",
        "url-pw-31b8",
        "store-secret-0b7a",
    ):
        assert value in known
        # a database or a stack line quoting the value in its own words
        assert value not in redact(f"FATAL: role lf (password {value!r}) rejected")
    assert "db.example.org" not in known  # not a secret: it stays readable
    assert "lf" not in known


def test_only_secret_variables_the_template_uses_are_registered(monkeypatch):
    monkeypatch.setenv("LF_TEST_UNUSED_TOKEN", "never-used-5e5e")
    monkeypatch.setenv("LF_TEST_API_TOKEN", "used-token-8c8c")
    render(
        "a: {{ env.LF_TEST_API_TOKEN }}\nb: {{ var.secret_word }}\n", {"secret_word": "var-secret-4d4d"}, "x"
    )
    known = secrets.registered()
    assert {"used-token-8c8c", "var-secret-4d4d"} <= known
    assert "never-used-5e5e" not in known


def test_values_too_short_to_mask_everywhere_are_masked_by_shape_only():
    secrets.register(["ab"])
    assert "ab" not in secrets.registered()
    assert redact("about password=ab;") == f"about password={MASK};"


def test_masked_settings_hold_no_secret_for_a_fingerprint():
    settings = {
        "catalog": {"properties": {"jdbc.password": "pw-aaaa", "warehouse": "/w"}},
        "tables": [{"source": {"url": "jdbc:x://u:pw-bbbb@h/db", "password": "pw-cccc"}}],
    }
    assert secrets.masked(settings) == {
        "catalog": {"properties": {"jdbc.password": MASK, "warehouse": "/w"}},
        "tables": [{"source": {"url": f"jdbc:x://u:{MASK}@h/db", "password": MASK}}],
    }


def test_an_s3_checksum_refusal_says_which_setting_relaxes_it():
    from lakefresh.lakehouse.failures import describe

    refused = OSError(
        "PUT s3://lake/wh/t/data/x.parquet: The provided 'x-amz-content-sha256' header does not match what "
        "was computed. (Service: S3, Status Code: 400)"
    )
    assert "storage.s3.checksums: when_required" in describe(refused)
