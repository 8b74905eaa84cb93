"""Secrets stay secret: passwords and tokens never reach an error message, the console,
`--output json` or the control tables.

Two nets, both applied by :func:`redact` to every text lakefresh shows or stores about a failure
(`lakehouse.failures.describe`, the runner's error text, the CLI's error line, the control
tables' `error` column):

1. **Known values.** Loading a pipeline registers every value it holds under a secret-looking
   name (`password`, `jdbc.password`, `s3.secret-access-key`, `token`, `credential`, an account
   or API key...), the password of a URL with credentials (`jdbc:postgresql://u:pw@host/db`,
   `...?password=pw`), and the value of every environment variable or `--var` with a
   secret-looking name that the pipeline's template uses. Any occurrence of such a value, in any
   message and in any wording (a database echoing the URL, a stack line quoting an option), is
   replaced.
2. **Shapes.** Whatever was not registered: a URL's `user:password@` and `password=...`,
   `token=...` pairs are masked by their shape.

A registered value shorter than :data:`SHORTEST` characters is masked by shape only (masking a
two-letter password everywhere would garble every message). The registry lives for the process:
secrets are never written anywhere, so a value once registered stays masked.

Pure Python (no Spark): the config layer registers, the layers above redact.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping

MASK = "***"
SHORTEST = 4

# A name whose value is a secret (a config key, an environment variable, a URL parameter). Not
# `keys` (a strategy's key columns) nor `key_column`: only key names that say what key they are.
SECRET_NAME = re.compile(
    r"(?i)(pass(word|wd|phrase)?|pwd|secret|token|credential|sas|signature"
    r"|(^|[._-])(api|access|account|private|signing|client|master|encryption)[._-]?key)"
)
_URL_CREDENTIALS = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]+:)(?P<secret>[^@/\s]+)(?=@)")
_PAIR = re.compile(
    r"(?i)(?P<head>\b(?:password|passwd|pwd|secret|token|access[_-]?key|secret[_-]?key|sig|sas)"
    r"\s*=\s*)(?P<secret>[^;&\s,'\")]+)"
)

_known: set[str] = set()
_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    """Whether a setting or variable of this name holds a secret."""
    return bool(SECRET_NAME.search(name))


def register(values: Iterable[object]) -> None:
    """Mask these values from now on, wherever they appear."""
    with _lock:
        _known.update(str(v) for v in values if v is not None and len(str(v)) >= SHORTEST)


def register_config(data: object) -> None:
    """Register the secrets a pipeline's settings hold: values under secret-looking names at any
    depth, and the credentials inside any URL-like text."""
    register(_secrets_in(data, secret=False))


def register_variables(used: Mapping[str, str]) -> None:
    """Register the environment variables and `--var`s a template used whose names look secret."""
    register(value for name, value in used.items() if is_secret_name(name))


def redact(text: str) -> str:
    """The text with every known secret and every credential-shaped part masked."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)  # the longest first: no partial masks
    for value in known:
        text = text.replace(value, MASK)
    text = _URL_CREDENTIALS.sub(lambda m: m["head"] + MASK, text)
    return _PAIR.sub(lambda m: m["head"] + MASK, text)


def masked(data: object) -> object:
    """A copy of settings with the values under secret-looking names masked: what a fingerprint
    or a printout of the configuration may hold."""
    if isinstance(data, Mapping):
        return {
            k: (MASK if is_secret_name(str(k)) and isinstance(v, str | int) else masked(v))
            for k, v in data.items()
        }
    if isinstance(data, list | tuple):
        return [masked(v) for v in data]
    if isinstance(data, str):
        return redact(data)
    return data


def _secrets_in(data: object, secret: bool) -> Iterable[str]:
    if isinstance(data, Mapping):
        for name, value in data.items():
            yield from _secrets_in(value, secret or is_secret_name(str(name)))
    elif isinstance(data, list | tuple):
        for value in data:
            yield from _secrets_in(value, secret)
    elif isinstance(data, str | int) and not isinstance(data, bool):
        text = str(data)
        if secret:
            yield text
        yield from (m["secret"] for m in _URL_CREDENTIALS.finditer(text))
        yield from (m["secret"] for m in _PAIR.finditer(text))


def registered() -> frozenset[str]:
    """What is registered (for tests)."""
    with _lock:
        return frozenset(_known)
