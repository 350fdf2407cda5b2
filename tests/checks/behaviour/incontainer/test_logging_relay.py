"""The change's log records reach the test's ``caplog`` and ``assertLogs``, under the test's levels.

In one process a library's ``logging.getLogger(__name__).warning(...)``
lands in the test's ``caplog``; isolated it was printed on the subject's
stderr and no test could see it as a record. Found by reading the class of
the second holdout's findings (process-wide state of the standard library
between the two processes), not by a corpus test: none of the 21 projects
reads its logs.
"""

from __future__ import annotations

import logging
import unittest
from collections.abc import Iterator
from pathlib import Path

import pytest

from checks.behaviour.incontainer.grader import ambient
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, loading

pytestmark = pytest.mark.slow

LIB = """
import logging

log = logging.getLogger("lib.core")

class Loud:
    def __str__(self):
        return "a loud object"

def work(n):
    log.info("working on %d", n)
    log.warning("careful with %s", Loud())
    return n * 2

def fail():
    try:
        1 / 0
    except ZeroDivisionError:
        log.exception("it broke")
    return "handled"

def name_of(callback):
    log.warning("q=%s", callback.__qualname__)
    return callback.__qualname__

def _records():
    import sys
    for name, module in list(sys.modules.items()):
        if name.endswith("subject.ambient"):
            return module._CAPTURING[0].records

def dotted(n):
    logging.getLogger("x." * n + "y").error("deep")
    return "ok"

def forged_fields(items):
    items.append("changed")
    _records().append({"name": "lib.core", "levelno": 40, "msg": "odd", "lineno": "NaN", "created": "now"})
    return "returned"

def flood(n):
    for i in range(n):
        log.error("record %d", i)
    return n

def chatty(n):
    for i in range(n):
        log.debug("step %d", i)
    return n

def would_log(level):
    return log.isEnabledFor(level), logging.getLogger().getEffectiveLevel()

def after(callback):
    callback()
    log.debug("after the callback")
    return log.isEnabledFor(logging.DEBUG)
"""


@pytest.fixture
def lib(tmp_path: Path) -> Iterator[object]:
    with loading(tmp_path, suite_root=str(Path(__file__).parent)) as start:
        yield start(LIB)


def test_caplog_sees_the_change_s_records_as_the_test_s_levels_let_it(
    lib: Load, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        assert lib.work(3) == 6  # type: ignore[attr-defined]
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("lib.core", "WARNING", "careful with a loud object")
    ]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="lib"):
        lib.work(4)  # type: ignore[attr-defined]
    assert [r.getMessage() for r in caplog.records] == ["working on 4", "careful with a loud object"]
    record = caplog.records[0]
    assert record.args is None and record.exc_info is None  # text and numbers crossed, never an object
    assert record.pathname.endswith("lib.py") and record.funcName == "work"


def test_an_exception_logged_by_the_change_keeps_its_traceback_text(
    lib: Load, caplog: pytest.LogCaptureFixture
) -> None:
    assert lib.fail() == "handled"  # type: ignore[attr-defined]
    (record,) = caplog.records
    assert record.getMessage() == "it broke" and record.levelname == "ERROR"
    assert "ZeroDivisionError: division by zero" in caplog.text


def test_assert_logs_of_a_unittest_case_sees_them(lib: Load) -> None:
    case = unittest.TestCase()
    with case.assertLogs("lib", level="INFO") as seen:
        lib.work(5)  # type: ignore[attr-defined]
    assert seen.output == ["INFO:lib.core:working on 5", "WARNING:lib.core:careful with a loud object"]


def test_a_flood_of_records_is_cut_and_says_so(lib: Load, caplog: pytest.LogCaptureFixture) -> None:
    assert lib.flood(5000) == 5000  # type: ignore[attr-defined]
    relayed = [r for r in caplog.records if r.name == "lib.core"]
    assert len(relayed) == 1000
    (said,) = [r for r in caplog.records if r.name == "patchgate"]
    assert said.getMessage().startswith("4000 more records")


def test_a_suite_name_the_change_logs_stays_its_alias(lib: Load, caplog: pytest.LogCaptureFixture) -> None:
    # Red-team: relayed text had its aliases restored, so a test handing caplog.text back to the change
    # handed it the suite's real names (prints are relayed as the change wrote them, and so are logs).
    def callback() -> None:
        pass

    alias = lib.name_of(callback)  # type: ignore[attr-defined]
    assert "callback" in alias and "test_a_suite_name" not in caplog.text


def test_a_hostile_record_costs_the_grader_a_bounded_logger_and_nothing_else(
    lib: Load, caplog: pytest.LogCaptureFixture
) -> None:
    import logging as grader_logging

    before = len(grader_logging.Logger.manager.loggerDict)
    assert lib.dotted(6000) == "ok"  # type: ignore[attr-defined]  # a 12 kB name: a logger per prefix
    assert len(grader_logging.Logger.manager.loggerDict) - before <= 2
    assert [r.name for r in caplog.records] == ["patchgate.relayed"]
    items: list[str] = []
    assert lib.forged_fields(items) == "returned"  # type: ignore[attr-defined]
    assert items == ["changed"]  # the test's list kept in step, the odd fields left out
    assert caplog.records[-1].getMessage() == "odd"


def test_what_one_test_relays_is_bounded(lib: Load, caplog: pytest.LogCaptureFixture) -> None:
    # Red-team (second pass): 1,000 records a request, with no bound per test, kept the grader's memory
    # growing as long as the test ran.
    ambient.new_test()  # as the recorder does when a test begins
    for _ in range(25):
        lib.flood(1000)  # type: ignore[attr-defined]
    relayed = [r for r in caplog.records if r.name == "lib.core"]
    assert len(relayed) == 20_000
    assert any(r.name == "patchgate" and "dropped" in r.getMessage() for r in caplog.records)


def test_the_change_makes_only_the_records_a_test_logger_would_take(
    lib: Load, caplog: pytest.LogCaptureFixture
) -> None:
    # In one process a library's log.debug under pytest's default levels (the root at WARNING) is
    # dropped before a record is made, and isEnabledFor(DEBUG) is False; the subject's root stood at
    # its lowest level, so the change saw True and made every record of a hot loop, each relayed only
    # for the grader to drop it.
    ambient.new_test()  # as the recorder does when a test begins (an earlier test spent its budget)
    root = logging.getLogger()
    assert root.getEffectiveLevel() == logging.WARNING and not caplog.handler.level
    assert lib.would_log(logging.DEBUG) == (False, logging.WARNING)  # type: ignore[attr-defined]
    assert lib.would_log(logging.WARNING)[0] is True  # type: ignore[attr-defined]
    assert lib.chatty(500) == 500  # type: ignore[attr-defined]
    assert caplog.records == []
    with caplog.at_level(logging.DEBUG, logger="lib.core"):  # one logger's level: the floor follows it
        assert lib.would_log(logging.DEBUG)[0] is True  # type: ignore[attr-defined]
        lib.chatty(3)  # type: ignore[attr-defined]
    assert [r.getMessage() for r in caplog.records] == ["step 0", "step 1", "step 2"]
    caplog.clear()
    assert lib.would_log(logging.DEBUG)[0] is False  # type: ignore[attr-defined]  # put back, followed
    logging.disable(logging.CRITICAL)
    try:
        assert lib.would_log(logging.CRITICAL)[0] is False  # type: ignore[attr-defined]
    finally:
        logging.disable(logging.NOTSET)
    assert lib.would_log(logging.ERROR)[0] is True  # type: ignore[attr-defined]


def test_a_level_a_callback_sets_counts_before_the_change_logs_again(
    lib: Load, caplog: pytest.LogCaptureFixture
) -> None:
    # Red-team: the floor went with requests only, so a level set in a callback of the change's reached
    # the subject at the test's next call; the change's record in between was never made.
    ambient.new_test()
    try:
        assert lib.after(lambda: caplog.set_level(logging.DEBUG, logger="lib.core")) is True  # type: ignore[attr-defined]
        assert [r.getMessage() for r in caplog.records] == ["after the callback"]
    finally:
        logging.getLogger("lib.core").setLevel(logging.NOTSET)


def test_a_level_given_as_an_int_enum_counts(lib: Load, caplog: pytest.LogCaptureFixture) -> None:
    import enum

    class Level(enum.IntEnum):
        DEBUG = 10

    ambient.new_test()
    logger = logging.getLogger("lib.core")
    logger.setLevel(Level.DEBUG)  # setLevel takes any int; the floor kept exact ints only
    try:
        assert lib.would_log(logging.DEBUG)[0] is True  # type: ignore[attr-defined]
        lib.chatty(1)  # type: ignore[attr-defined]
        assert [r.getMessage() for r in caplog.records] == ["step 0"]
    finally:
        logger.setLevel(logging.NOTSET)


def test_a_level_set_while_the_floor_is_worked_out_is_not_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    # Red-team: the mark went into the root's cache after the levels were read, so a setLevel between
    # the two (another thread's) left the old floor marked as current until some level changed again.
    levels = ambient._LogLevels()
    assert levels.floor() == logging.WARNING
    logging.getLogger("raced").setLevel(logging.WARNING)  # a level change: the floor is read again
    manager = logging.Logger.manager
    real = dict(manager.loggerDict)

    raced: list[bool] = []
    before = logging.Logger("raced", logging.WARNING)  # what the floor read of it: its level then

    class Racing(dict):
        def values(self):
            read = [before if name == "raced" else lg for name, lg in real.items()]
            if not raced:
                raced.append(True)
                logging.getLogger("raced").setLevel(logging.DEBUG)  # ... and a level set just after
            return read

    monkeypatch.setattr(manager, "loggerDict", Racing(real))
    try:
        assert levels.floor() == logging.WARNING  # worked out from what it read
        assert raced
        monkeypatch.setattr(manager, "loggerDict", real)
        assert levels.floor() == logging.DEBUG
    finally:
        logging.getLogger("raced").setLevel(logging.NOTSET)
    assert levels.floor() == logging.WARNING
    assert logging.root.isEnabledFor(-1) is False  # the mark answers no question of the test's
