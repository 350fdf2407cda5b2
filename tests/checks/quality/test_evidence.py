from __future__ import annotations

from pathlib import Path

import pytest

from checks.quality.evidence import Claim, locate, normalize, safe_relpath, verify

SOURCE = (
    "def load(path):\n"  # 1
    "    with open(path) as f:\n"  # 2
    "        data = f.read()\n"  # 3
    "    return data\n"  # 4
    "\n"  # 5
    "def again(path):\n"  # 6
    "    with open(path) as f:\n"  # 7
    "        data = f.read()\n"  # 8
    "    return data\n"  # 9
)


@pytest.mark.parametrize(
    ("quote", "found"),
    [
        ("data = f.read()", [(3, 3), (8, 8)]),
        ("with open(path) as f:\n        data = f.read()", [(2, 3), (7, 8)]),
        ("with   open(path)  as f:   data = f.read()", [(2, 3), (7, 8)]),  # whitespace differs
        ("def again(path):", [(6, 6)]),
        ("return data\n\ndef again", [(4, 6)]),
        ("json.loads(data)", []),
        ("f", []),  # too short to prove anything
        ("   ", []),
    ],
)
def test_locate_is_whitespace_insensitive(quote: str, found: list[tuple[int, int]]) -> None:
    assert locate(SOURCE, quote) == found


def test_normalize() -> None:
    assert normalize("  a\n\t b  ") == "a b"
    assert normalize("\uff46\uff55\uff4c\uff4c") == "full"  # full-width letters


@pytest.mark.parametrize(
    ("path", "clean"),
    [
        ("src/a.py", "src/a.py"),
        ("./src/a.py", "src/a.py"),
        ("/etc/passwd", None),
        ("../a.py", None),
        ("src/../../a.py", None),
        ("", None),
        ("a\0b", None),
    ],
)
def test_safe_relpath(path: str, clean: str | None) -> None:
    assert safe_relpath(path) == clean


@pytest.fixture
def head(tmp_path: Path) -> Path:
    (tmp_path / "head" / "pkg").mkdir(parents=True)
    (tmp_path / "head" / "pkg" / "io.py").write_text(SOURCE)
    (tmp_path / "outside.py").write_text(SOURCE)
    (tmp_path / "head" / "pkg" / "link.py").symlink_to(tmp_path / "outside.py")
    return tmp_path / "head"


SHOWN = {"pkg/io.py", "pkg/link.py"}


def test_correct_citation_is_verified(head: Path) -> None:
    cited = verify(Claim("pkg/io.py", 7, 8, "with open(path) as f:\n data = f.read()"), head, SHOWN)
    assert (cited.verified, cited.start_line, cited.end_line) == (True, 7, 8)


def test_quote_elsewhere_in_the_file_takes_its_real_location(head: Path) -> None:
    cited = verify(Claim("pkg/io.py", 40, 41, "def again(path):"), head, SHOWN)
    assert (cited.verified, cited.start_line, cited.end_line) == (True, 6, 6)
    # With two occurrences, the one nearest the claimed lines wins.
    near_second = verify(Claim("pkg/io.py", 9, 9, "data = f.read()"), head, SHOWN)
    assert (near_second.start_line, near_second.end_line) == (8, 8)


def test_prompt_line_prefixes_copied_into_the_quote_are_tolerated(head: Path) -> None:
    quote = "+     6 | def again(path):\n      7 |     with open(path) as f:"
    cited = verify(Claim("pkg/io.py", 6, 7, quote), head, SHOWN)
    assert (cited.verified, cited.start_line, cited.end_line) == (True, 6, 7)


@pytest.mark.parametrize(
    "claim",
    [
        Claim("pkg/io.py", 3, 3, "data = json.load(f)"),  # nowhere in the file
        Claim("pkg/missing.py", 1, 1, "def load(path):"),  # no such file
        Claim("pkg/other.py", 1, 1, "def load(path):"),  # not shown to the judge
        Claim("../outside.py", 1, 1, "def load(path):"),  # outside the tree
        Claim("/etc/hostname", 1, 1, "localhost"),
        Claim("pkg/link.py", 1, 1, "def load(path):"),  # a symlink out of the tree
    ],
)
def test_ungrounded_citations_are_unverified(head: Path, claim: Claim) -> None:
    cited = verify(claim, head, SHOWN | {"pkg/other.py", "pkg/missing.py"})
    assert not cited.verified
    assert (cited.path, cited.start_line, cited.end_line) == (claim.path, claim.start_line, claim.end_line)
