"""One parse at a time on the host (python/cpython#106905), and every host parse goes through it."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

from sandbox import pyparse
from sandbox.pyparse import parse_python

ROOT = Path(__file__).resolve().parents[2]


def test_a_parse_waits_for_the_one_under_way() -> None:
    done = threading.Event()

    def parse() -> None:
        parse_python("x = 1\n")
        done.set()

    with pyparse._PARSING:  # a parse under way in another thread
        thread = threading.Thread(target=parse)
        thread.start()
        # It cannot finish while the lock is held, however fast the machine.
        assert not done.wait(0.2)
    thread.join(timeout=30)
    assert done.is_set()


def test_it_parses_as_ast_parse_does() -> None:
    assert ast.dump(parse_python("f(1)", mode="eval")) == ast.dump(ast.parse("f(1)", mode="eval"))
    assert ast.dump(parse_python(b"def f():\n    pass\n")) == ast.dump(ast.parse(b"def f():\n    pass\n"))


def test_no_host_module_parses_python_but_through_it() -> None:
    # The in-container code runs in processes of its own, one thread each; the host's does not.
    direct = []
    for folder in ("bot", "checks", "sandbox"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if "/incontainer/" in rel or "/examples/" in rel or rel == "sandbox/pyparse.py":
                continue
            text = path.read_text(encoding="utf-8")
            if re.search(r"\bast\.parse\(|\bliteral_eval\(\s*[\"'a-z_]*source", text):
                direct.append(rel)
    assert direct == []
