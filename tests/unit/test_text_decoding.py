"""Decoding source files without a JVM: byte order marks, exact invalid bytes, zone patterns, and
the config fields that steer them (csv.encoding, timezone)."""

from __future__ import annotations

import codecs

import pytest
from pydantic import ValidationError

from lakefresh.config.sources import FilesSourceConfig
from lakefresh.errors import SourceError
from lakefresh.sources.text import has_zone, scan

TEXT = 'id,name\r\n1,zoë\n2,"two\nlines ✓"\n'


def scanned(data: bytes, encoding: str, chunk: int = 1 << 20) -> tuple[str | None, tuple[int, ...]]:
    found = scan((data[i : i + chunk] for i in range(0, len(data), chunk)), encoding, "f.csv")
    return found.header, found.bad_lines


@pytest.mark.parametrize(
    ("data", "declared"),
    [
        (TEXT.encode("utf-8"), "UTF-8"),
        (codecs.BOM_UTF8 + TEXT.encode("utf-8"), "UTF-8"),
        (codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"), "UTF-16"),
        (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), "UTF-16"),
        (TEXT.encode("utf-16-be"), "UTF-16"),  # no mark: big-endian, as Java reads it
        (codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"), "UTF-16LE"),
        (TEXT.encode("utf-16-le"), "utf-16le"),
        (codecs.BOM_UTF32_LE + TEXT.encode("utf-32-le"), "UTF-32"),
        (codecs.BOM_UTF32_BE + TEXT.encode("utf-32-be"), "UTF-32"),
        (TEXT.encode("utf-32-be"), "UTF-32"),
        (TEXT.encode("cp1252", errors="replace"), "windows-1252"),
    ],
)
def test_the_header_is_decoded_in_the_declared_encoding_without_its_byte_order_mark(data, declared):
    for chunk in (1, 3, 1 << 20):  # multi-byte characters and marks split across chunks
        assert scanned(data, declared, chunk) == ("id,name", ())


@pytest.mark.parametrize(
    ("data", "declared", "mark"),
    [
        (codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"), "UTF-8", "UTF-16LE"),
        (codecs.BOM_UTF32_BE + TEXT.encode("utf-32-be"), "UTF-16", "UTF-32BE"),
        (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), "UTF-16LE", "UTF-16BE"),
        (codecs.BOM_UTF8 + TEXT.encode("utf-8"), "ISO-8859-1", "UTF-8"),
    ],
)
def test_a_byte_order_mark_that_disagrees_with_the_declared_encoding_refuses_the_file(data, declared, mark):
    with pytest.raises(SourceError) as info:
        scanned(data, declared)
    family = mark.removesuffix("LE").removesuffix("BE")
    assert str(info.value) == (
        f"f.csv starts with a {mark} byte order mark, but csv.encoding is {declared}; "
        f"declare csv.encoding: {family}"
    )


def test_invalid_bytes_are_found_exactly_by_line_and_a_genuine_replacement_character_is_not():
    data = (
        b"id,name\n"
        b"1,\xef\xbf\xbd is U+FFFD, written on purpose\n"  # line 2: valid UTF-8
        b"2,caf\xe9\n"  # line 3: a Latin-1 byte
        b'3,"two\nli\xffnes"\n'  # lines 4-5: the bad byte is on line 5
        b"4,\xc3\n"  # line 6: a truncated sequence
        b"5,\xed\xa0\x80 \xff\xfe twice\n"  # line 7: an encoded surrogate, then two bad bytes
        b"6,end\xe2\x82"  # line 8: truncated at the end of the file
    )
    for chunk in (1, 2, 7, 1 << 20):
        assert scanned(data, "UTF-8", chunk) == ("id,name", (3, 5, 6, 7, 8))


def test_invalid_utf16_is_found_too():
    lone_surrogate, odd_last_byte = b"\xd8\x00", b"\x00"
    data = "id\n1\n".encode("utf-16-be") + lone_surrogate + "A\n".encode("utf-16-be") + odd_last_byte
    for chunk in (1, 1 << 20):
        assert scanned(data, "UTF-16", chunk) == ("id", (3, 4))


def test_an_empty_file_has_no_header():
    assert scanned(b"", "UTF-8") == (None, ())
    assert scanned(b"id,name", "UTF-8") == ("id,name", ())


@pytest.mark.parametrize(
    ("pattern", "zoned"),
    [
        ("yyyy-MM-dd HH:mm:ss", False),
        ("dd/MM/yyyy HH:mm", False),
        ("yyyy-MM-dd'T'HH:mm:ss", False),
        ("yyyy-MM-dd HH:mm:ss 'Zulu'", False),  # quoted letters are text
        ("yyyy-MM-dd HH:mm:ssXXX", True),
        ("yyyy-MM-dd HH:mm:ss Z", True),
        ("yyyy-MM-dd HH:mm:ss VV", True),
        ("yyyy-MM-dd HH:mm:ss z", True),
    ],
)
def test_a_timestamp_format_reads_a_zone_when_it_has_zone_letters(pattern, zoned):
    assert has_zone(pattern) is zoned


def source(**fields: object) -> FilesSourceConfig:
    return FilesSourceConfig.model_validate({"kind": "files", "path": "in", "format": "csv", **fields})


def test_the_time_zone_of_naive_timestamps_is_utc_unless_given_and_must_be_an_iana_name():
    assert source().timezone == "UTC"
    assert source(timezone="America/New_York").timezone == "America/New_York"
    for bad in ("Mars/Base", "EDT-ish", "localtime", ""):
        with pytest.raises(ValidationError) as info:
            source(timezone=bad)
        assert (
            f"unknown time zone {bad!r}; give an IANA name such as UTC, Europe/Amsterdam, America/New_York"
            in str(info.value)
        )


def test_the_encoding_must_be_a_text_encoding():
    assert source(csv={"encoding": "UTF-16"}).csv.encoding == "UTF-16"
    for bad in ("utf-9", "rot13", "base64"):
        with pytest.raises(ValidationError) as info:
            source(csv={"encoding": bad})
        assert f"unknown encoding {bad!r}; e.g. UTF-8, UTF-16, UTF-32, ISO-8859-1, windows-1252" in str(
            info.value
        )
