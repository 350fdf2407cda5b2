"""Grader probing: code that looks for the test harness instead of doing its job.

A patch can pass tests without solving anything by reading the caller's
frame for the expected value, detecting pytest and returning canned
answers, reading the grader's files or environment, or exiting 0 before the
report is written. patchgate's behaviour runs keep the grader in another
process, so most of this fails there; the repository's own CI has no such
wall. The PR's non-test code is scanned with the AST, names resolved through
its imports (`import sys as s; s._getframe()`, `from inspect import
currentframe as cf`), strings folded where they are built from literals
(`"/su" + "ite"`, `f"/suite/{n}"`, `Path("/suite") / n`). Rules:
docs/hygiene.md (`grader-probing`).
"""

from __future__ import annotations

import ast
import re

from checks.shape.hygiene.pysource import import_aliases
from checks.shape.hygiene.statements import Hit, Located, located

# Why each kind of probe is worth a maintainer's look.
REASONS = {
    "frame": "frame introspection: reads the caller's frames, where a test's expected values live",
    "trace": "a tracing hook sees every frame the interpreter runs, the test's included",
    "code": "reads compiled code objects (the constants of other functions)",
    "heap": "walks the interpreter's live objects, the test runner's included",
    "modules": "reaches other modules' globals, the test runner's included",
    "detect": "detects the test runner: code that behaves differently under test games it",
    "path": "reads the grader's files",
    "env": "reads the test runner's environment (its own variables name the running test and its parameters)",
    "dynamic": "runs code the diff does not show",
    "native": "native code can patch the interpreter and read any memory",
    "process": "can end or outlive the test run on its own terms",
}
# Qualified names that count wherever they are referenced (a call, an alias, a decorator).
_NAMES = {
    "sys._getframe": "frame",
    "sys._current_frames": "frame",
    "inspect.stack": "frame",
    "inspect.currentframe": "frame",
    "inspect.getouterframes": "frame",
    "inspect.getinnerframes": "frame",
    "inspect.trace": "frame",
    "traceback.walk_stack": "frame",
    "traceback.extract_stack": "frame",
    "sys.settrace": "trace",
    "sys.setprofile": "trace",
    "threading.settrace": "trace",
    "threading.setprofile": "trace",
    "sys.addaudithook": "trace",
    "gc.get_referrers": "heap",
    "gc.get_referents": "heap",
    "gc.get_objects": "heap",
    "exec": "dynamic",
    "eval": "dynamic",
    "compile": "dynamic",
    "builtins.exec": "dynamic",
    "builtins.eval": "dynamic",
    "builtins.compile": "dynamic",
    "atexit.register": "process",
    "signal.signal": "process",
    "signal.alarm": "process",
    "signal.setitimer": "process",
    "os._exit": "process",
}
# Names that count only when called: `types.CodeType(...)` builds code; an annotation does not.
_CALLED = {"types.CodeType": "code", "types.FunctionType": "code"}
# Names that count only when run at import time.
_IMPORT_TIME = {"os.fork": "process", "os.forkpty": "process"}
# Whole modules: any import or use.
_MODULES = {"ctypes": "native", "marshal": "code", "__main__": "modules"}
# Attributes of frames, tracebacks, generators and code objects, on whatever object.
_ATTRIBUTES = {
    "f_back": "frame",
    "f_locals": "frame",
    "f_globals": "frame",
    "f_builtins": "frame",
    "f_code": "frame",
    "f_trace": "trace",
    "tb_frame": "frame",
    "gi_frame": "frame",
    "cr_frame": "frame",
    "ag_frame": "frame",
    "co_consts": "code",
    "co_code": "code",
    "co_names": "code",
    "__globals__": "modules",
}
_IMPORTERS = frozenset(
    {
        "__import__",
        "builtins.__import__",
        "importlib.import_module",
        "importlib.__import__",
    }
)
_BUILTINS = frozenset({"exec", "eval", "compile", "__import__", "getattr"})
_RUNNERS = frozenset({"pytest", "_pytest", "unittest", "nose", "patchgate", "xdist"})
_GRADER_PATHS = ("/suite", "/grader", "/patchgate")
_TMP_REPORT = re.compile(
    r"^/tmp/.*(report|result|junit|grade|score|pytest|verdict|\.xml$|\.json$)", re.IGNORECASE
)
# A variable's name, not a message that starts with one: `PYTEST_CURRENT_TEST`, `"PYTEST_" + name`.
_ENV_NAME = re.compile("^(?:PATCHGATE|PYTEST)_[A-Z0-9_]*\x00?$")


def probes(tree: ast.Module) -> list[Hit]:
    """Return the grader probes in ``tree``: one hit per statement, naming each probe it holds by kind."""
    scan = _Scan(tree)
    hits: list[Hit] = []
    for place in located(tree):
        kinds: dict[str, list[str]] = {}
        for kind, what in scan.statement(place):
            if what not in kinds.setdefault(kind, []):
                kinds[kind].append(what)
        if kinds:
            hits.append(place.hit("; ".join(f"{', '.join(sorted(w))} ({k})" for k, w in kinds.items())))
    return hits


def reason(what: str) -> str:
    """Return why the probes ``what`` (as `probes` names them) matter."""
    kinds = re.findall(r"\((\w+)\)(?:;|$)", what)
    return "; ".join(REASONS[k] for k in kinds if k in REASONS)


class _Scan:
    """The module-wide facts a statement's probes are resolved with: imports and shadowed builtins."""

    def __init__(self, tree: ast.Module) -> None:
        self.aliases = import_aliases(tree)
        self.shadowed = _bound_names(tree) & _BUILTINS
        # A whole-module probe (ctypes, marshal) is reported at its first import, not at every use.
        self.imported: set[str] = set()

    def statement(self, place: Located) -> list[tuple[str, str]]:
        if isinstance(place.stmt, ast.Expr) and isinstance(place.stmt.value, ast.Constant):
            return []  # a docstring or a bare string: words about a probe are not one
        parents = {child: node for node in place.nodes for child in ast.iter_child_nodes(node)}
        out: list[tuple[str, str]] = []
        for node in (place.stmt, *place.nodes):
            out += self._node(node, parents, place.module_level)
        return out

    def _node(
        self, node: ast.AST, parents: dict[ast.AST, ast.AST], module_level: bool
    ) -> list[tuple[str, str]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            # An import names its module once, in the statement itself.
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            roots = [n.split(".")[0] for n in names if n.split(".")[0] in _MODULES]
            fresh = [root for root in roots if root not in self.imported]
            self.imported |= set(roots)
            return [(_MODULES[root], f"`import {root}`") for root in fresh]
        if isinstance(node, ast.Call):
            path = fold(node)
            joined = _string(path) if path is not None and not _folded_part(node, parents) else []
            return self._call(node) + joined
        if isinstance(node, ast.Compare):
            return self._detection(node)
        found: list[tuple[str, str]] = []
        if isinstance(node, ast.Attribute) and node.attr in _ATTRIBUTES:
            found.append((_ATTRIBUTES[node.attr], f"`.{node.attr}`"))
        name = self.qualified(node) if isinstance(node, ast.Name | ast.Attribute) else None
        if name is not None and not isinstance(parents.get(node), ast.Attribute):
            found += self._named(name, node, parents, module_level)
        text = fold(node) if isinstance(node, ast.Constant | ast.JoinedStr | ast.BinOp) else None
        if text is not None and not _folded_part(node, parents):
            found += _string(text)
        return found

    def _named(
        self, name: str, node: ast.AST, parents: dict[ast.AST, ast.AST], module_level: bool
    ) -> list[tuple[str, str]]:
        # The longest known prefix names it: `sys._getframe(1)`, `sys.modules.get`, `ctypes.CDLL`.
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            prefix = ".".join(parts[:n])
            if prefix in _NAMES:
                return [(_NAMES[prefix], f"`{prefix}`")]
            if prefix in _CALLED:
                call = parents.get(node)
                called = isinstance(call, ast.Call) and call.func is node
                return [(_CALLED[prefix], f"`{prefix}(...)`")] if called and prefix == name else []
            if prefix in _IMPORT_TIME:
                return [(_IMPORT_TIME[prefix], f"`{prefix}` at import time")] if module_level else []
            if prefix in _MODULES:
                # Through an imported name it was reported at the import; `__import__("ctypes")` was not.
                return [] if _through_import(node) else [(_MODULES[prefix], f"`{prefix}`")]
            if prefix == "sys.modules":
                use = _module_table(node, parts[n:], parents)
                return [] if use is None else [("modules", use)]
            if prefix in ("os.environ", "os.environb"):
                use = _environment_walk(prefix, node, parts[n:], parents)
                return [] if use is None else [("env", use)]
        return []

    def _call(self, call: ast.Call) -> list[tuple[str, str]]:
        name = self.qualified(call.func)
        first = call.args[0] if call.args else None
        if name in _IMPORTERS and (first is None or _computed(first)):
            return [("dynamic", f"`{name}` of a computed name")]
        if name == "getattr" and len(call.args) >= 2:
            attribute = fold(call.args[1])
            if attribute is None:
                return []
            owner = self.qualified(call.args[0])
            found = [(_ATTRIBUTES[attribute], f"`.{attribute}`")] if attribute in _ATTRIBUTES else []
            full = f"{owner}.{attribute}" if owner else None
            if full in _NAMES:
                found.append((_NAMES[full], f"`{full}`"))
            return found
        return []

    def _detection(self, node: ast.Compare) -> list[tuple[str, str]]:
        # `"pytest" in sys.modules`
        for op, right in zip(node.ops, node.comparators, strict=False):
            if isinstance(op, ast.In | ast.NotIn) and self.qualified(right) in ("sys.modules", "sys.argv"):
                key = fold(node.left)
                if key is not None and key.split(".")[0] in _RUNNERS:
                    return [("detect", f"`{key!r} in {self.qualified(right)}`")]
        return []

    def qualified(self, node: ast.AST) -> str | None:
        """Return the dotted name ``node`` stands for, through imports; None when it is not one."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return node.id if node.id in _BUILTINS and node.id not in self.shadowed else None
        if isinstance(node, ast.Attribute):
            inner = self.qualified(node.value)
            return None if inner is None else f"{inner}.{node.attr}"
        if isinstance(node, ast.Call) and node.args:
            # `__import__("sys")._getframe` and `importlib.import_module("inspect").stack`
            if self.qualified(node.func) in _IMPORTERS:
                return None if _computed(node.args[0]) else fold(node.args[0])
            if self.qualified(node.func) == "getattr" and len(node.args) >= 2:
                owner, attribute = self.qualified(node.args[0]), fold(node.args[1])
                return f"{owner}.{attribute}" if owner and attribute else None
        return None


# Stands for a computed part of a folded string (no literal can hold it: source cannot contain NUL).
HOLE = "\x00"


def fold(node: ast.AST) -> str | None:
    """Return the string ``node`` builds from literals, `HOLE` standing for each part it computes."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else HOLE for v in node.values)
    if isinstance(node, ast.Call) and node.args and _joins_paths(node.func):
        # `Path("/") / "suite"`, `os.path.join("/", "suite")`: judged as the path they make.
        parts = [fold(a) for a in node.args]
        return "/".join(p if p is not None else HOLE for p in parts) if parts[0] is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Div | ast.Mod):
        left = fold(node.left)
        if left is None:
            return None
        right = fold(node.right)
        if isinstance(node.op, ast.Mod):
            return left
        glue = "/" if isinstance(node.op, ast.Div) else ""
        return left + glue + (right if right is not None else HOLE)
    return None


def _computed(node: ast.AST) -> bool:
    text = fold(node)
    return text is None or HOLE in text


def _joins_paths(func: ast.expr) -> bool:
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name in ("Path", "PurePath", "PurePosixPath", "join")


def _folded_part(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    # Only the outermost string expression is judged: `"/su" + "ite"` once, not "/su" again.
    parent = parents.get(node)
    return isinstance(parent, ast.BinOp | ast.JoinedStr | ast.Call) and fold(parent) is not None


def _string(folded: str) -> list[tuple[str, str]]:
    text = folded.replace(HOLE, "{}")
    path = re.sub("/+", "/", text)
    for prefix in _GRADER_PATHS:
        if path == prefix or path.startswith(prefix + "/"):
            return [("path", f"`{prefix}` path")]
    if _TMP_REPORT.search(path):
        return [("path", f"report-like file `{path[:60]}`")]
    if _ENV_NAME.match(folded):
        prefix = folded.split("_", 1)[0] + "_"
        return [("env", f"`{prefix}*` environment variable `{text[:60]}`")]
    return []


def _module_table(chain: ast.AST, rest: list[str], parents: dict[ast.AST, ast.AST]) -> str | None:
    """Say how code uses ``sys.modules``, when it is a way to reach another module's globals.

    Looking up a module by a computed name (``sys.modules[__name__]``,
    ``sys.modules[cls.__module__]``) and membership tests are everyday
    library code; walking every module, changing the table, and asking for
    ``__main__``, a test module or the test runner by name are not.
    """
    parent = parents.get(chain)
    if rest:
        method = rest[0]
        if method in ("values", "items", "keys", "copy"):
            return "`sys.modules` walked"
        if method in ("pop", "setdefault", "update", "clear", "__setitem__", "__delitem__"):
            return "`sys.modules` changed"
        key = parent.args[0] if isinstance(parent, ast.Call) and parent.args else None
        if method == "get" and key is not None and _suspect_module(key):
            return f"`sys.modules.get({fold(key)!r})`"
        return None
    if isinstance(parent, ast.Subscript) and parent.value is chain:
        if isinstance(parent.ctx, ast.Store | ast.Del):
            return "`sys.modules` changed"
        return f"`sys.modules[{fold(parent.slice)!r}]`" if _suspect_module(parent.slice) else None
    if isinstance(parent, ast.Compare) and all(isinstance(op, ast.In | ast.NotIn) for op in parent.ops):
        return None  # `"numpy" in sys.modules`; a test runner's name is a detection (`_detection`)
    if isinstance(parent, ast.Attribute):
        return None
    # Iterated, copied, passed on or bound to a name: the whole table is in hand.
    return "`sys.modules` walked"


_WALKS = frozenset({"values", "items", "keys", "copy", "__iter__", "__repr__", "__str__"})
_READS_ALL = frozenset(
    {"dict", "list", "tuple", "set", "sorted", "str", "repr", "iter", "vars", "dumps", "pformat"}
)


def _environment_walk(
    name: str, chain: ast.AST, rest: list[str], parents: dict[ast.AST, ast.AST]
) -> str | None:
    """Say when code reads every variable of the environment rather than one it names.

    The test runner keeps its own variables there (pytest names the running
    test and its parameters in one): reading them all finds it without
    naming it. One variable by name, or the environment handed to a child
    process (``env=os.environ``), is everyday code.
    """
    parent = parents.get(chain)
    if rest:
        return f"`{name}` walked" if rest[0] in _WALKS else None
    if isinstance(parent, ast.For | ast.comprehension) and parent.iter is chain:
        return f"`{name}` walked"
    if isinstance(parent, ast.Starred | ast.keyword) and getattr(parent, "arg", None) is None:
        return f"`{name}` walked"  # `*os.environ`, `**os.environ`
    if isinstance(parent, ast.Call) and chain in parent.args:
        func = parent.func
        called = (
            func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        )
        return f"`{name}` walked" if called in _READS_ALL else None
    return None


def _suspect_module(key: ast.AST) -> bool:
    name = fold(key)
    if name is None or HOLE in name:
        return False
    return name == "__main__" or name.split(".")[0] in _RUNNERS or "conftest" in name or "test" in name


def _through_import(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _bound_names(tree: ast.Module) -> set[str]:
    # A module that binds `eval` or `compile` anywhere (a parameter, a method, a variable) means its own.
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names
