from __future__ import annotations

from checks.shape.hygiene.bases import base_class_names


def test_headers_spanning_lines_and_aliases() -> None:
    source = "import a.Base as B\nclass X(B,\n  class_ Y(Z)):\n    pass\nclass Late(Open\n"
    assert base_class_names([source]) == {"B", "Base", "class_", "Y", "Z"}
    assert base_class_names(["class A(\n"]) == frozenset()


def test_headers_without_a_closing_parenthesis_are_linear() -> None:
    # Each "class A(" with no ")" after it scanned to the end of the text: 1.4 s for 64k characters,
    # minutes for these. Now milliseconds; a regression hangs here until the suite's timeout.
    assert base_class_names(["class A(\n" * 120_000]) == frozenset()
    assert base_class_names(["class A(\n" * 120_000 + "class B(C)"]) == {"A", "class", "B", "C"}
