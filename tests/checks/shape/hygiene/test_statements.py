"""checks.shape.hygiene.statements: a statement's own code, its lines, and which hits are new."""

from __future__ import annotations

import ast
from pathlib import Path
from textwrap import dedent

from checks.shape.hygiene.statements import Hit, located, new_hits, own_key, span

SOURCE = dedent("""\
    import os

    @decorate
    def f(x=os.sep):
        if os.path.exists(x):
            return 1
        try:
            pass
        except os.error:
            pass

    class C:
        value = os.getcwd()
""")


def test_every_statement_with_its_own_nodes_and_scope() -> None:
    places = list(located(ast.parse(SOURCE)))
    kinds = [(type(p.stmt).__name__, p.module_level) for p in places]
    assert kinds == [
        ("Import", True),
        ("FunctionDef", True),
        ("If", False),
        ("Return", False),
        ("Try", False),
        ("Pass", False),
        ("ExceptHandler", False),
        ("Pass", False),
        ("ClassDef", True),
        ("Assign", True),
    ]
    # An if statement owns its test, never its body.
    if_names = {n.attr for n in places[2].nodes if isinstance(n, ast.Attribute)}
    assert if_names == {"path", "exists"}
    # A function owns its decorators and defaults.
    def_names = {n.id for n in places[1].nodes if isinstance(n, ast.Name)}
    assert def_names == {"decorate", "os"}


def test_spans_cover_headers_and_decorators() -> None:
    places = list(located(ast.parse(SOURCE)))
    assert span(places[1].stmt) == (3, 4)  # decorator and def line, not the body
    assert span(places[2].stmt) == (5, 5)
    assert span(places[9].stmt) == (13, 13)


def test_own_key_ignores_position_and_body() -> None:
    a = ast.parse("if x:\n    y = 1\n").body[0]
    b = ast.parse("\n\nif x:\n    y = 2\n    z = 3\n").body[0]
    c = ast.parse("if not x:\n    y = 1\n").body[0]
    assert isinstance(a, ast.If) and isinstance(b, ast.If) and isinstance(c, ast.If)
    assert own_key(a) == own_key(b) != own_key(c)


def test_deep_nesting_does_not_exhaust_the_stack() -> None:
    depth = 90  # the parser's own limit is near 100 nested blocks
    source = "".join("    " * i + "if x:\n" for i in range(depth)) + "    " * depth + "y = 1\n"
    assert len(list(located(ast.parse(source)))) == depth + 1


def test_new_hits_counts_what_the_base_had() -> None:
    base = [Hit(3, 3, "probe", "k1"), Hit(9, 9, "probe", "k2")]
    head = [
        Hit(1, 1, "probe", "k1"),
        Hit(5, 6, "probe", "k1"),
        Hit(8, 8, "probe", "k3"),
        Hit(20, 20, "probe", "k2"),
    ]
    fresh, old = new_hits(base, head, frozenset({1, 6, 8}))
    # Line 1 matches the base's k1; line 5-6 is a second k1 the base did not have; line 20 is unchanged.
    assert fresh == [Hit(5, 6, "probe", "k1"), Hit(8, 8, "probe", "k3")]
    assert old == 1


def _own_nodes_reference(stmt: ast.AST) -> list[ast.AST]:
    """``own_nodes`` over ``ast.iter_child_nodes``, as it was: the order the inlined walk must keep."""
    stack: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        if isinstance(value, ast.AST):
            stack.append(value)
        elif isinstance(value, list):
            stack += [v for v in value if isinstance(v, ast.AST)]
    found = []
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def test_own_nodes_in_the_order_of_the_child_walk() -> None:
    root = Path(__file__).resolve().parents[4]
    files = sorted((root / "checks").rglob("*.py"))
    assert len(files) > 100
    for path in [*files, None]:
        tree = ast.parse(SOURCE if path is None else path.read_text())
        for place in located(tree):
            assert list(place.nodes) == _own_nodes_reference(place.stmt)
