"""checks.shape.hygiene.pysource: reading and parsing hostile Python source without crashing."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from checks.shape.hygiene import pysource
from checks.shape.hygiene.bases import subclassed_in
from checks.shape.hygiene.pysource import (
    SourceTooLarge,
    aliases_of,
    comments,
    decode_source,
    dotted,
    import_aliases,
    parse_module,
    read_source,
    resolve,
    statements,
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


# Imports, classes and rebindings in every place a statement can stand, expressions around them.
NESTED = b"""\
import a as x
if cond(lambda: (yield)):
    import b as x
else:
    from c import d as x
try:
    import e
except (E := Error) as err:
    from f import g as e
else:
    import h
finally:
    import i as x
for k in [j for j in range(3)]:
    import j
while q if r else s:
    import l as j
with m as n:
    class K(Base[int], other.Mixin):
        import o as x
        def method(self):
            from p import q as x
            class Inner(K): pass
match v:
    case [1, *rest] if rest:
        import r as x
    case _:
        from s import t as x
async def coro():
    async with u:
        import v as x
    async for w in z:
        from y import zz as x
"""


def _full_walk_aliases(tree: ast.Module) -> dict[str, str]:
    """``import_aliases`` as it was, over ``ast.walk``: the reference the statement walk must match."""
    return aliases_of(ast.walk(tree))


def _sources() -> list[bytes]:
    root = Path(__file__).resolve().parents[4]
    tops = ("bot", "checks", "sandbox", "tests", "bench")
    files = sorted(p for top in tops for p in (root / top).rglob("*.py"))
    return [NESTED, *(p.read_bytes() for p in files)]


def test_the_statement_walk_is_the_full_walks_order_among_statements() -> None:
    kinds = (ast.stmt, ast.ExceptHandler, ast.match_case)
    sources = _sources()
    assert len(sources) > 300  # the repository's own files: every construct this codebase uses
    for data in sources:
        tree = parse_module(data)
        assert tree is not None
        expected = [n for n in ast.walk(tree) if isinstance(n, kinds)]
        assert [n for n in statements(tree) if isinstance(n, kinds)] == expected
        assert import_aliases(tree) == _full_walk_aliases(tree)
        assert subclassed_in(tree) == {
            name.rsplit(".", 1)[-1]
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
            for base in node.bases
            if (name := dotted(base.value if isinstance(base, ast.Subscript) else base)) is not None
        }


def test_a_later_import_wins_as_in_the_full_walk() -> None:
    tree = parse_module(NESTED)
    assert tree is not None
    aliases = import_aliases(tree)
    # Breadth first: the deepest rebinding of x (in the method of the class in the with block) comes last.
    assert aliases == _full_walk_aliases(tree)
    assert aliases["x"] == "p.q"
    assert aliases["j"] == "l"
    assert subclassed_in(tree) == {"Base", "Mixin", "K"}
