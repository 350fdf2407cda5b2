"""checks.shape.hygiene.probing: code that looks for the grader, found through aliases and built strings."""

from __future__ import annotations

import ast
from pathlib import Path
from textwrap import dedent

import click
import httpx
import pytest

from checks.shape.hygiene.probing import REASONS, fold, probes, reason
from tests.checks.shape.conftest import Files, Found, Gate, found


def whats(source: str) -> list[str]:
    return [h.what for h in probes(ast.parse(dedent(source)))]


PROBES: list[tuple[str, str, list[str]]] = [
    # --- frames and code objects, through every way of naming them
    (
        "sys._getframe",
        "import sys\nx = sys._getframe(1).f_locals['expected']\n",
        ["`.f_locals`, `sys._getframe` (frame)"],
    ),
    ("module alias", "import sys as s\nf = s._getframe()\n", ["`sys._getframe` (frame)"]),
    (
        "name alias",
        "from inspect import currentframe as cf\nf = cf().f_back\n",
        ["`.f_back`, `inspect.currentframe` (frame)"],
    ),
    ("reference without a call", "import inspect\nlook = inspect.stack\n", ["`inspect.stack` (frame)"]),
    ("getattr with a literal", "import sys\nf = getattr(sys, '_getframe')()\n", ["`sys._getframe` (frame)"]),
    (
        "getattr with a built name",
        "import sys\nf = getattr(sys, '_get' + 'frame')()\n",
        ["`sys._getframe` (frame)"],
    ),
    ("__import__ of a literal", "f = __import__('sys')._getframe()\n", ["`sys._getframe` (frame)"]),
    ("frame attribute through getattr", "g = getattr(frame, 'f_' + 'back')\n", ["`.f_back` (frame)"]),
    (
        "outer frames",
        "import inspect\nfor f in inspect.getouterframes(inspect.currentframe()):\n    pass\n",
        ["`inspect.currentframe`, `inspect.getouterframes` (frame)"],
    ),
    ("code constants", "consts = fn.__code__.co_consts\n", ["`.co_consts` (code)"]),
    ("function globals", "g = test_fn.__globals__\n", ["`.__globals__` (modules)"]),
    (
        "heap walk",
        "import gc\nfor o in gc.get_objects():\n    pass\nr = gc.get_referrers(x)\n",
        ["`gc.get_objects` (heap)", "`gc.get_referrers` (heap)"],
    ),
    ("tracing", "import sys\nsys.settrace(spy)\n", ["`sys.settrace` (trace)"]),
    # --- other modules' globals and test-runner detection
    (
        "sys.modules entry",
        "import sys\nm = sys.modules['__main__']\n",
        ["`sys.modules['__main__']` (modules)"],
    ),
    (
        "sys.modules get",
        "from sys import modules\nm = modules.get('tests.test_x')\n",
        ["`sys.modules.get('tests.test_x')` (modules)"],
    ),
    (
        "sys.modules changed",
        "import sys\nsys.modules['pytest'] = fake\n",
        ["`sys.modules` changed (modules)"],
    ),
    ("sys.modules listed", "import sys\nnames = list(sys.modules)\n", ["`sys.modules` walked (modules)"]),
    (
        "sys.modules walk",
        "import sys\nfor m in sys.modules.values():\n    pass\n",
        ["`sys.modules` walked (modules)"],
    ),
    ("code object built", "import types\nc = types.CodeType(*args)\n", ["`types.CodeType(...)` (code)"]),
    ("import __main__", "import __main__\nx = __main__.EXPECTED\n", ["`import __main__` (modules)"]),
    ("__main__ through __import__", "x = __import__('__main__').EXPECTED\n", ["`__main__` (modules)"]),
    (
        "pytest detection",
        "import sys\nif 'pytest' in sys.modules:\n    ANSWER = 4\n",
        ["`'pytest' in sys.modules` (detect)"],
    ),
    # --- the grader's files and environment
    ("suite path", "data = open('/suite/test_x.py').read()\n", ["`/suite` path (path)"]),
    ("suite path built", "p = '/su' + 'ite/x'\n", ["`/suite` path (path)"]),
    ("suite path joined", "import os\np = os.path.join('/', 'suite', name)\n", ["`/suite` path (path)"]),
    (
        "suite path through pathlib",
        "from pathlib import Path\np = Path('/') / 'grader' / n\n",
        ["`/grader` path (path)"],
    ),
    ("f-string path", "p = f'/patchgate/{name}'\n", ["`/patchgate` path (path)"]),
    (
        "tmp report",
        "r = open('/tmp/pytest-report.xml')\n",
        ["report-like file `/tmp/pytest-report.xml` (path)"],
    ),
    (
        "PYTEST_ variable",
        "import os\nt = os.environ.get('PYTEST_CURRENT_TEST')\n",
        ["`PYTEST_*` environment variable `PYTEST_CURRENT_TEST` (env)"],
    ),
    (
        "PATCHGATE_ variable built",
        "import os\nt = os.environ['PATCH' + 'GATE_SUITE']\n",
        ["`PATCHGATE_*` environment variable `PATCHGATE_SUITE` (env)"],
    ),
    # --- dynamic and native code
    ("eval", "x = eval(text)\n", ["`eval` (dynamic)"]),
    ("exec aliased", "run = exec\nrun(code)\n", ["`exec` (dynamic)"]),
    (
        "builtins.compile",
        "import builtins\nc = builtins.compile(s, 'x', 'exec')\n",
        ["`builtins.compile` (dynamic)"],
    ),
    (
        "computed import",
        "import importlib\nm = importlib.import_module(name)\n",
        ["`importlib.import_module` of a computed name (dynamic)"],
    ),
    ("computed __import__", "m = __import__('s' + name)\n", ["`__import__` of a computed name (dynamic)"]),
    (
        "marshal, reported where it is imported",
        "import marshal\ncode = marshal.loads(blob)\nimport marshal as m\n",
        ["`import marshal` (code)"],
    ),
    ("ctypes from-import", "from ctypes import pythonapi\n", ["`import ctypes` (native)"]),
    # --- the environment read whole: the runner's variables are found without being named
    (
        "environment values",
        "import os\nseen = ' '.join(os.environ.values())\n",
        ["`os.environ` walked (env)"],
    ),
    (
        "environment items",
        "from os import environ\nfor k, v in environ.items():\n    pass\n",
        ["`os.environ` walked (env)"],
    ),
    ("environment iterated", "import os\nnames = [k for k in os.environ]\n", ["`os.environ` walked (env)"]),
    (
        "environment copied",
        "import os as o\nenv = dict(o.environ)\nraw = o.environb.copy()\n",
        ["`os.environ` walked (env)", "`os.environb` walked (env)"],
    ),
    ("environment unpacked", "import os\nf(**os.environ)\n", ["`os.environ` walked (env)"]),
    # --- process tricks
    ("fork at import time", "import os\npid = os.fork()\n", ["`os.fork` at import time (process)"]),
    (
        "fork in a class body",
        "import os\nclass A:\n    pid = os.fork()\n",
        ["`os.fork` at import time (process)"],
    ),
    (
        "atexit decorator",
        "import atexit\n@atexit.register\ndef bye():\n    pass\n",
        ["`atexit.register` (process)"],
    ),
    ("signal handler", "import signal as sg\nsg.signal(sg.SIGTERM, h)\n", ["`signal.signal` (process)"]),
    ("exit without cleanup", "import os\nos._exit(0)\n", ["`os._exit` (process)"]),
]

CLEAN: list[tuple[str, str]] = [
    ("fork inside a function", "import os\ndef spawn():\n    return os.fork()\n"),
    ("re.compile", "import re\nP = re.compile('x')\n"),
    ("a method called compile", "c = self.compile(x)\nd = obj.eval()\n"),
    ("a parameter called eval", "def f(eval=False):\n    return eval\n"),
    ("a module-level function called compile", "def compile(x):\n    return x\ny = compile(1)\n"),
    ("importlib of a literal", "import importlib\nm = importlib.import_module('json')\n"),
    ("optional dependency check", "import sys\nHAS_NUMPY = 'numpy' in sys.modules\n"),
    ("own module", "import sys\nme = sys.modules[__name__]\nns = sys.modules.get(cls.__module__).__dict__\n"),
    (
        "code objects in annotations",
        "import types\ndef f(c: types.CodeType) -> bool:\n    return isinstance(c, types.CodeType)\n",
    ),
    ("a message starting like a variable", "raise ValueError('PYTEST_THEME has an invalid value')\n"),
    ("__main__ guard", "if __name__ == '__main__':\n    main()\n"),
    ("docstring about probes", "def f():\n    '''Never call sys._getframe, read /suite or PYTEST_X.'''\n"),
    ("an unrelated attribute", "x = obj.f_backwards\ny = frame_count\n"),
    ("an unimported name", "signal.signal(1, 2)\nsys._getframe()\n"),
    ("ordinary paths and variables", "p = '/tmp/cache'\nq = '/suites'\nv = os.environ['HOME']\n"),
    (
        "one variable by name, and the environment handed to a child",
        "import os, subprocess\nh = os.environ.get('HOME')\nos.environ['X'] = '1'\n"
        "subprocess.run(['ls'], env=os.environ)\nok = 'CI' in os.environ\n",
    ),
]


@pytest.mark.parametrize(("source", "expected"), [c[1:] for c in PROBES], ids=[c[0] for c in PROBES])
def test_probes_are_found(source: str, expected: list[str]) -> None:
    assert sorted(whats(source)) == sorted(expected)


@pytest.mark.parametrize("source", [c[1] for c in CLEAN], ids=[c[0] for c in CLEAN])
def test_ordinary_code_is_not_a_probe(source: str) -> None:
    assert whats(source) == []


def test_every_probe_has_a_reason() -> None:
    for _, source, _ in PROBES:
        for what in whats(source):
            assert reason(what) in REASONS.values() and reason(what)


def test_one_hit_per_statement_and_kind() -> None:
    hits = probes(ast.parse("import sys\nx = (sys._getframe(1), sys._getframe(2))\n\ny = sys._getframe()\n"))
    frame = "`sys._getframe` (frame)"
    assert [(h.line, h.what) for h in hits] == [(2, frame), (4, frame)]


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("'a'", "a"),
        ("'a' + 'b'", "ab"),
        ("'a' + x", "a\x00"),
        ("f'a{x}b'", "a\x00b"),
        ("'/a' / 'b'", "/a/b"),
        ("'%s' % x", "%s"),
        ("x + 'a'", None),
        ("1", None),
        ("Path('/') / 'a'", "//a"),
    ],
)
def test_fold(source: str, text: str | None) -> None:
    assert fold(ast.parse(source, mode="eval").body) == text


GATE_CASES: list[tuple[str, Files, Files, Found]] = [
    (
        "ordinary change",
        {"src/m.py": "def f(x):\n    return x\n"},
        {"src/m.py": "def f(x):\n    return x + 1\n"},
        [],
    ),
    (
        "frame read added",
        {"src/m.py": "def f(x):\n    return x\n"},
        {"src/m.py": "import sys\n\n\ndef f(x):\n    return sys._getframe(1).f_locals['expected']\n"},
        [("grader-probing", "src/m.py", 5)],
    ),
    (
        "hostile: probe through an alias and a built name",
        {"src/m.py": "def f(x):\n    return x\n"},
        {"src/m.py": "import sys as _s\n\n\ndef f(x):\n    return getattr(_s, '_get' + 'frame')(1)\n"},
        [("grader-probing", "src/m.py", 5)],
    ),
    (
        "probe already at base, line moved",
        {"src/m.py": "import sys\n\nF = sys._getframe\n"},
        {"src/m.py": "import sys\n\n\nX = 1\nF = sys._getframe\n"},
        [],
    ),
    (
        "probe on an unchanged line",
        {"src/m.py": "import sys\nF = sys._getframe\nX = 1\n"},
        {"src/m.py": "import sys\nF = sys._getframe\nX = 2\n"},
        [],
    ),
    (
        "probe edited",
        {"src/m.py": "import sys\nF = sys._getframe(0)\n"},
        {"src/m.py": "import sys\nF = sys._getframe(1)\n"},
        [("grader-probing", "src/m.py", 2)],
    ),
    (
        "tests may introspect",
        {"tests/test_m.py": "def test_a():\n    pass\n"},
        {"tests/test_m.py": "import sys\n\n\ndef test_a():\n    assert sys._getframe()\n"},
        [],
    ),
    # --- a new top-level module named like one of the grader's tools or the standard library's
    (
        "a module named like a dependency of the test runner",
        {"src/m.py": "X = 1\n"},
        {"src/m.py": "X = 1\n", "pluggy/__init__.py": "X = 1\n", "pluggy/hooks.py": "Y = 2\n"},
        [("grader-probing", "pluggy/__init__.py", 1)],
    ),
    (
        "a module named like the standard library's, under src/",
        {"src/m.py": "X = 1\n"},
        {"src/m.py": "X = 1\n", "src/statistics.py": "def mean(v):\n    return sum(v) / len(v)\n"},
        [("grader-probing", "src/statistics.py", 1)],
    ),
    (
        "the repository already had that name",
        {"pluggy/__init__.py": "X = 1\n"},
        {"pluggy/__init__.py": "X = 1\n", "pluggy/extra.py": "Y = 2\n"},
        [],
    ),
]


@pytest.mark.parametrize(
    ("base", "head", "expected"), [c[1:] for c in GATE_CASES], ids=[c[0] for c in GATE_CASES]
)
def test_the_gate_reports_new_probes(gate: Gate, base: Files, head: Files, expected: Found) -> None:
    result = gate(base, head)
    assert sorted(found(result)) == sorted(expected)


def test_a_probe_asks_a_maintainer(gate: Gate) -> None:
    result = gate({"src/m.py": "x = 1\n"}, {"src/m.py": "x = 1\nimport os\nos._exit(0)\n"})
    [finding] = result.findings
    assert finding.rule == "grader-probing" and finding.needs_maintainer and finding.severity == "warning"
    assert finding.message == "`os._exit` (process): can end or outlive the test run on its own terms"
    assert (finding.start_line, finding.end_line) == (3, 3)


# Measured on more packages in docs/hygiene.md (bench/probing_rate.py); these two stay in CI.
FINDINGS_PER_10K_LINES_LIMIT = 10.0


@pytest.mark.slow
@pytest.mark.parametrize("package", [httpx, click], ids=["httpx", "click"])
def test_false_positive_rate_on_real_code(package: object) -> None:
    root = Path(str(getattr(package, "__file__", ""))).parent
    lines = flagged = 0
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        lines += data.count(b"\n")
        flagged += len(probes(ast.parse(data)))
    assert lines > 5000  # the measurement saw a real code base
    assert flagged * 10_000 / lines < FINDINGS_PER_10K_LINES_LIMIT
