"""The grader of a pytest suite: the hidden tests run here, the change's code in the subject.

Usage: ``python3 -P -s -B /patchgate/launch.py pytest PLAN -- PYTEST-ARGS...``

PLAN (a private file under /grader) gives the report path, the nonce,
whether failure messages may be shown, the rendezvous directory, the
repository's and the suite's top-level module names and the import budget.
This process listens for the subject, decides who owns each name
(``names.py``: the subject's are imported as proxies, so no module of the
repository is ever imported here), and runs pytest
in-process with patchgate's recorder writing the report - under /grader,
where the subject cannot enter. Nothing the subject sends is executed:
values are decoded by ``codec``, exceptions rebuilt by ``proxy``.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import secrets
import stat
import sys
import time
import types
from collections.abc import Generator
from typing import Any

import pytest

from ..channel import rendezvous
from ..channel.peer import Peer
from . import ambient, lines, registries, tempfiles
from .bridge import Bridge
from .classes import RemoteClass
from .errors import SubjectGone, SubjectTimeout
from .handles import is_handle
from .members import own_dict
from .names import Importer, Owners, SuiteImports, Support, importable, runner_names
from .recorder import Recorder

DEFAULT_TEST_TIMEOUT_S = 60.0


class Deadlines:
    """Give each request to the subject the time its test (or the import budget) has left."""

    def __init__(self, bridge: Bridge, import_budget_s: float, default_timeout_s: float) -> None:
        self.bridge = bridge
        self.default_timeout_s = default_timeout_s
        bridge.deadline_at = time.monotonic() + import_budget_s

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.bridge.deadline_at = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        marker = item.get_closest_marker("timeout")
        timeout = self.default_timeout_s
        if marker is not None and marker.args and isinstance(marker.args[0], (int, float)):
            timeout = float(marker.args[0])
        self.bridge.deadline_at = time.monotonic() + timeout
        try:
            return (yield)
        finally:
            self.bridge.deadline_at = None
            self.bridge.kept.reset()  # a test's containers are followed while it runs, no longer

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        # The subject reads and writes a test's tmp_path too (a file a test hands the code under test).
        # Its name is opaque: pytest names it after the test and its parameters, which would reach the
        # code under test in every path the test hands over, in its working directory after a chdir,
        # and in a listing of the shared folder above it.
        factory = config._tmp_path_factory  # type: ignore[attr-defined]
        original = factory.mktemp

        def mktemp(basename: str, numbered: bool = True) -> Any:
            path = original(f"t{secrets.token_hex(6)}", numbered)
            for p in (path, *path.parents):
                if str(p) in ("/", "/tmp"):  # noqa: S108 - a path inside the container
                    break
                if p.stat().st_uid == os.getuid():
                    # Sticky: the subject cannot remove or rename the test's own files (and, where
                    # the host sets fs.protected_symlinks, its symlinks are not followed here).
                    p.chmod(p.stat().st_mode | stat.S_IRWXO | stat.S_IRWXG | stat.S_ISVTX)
            return path

        factory.mktemp = mktemp


class ChangeNotCollected:
    """Never collect the change's objects as tests: a test module's names include what it imports
    (``from lib import *``), and a function of the change's named ``test_*`` would run here with the
    fixtures its own signature names - the suite's data handed to the code under test."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: object) -> object:
        return [] if is_handle(obj) else None


def _of_the_change(value: object) -> bool:
    if is_handle(value) or isinstance(value, RemoteClass):
        return True
    # A proxy's own method taken off it (`from lib import *` with ``__all__`` naming ``__getattr__``
    # takes the proxy module's, which asks the subject for every name).
    return type(value) is types.MethodType and _of_the_change(value.__self__)


def no_hooks_of_the_change() -> None:
    """Never take the change's objects for pytest hooks: a conftest's names include what it imports
    (``from lib import *``), and pytest registers every routine there named ``pytest_*`` - the change's
    code would run as the runner's own, handed every test item (held-out ids) and every report."""
    parse = pytest.PytestPluginManager.parse_hookimpl_opts

    def parse_hookimpl_opts(self: pytest.PytestPluginManager, plugin: object, name: str) -> Any:
        if _of_the_change(plugin):  # a module or object of the change's registered as a plugin
            return None
        try:
            found = inspect.getattr_static(plugin, name)
        except AttributeError:
            found = None
        return None if _of_the_change(found) else parse(self, plugin, name)

    pytest.PytestPluginManager.parse_hookimpl_opts = parse_hookimpl_opts  # type: ignore[method-assign]


# What pytest reads off a test module or class and calls as the suite's own, outside its hooks and
# collection: ``pytest_generate_tests`` (handed the Metafunc: the config, every plugin, the recorder), and
# a module's ``__getattr__`` (which answers every name pytest looks for). Taken from the change - a star
# import, ``__all__ = ["__getattr__"]``, a test class deriving from one of the change's - they would run
# the change's code as the runner's.
_CALLED_OFF_A_MODULE = ("pytest_generate_tests", "__getattr__")


def _of_the_change_class(klass: type) -> bool:
    return isinstance(klass, RemoteClass) and bool(own_dict(klass).get("_pgc_made"))


def _no_generated_tests(self: object, metafunc: object) -> None:
    """The hook a test class inherits from the change's class instead of the change's own."""


def _scrubbed(found: object) -> object:
    """A test module or class as pytest gets it: nothing of the change's where pytest would call it."""
    if inspect.ismodule(found):
        namespace = vars(found)
        for name in _CALLED_OFF_A_MODULE:
            if name in namespace and _of_the_change(namespace[name]):
                del namespace[name]
    elif isinstance(found, type) and any(_of_the_change_class(k) for k in found.__mro__):
        owner = next((k for k in found.__mro__ if "pytest_generate_tests" in own_dict(k)), None)
        hook = own_dict(owner)["pytest_generate_tests"] if owner is not None else None
        if owner is None or _of_the_change_class(owner) or _of_the_change(hook):
            type.__setattr__(found, "pytest_generate_tests", _no_generated_tests)
    return found


def no_generators_of_the_change() -> None:
    """Scrub each test module and class as pytest imports it (``_scrubbed``), before it reads either."""
    for node in (pytest.Module, pytest.Class):
        original = node._getobj

        def _getobj(self: Any, original: Any = original) -> Any:
            return _scrubbed(original(self))

        node._getobj = _getobj  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    """Wait for the subject, then run pytest with the repository's modules as proxies."""
    plan_path, *rest = argv
    args = rest[1:] if rest[:1] == ["--"] else rest
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    fd = rendezvous.open_report(plan["report"])
    recorder = Recorder(fd, bool(plan["messages"]))
    recorder.write({"kind": "start", "runner": "pytest", "nonce": plan["nonce"], "version": 2})
    budget = float(plan["import_budget_s"])
    server, _ = rendezvous.listen(plan["rendezvous"])
    try:
        bridge = Bridge(
            Peer(rendezvous.accept(server, budget), lambda request: {}), suite_root=plan["suite_root"]
        )
    except rendezvous.NoSubject as exc:
        recorder.write({"kind": "subject_error", "detail": str(exc)})
        bridge = Bridge(None, broken=str(exc))
    peer = bridge.peer
    if peer is not None:
        recorder.exchanges = lambda: peer.sent
        recorder.on_begin = ambient.new_test
    executable: dict[str, list[int]] = plan.get("lines") or {}
    if executable and bridge.peer is not None:
        # Before the first import of the change's code: the subject starts tracing its files.
        with contextlib.suppress(SubjectGone, SubjectTimeout):
            bridge.request("lines", files=sorted(executable))
    # Before pytest puts the suite's folders on sys.path: what is importable now is the tools'.
    owners = Owners.of(plan["modules"], plan.get("suite_names") or (), importable(sys.path), runner_names())
    sys.meta_path.insert(0, Importer(bridge, owners))
    sys.meta_path.insert(0, Support(plan.get("support") or {}, owners))
    SuiteImports(bridge, owners.suite_only, plan["suite_root"]).install()
    tempfiles.install()
    if bridge.peer is not None:
        registries.install_codecs(bridge)
    deadlines = Deadlines(bridge, budget, float(plan.get("test_timeout_s", DEFAULT_TEST_TIMEOUT_S)))
    # The suite's own configuration (its python_classes, markers...) as overrides of ours, and what to
    # collect in place of the whole folder (its testpaths): from the private plan, never argv.
    paths = plan.get("pytest_paths") or []
    if paths and args and args[-1] == plan["suite_root"]:
        args = [*args[:-1], *paths]
    args = [*(a for o in plan.get("pytest_options") or [] for a in ("-o", o)), *args]
    no_hooks_of_the_change()
    no_generators_of_the_change()
    code = int(pytest.main(args, plugins=[recorder, deadlines, ChangeNotCollected()]))
    if executable:
        bridge.deadline_at = None
        try:
            executed = bridge.request("lines_report")
        except (SubjectGone, SubjectTimeout):
            executed = None
        recorder.write(lines.record(lines.counted(executed, executable)))
    if bridge.peer is not None and bridge.peer.broken:
        recorder.write({"kind": "subject_error", "detail": bridge.peer.broken[:300]})
    recorder.write({"kind": "exit", "code": code})
    sys.stdout.flush()
    sys.stderr.flush()
    return code
