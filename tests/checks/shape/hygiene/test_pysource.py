"""checks.shape.hygiene.pysource: reading and parsing hostile Python source without crashing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checks.shape.hygiene import pysource
from checks.shape.hygiene.pysource import (
    SourceTooLarge,
    comments,
    decode_source,
    import_aliases,
    parse_module,
    read_source,
    resolve,
)


@pytest.mark.parametrize(
    "data",
    [
        b"def f(:\n",
        b"x = '\xff'\n",
        b"x = 1\x00\n",
        b"x = " + b"(" * 300 + b")" * 300 + b"\n",
        b"x = " + b"-" * 100_000 + b"1\n",
        b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n",
    ],
)
def test_parse_module_returns_none_for_what_does_not_compile(data: bytes) -> None:
    assert parse_module(data) is None


def test_parse_module_does_not_raise_the_prs_warnings() -> None:
    # filterwarnings=error: an invalid escape in the PR's code must not become our exception.
    assert parse_module(b"x = '\\d'\n") is not None


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"x = 1\n", "x = 1\n"),
        (b"# -*- coding: latin-1 -*-\nx = '\xe9'\n", "# -*- coding: latin-1 -*-\nx = '\u00e9'\n"),
        (b"x = '\xff'\n", "x = '\ufffd'\n"),
        (b"# coding: no-such-codec\nx\n", "# coding: no-such-codec\nx\n"),
    ],
)
def test_decode_source(data: bytes, text: str) -> None:
    assert decode_source(data) == text


def test_comments_are_tokens_not_text() -> None:
    assert comments("a = '#x'  # real\n") == [(1, 10, "# real")]


def test_read_source_skips_links_and_missing_files_and_caps_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\n")
    os.symlink("a.py", tmp_path / "link.py")
    assert read_source(tmp_path, "a.py") == b"x = 1\n"
    assert read_source(tmp_path, "link.py") is None
    assert read_source(tmp_path, "missing.py") is None
    assert read_source(tmp_path, None) is None
    monkeypatch.setattr(pysource, "MAX_SOURCE_BYTES", 3)
    with pytest.raises(SourceTooLarge):
        read_source(tmp_path, "a.py")


def test_names_resolve_through_imports() -> None:
    tree = parse_module(b"import pytest as pt\nfrom unittest import skip as sk\nimport os.path\n")
    assert tree is not None
    aliases = import_aliases(tree)
    assert resolve("pt.mark.skip", aliases) == "pytest.mark.skip"
    assert resolve("sk", aliases) == "unittest.skip"
    assert resolve("os.path.join", aliases) == "os.path.join"
    assert resolve("other.x", aliases) == "other.x"
