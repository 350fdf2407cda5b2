"""The in-process tier: the tests the isolation cannot carry, measured apart and labelled forgeable.

Isolated runs are the strong tier and the default. A test of an isolated
suite's pytest part that fails there for the bridge's sake, not the
change's, would otherwise count against every change. Which tests those
are is decided by trusted runs only:

1. *candidates*: the tests that pass neither on base nor in every head run,
   isolated (the change's word only decides whether a run is spent), and
   those base passed isolated in more than half their time budget that ran
   out of it on head (which tests may be is base's word:
   ``graderuns.slow_to_cross``);
2. base runs them **in-process** (base is trusted: no code of the change
   in it); those that pass there and not isolated on base are the tier;
3. head runs the same tests in-process, twice, in containers holding those
   candidates alone as base's run did (the other tests' definitions removed
   from their modules, modules with none of them left out), so a test that
   leans on another's state meets on head what it met on base: the change's
   code in that process can forge what it reports, so only the tier's own
   ids are read from those reports, and the suite's line says how many
   tests were measured so
   ("N tests measured in-process: the code under test could forge these").

Above ``behaviour.max_in_process_share`` of a suite a passing behaviour asks
a maintainer (``checks/decide.py``). In those runs the change's code can read
what the container holds - the tier's tests and the suite's helpers and
conftest - so no message of a tier test is ever shown, and what it learns
there can only reach the tier's own outcomes (the isolated runs are over).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from checks.behaviour.collection import Modules
from checks.behaviour.grade import TestOutcome, with_their_cases, worse
from checks.behaviour.outcomes import RunView, parse_log
from checks.behaviour.plan import RunPlan, Staging, Tree, plan_in_process
from checks.behaviour.pytestconfig import PytestOptions
from checks.behaviour.suites import Suite
from checks.behaviour.support import imported
from checks.behaviour.views import run_view
from sandbox.pyparse import parse_python
from sandbox.spec import RunResult

RunAll = Callable[[Sequence[RunPlan]], Mapping[RunPlan, RunResult]]
# Base's tier runs made again at most (two at a time), when tier tests were flaky on head.
MAX_BASE_AGAIN = 4


@dataclass(frozen=True)
class TierRuns:
    """The tier's tests and their trusted base run and head runs, in-process."""

    ids: frozenset[str]
    base: RunView
    heads: tuple[RunView, ...]
    # Base's tier runs again, when a tier test's head runs disagreed: flakiness is decided by base.
    again: tuple[RunView, ...] = ()

    def unstable_on_base(self) -> frozenset[str]:
        """The tier's tests whose trusted base runs disagree (none when base ran once)."""
        runs = (self.base, *self.again)
        return frozenset(i for i in self.ids if len({outcome(v, i).passed for v in runs}) > 1)


def outcome(view: RunView, test_id: str) -> TestOutcome:
    """``test_id``'s outcome in a tier run; a test function isolated collection could not parametrize
    (its parameters are objects of the change's) stands for the worst of its parametrized ids there."""
    if test_id in view.reported or "[" in test_id:
        return view.outcome(test_id)
    under = [view.outcomes[i] for i in view.outcomes if i.startswith(test_id + "[")]
    if not under:
        return view.outcome(test_id)
    found = under[0]
    for other in under[1:]:
        found = worse(found, other)
    return found


def candidates(
    pytest_ids: Collection[str],
    base_passed: Collection[str],
    head_passed: Collection[str],
    slow: Collection[str] = (),
) -> list[str]:
    """The pytest ids that passed neither on base nor in every head run, isolated, and the ``slow``
    ones (graderuns.slow_to_cross: base's word)."""
    return sorted((set(pytest_ids) - set(base_passed) - set(head_passed)) | (set(slow) & set(pytest_ids)))


def measure(
    staging: Staging,
    trees: Mapping[Tree, Path],
    ids: Sequence[str],
    run_all: RunAll,
    *,
    uncollectable: Collection[str] = (),
) -> TierRuns | None:
    """Decide the tier from base in-process, then run it on head twice; None when the tier is empty.

    The tier is what passes there, and the ``uncollectable`` ids whatever their outcome: isolation
    cannot run them at all, so one that fails on base (a new feature's test) is measured here too.
    """
    if not ids:
        return None
    suite = staging.suite
    # A folder of its own per suite: a hidden and a held-out suite may both have a tier.
    staged_base = stage_tier(suite, Path(tempfile.mkdtemp(prefix="tier-", dir=staging.work)) / "suite", ids)
    # Whole modules, which hold these tests alone now: a node id pytest cannot find would end the run.
    # Head's runs hold the same tests as base's, in the same modules: a test that leans on another's
    # state (a class attribute an earlier test set, the modules imported so far) meets what it met there.
    select = _modules(ids)

    def plan(label: str, tree: Tree) -> RunPlan:
        return plan_in_process(staging, f"{label} (in-process tier)", tree, trees[tree], staged=staged_base,
                               select=select)  # fmt: skip

    def view(plans: Sequence[RunPlan]) -> tuple[RunView, ...]:
        results = run_all(plans)
        return tuple(_view(p, results[p], suite, staging) for p in plans)

    [base_view] = view([plan("base", "base")])
    tier = sorted(i for i in ids if i in uncollectable or outcome(base_view, i).passed)
    if not tier:
        return None
    views = view([plan("head 1", "head"), plan("head 2", "head")])
    flaky = {i for i in tier if len({outcome(v, i).passed for v in views}) > 1}
    runs = TierRuns(frozenset(tier), base_view, views)
    while flaky and len(runs.again) < MAX_BASE_AGAIN:
        # A test flaky on head: base again (grade.py excuses a test only when base's own runs disagree
        # too; the change cannot turn a failure into that). Two at once, as head's two ran: a test that
        # flakes under load (click's pager test, one case in tens) meets the load head's runs met. No
        # more once base has shown every one of them unstable.
        n = len(runs.again) + 2
        again = view([plan(f"base {n}", "base"), plan(f"base {n + 1}", "base")])
        runs = dataclasses.replace(runs, again=(*runs.again, *again))
        if flaky <= with_their_cases(runs.unstable_on_base(), tier):
            break
    return runs


def _modules(ids: Collection[str]) -> list[str]:
    return sorted({i.partition("::")[0] for i in ids})


def _view(plan: RunPlan, result: RunResult, suite: Suite, staging: Staging) -> RunView:
    run_log = parse_log(result.files.get(plan.report), plan.nonce, "pytest")
    return run_view(plan, result, run_log, suite, staging.policy)


def stage_tier(suite: Suite, dest: Path, keep: Collection[str]) -> Path:
    """Copy the suite to ``dest`` with the tests ``keep`` (node ids) its only tests, readable by every uid."""
    shutil.copytree(suite.root, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc"))
    by_module: dict[str, set[str]] = {}
    for test_id in keep:
        module, _, rest = test_id.partition("::")
        by_module.setdefault(module, set()).add(rest.split("[", 1)[0])
    sources = [p.relative_to(suite.root).as_posix() for p in sorted(suite.root.rglob("*.py"))]
    trees = {
        rel: parse_python((suite.root / rel).read_bytes()) for rel in sources if "__pycache__" not in rel
    }
    modules = Modules(trees, suite.support)
    needed = _inherited(modules, by_module)
    staged: dict[str, ast.Module] = {}
    for rel in suite.pytest_files:
        if rel in by_module:
            staged[rel] = _strip(copy.deepcopy(trees[rel]), by_module[rel], modules, rel, suite.options,
                                 needed=needed, kept_modules=by_module)  # fmt: skip
    # A test module the tier's modules import (a base class of theirs) stays, stripped of its tests: what
    # their staged code imports, not an import in a test of theirs the tier dropped.
    imported = _imported(modules, by_module, staged)
    # A module kept only to be imported keeps the test classes the staged code names (an import, a base
    # class), to a fixed point: not the others, whose names are test ids (a held-out suite's too).
    only_imported = [rel for rel in suite.pytest_files if rel in imported and rel not in by_module]
    # The methods the tier's own tests call as attributes (``self.idna.test_decode``): from their code
    # alone, never from a body kept this way.
    own = [staged[rel] for rel in by_module if rel in staged]
    called = {n.attr for tree in own for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    named: set[str] | None = None
    while True:
        now = {n for tree in staged.values() for n in _identifiers(tree)}
        if now == named:
            break
        named = now
        for rel in only_imported:
            staged[rel] = _strip(copy.deepcopy(trees[rel]), set(), modules, rel, suite.options, needed=needed,
                                 kept_modules=by_module, named=named, called=called)  # fmt: skip
    for rel in suite.pytest_files:
        if rel in staged:
            (dest / rel).write_text(ast.unparse(staged[rel]) + "\n", encoding="utf-8")
        else:
            (dest / rel).unlink()
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _imported(
    modules: Modules, by_module: Mapping[str, set[str]], staged: Mapping[str, ast.Module]
) -> set[str]:
    """The suite's modules the tier's modules import (``staged``: theirs as staged), directly or through
    each other."""
    by_name = {name: rel for rel, name in modules.names.items()}
    found: set[str] = set()
    todo = list(by_module)
    while todo:
        rel = todo.pop()
        name = modules.names[rel]
        package = name if rel.endswith("__init__.py") else name.rpartition(".")[0]
        for dotted in imported(staged.get(rel, modules.trees[rel]), package):
            other = by_name.get(dotted)
            if other is not None and other not in found and other not in by_module:
                found.add(other)
                todo.append(other)
    return found


def _inherited(modules: Modules, by_module: Mapping[str, set[str]]) -> dict[tuple[str, str], set[str]]:
    """The test methods each class must keep for the tier's tests of the classes deriving from it."""
    needed: dict[tuple[str, str], set[str]] = {}
    for rel, kept in by_module.items():
        for test in kept:
            cls_name, _, method = test.partition("::")
            cls = modules.classes.get((modules.names[rel], cls_name))
            if cls is None or not method:
                continue
            for klass in modules.ancestry(cls):
                needed.setdefault((klass.module, klass.node.name), set()).add(method.split("::")[0])
    return needed


def _strip(
    tree: ast.Module, keep: set[str], modules: Modules, rel: str, options: PytestOptions, *,
    needed: Mapping[tuple[str, str], set[str]], kept_modules: Collection[str],
    named: Collection[str] = (), called: Collection[str] = (),
) -> ast.Module:  # fmt: skip
    """Drop every test of the module but ``keep`` (``test_a``, ``TestX::test_b``) and the methods the
    tier's classes inherit (``needed``); keep the rest. A test class with none left stays, empty of
    tests, when a class of the tier derives from it or (a module kept only to be imported) the staged
    code ``named`` it; there, a test method of such a class the tier's own tests ``call`` as an attribute
    stays too (idna's codec tests call ``test_idna.IDNATests().test_decode(...)`` as a helper). It is
    never run - the tier's run collects the tier's own modules alone - and only the tier's own code
    decides it, never a method kept this way (a held-out test's body names others)."""
    kept_top = {k.split("::", 1)[0] for k in keep}
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and options.function_name(node.name):
            if node.name in kept_top or _fixture(node):
                body.append(node)
            continue
        if isinstance(node, ast.ClassDef) and _test_class(node, modules, rel, options):
            methods = {k.split("::", 1)[1].split("::")[0] for k in keep if k.startswith(node.name + "::")}
            key = (modules.names[rel], node.name)
            methods |= needed.get(key, set())
            # Gone unless it holds a test of the tier, a class of the tier derives from it, or the module
            # is here only for another to import from and the staged code names it.
            if not methods and key not in needed and (rel in kept_modules or node.name not in named):
                continue
            if rel not in kept_modules:
                methods |= {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                            and n.name in called}  # fmt: skip
            node.body = [
                n for n in node.body
                if not (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
                        and n.name not in methods)
            ] or [ast.Pass()]  # fmt: skip
        body.append(node)
    tree.body = body
    return tree


def _identifiers(tree: ast.Module) -> Iterator[str]:
    """Every name ``tree`` reads or imports (a class it derives from, ``from m import X``, ``m.X``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.alias):
            yield node.name.rpartition(".")[2]


def _fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")) == "fixture":
            return True
    return False


def _test_class(node: ast.ClassDef, modules: Modules, rel: str, options: PytestOptions) -> bool:
    found = modules.classes.get((modules.names[rel], node.name))
    return options.class_name(node.name) or (found is not None and modules.is_testcase(found))
