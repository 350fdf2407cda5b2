"""What pytest calls off a test module or class is never the change's (pytest_runner._scrubbed)."""

from __future__ import annotations

import types
from typing import Any

import pytest

from checks.behaviour.incontainer.grader.pytest_runner import _no_generated_tests, _scrubbed
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, load

pytestmark = pytest.mark.slow
__all__ = ["load"]

LIB = """
def pytest_generate_tests(metafunc):
    raise AssertionError("the change's code ran as the runner's")

def __getattr__(name):
    if name == "generator":
        return pytest_generate_tests
    raise AttributeError(name)

class Base:
    def pytest_generate_tests(self, metafunc):
        raise AssertionError("the change's code ran as the runner's")

class Plain:
    pass
"""


def test_a_test_class_on_a_change_s_class_never_inherits_its_generator(load: Load) -> None:
    lib = load(LIB)

    class TestOnBase(lib.Base):  # type: ignore[misc,name-defined]
        pass

    class TestOwn(lib.Plain):  # type: ignore[misc,name-defined]
        def pytest_generate_tests(self, metafunc: Any) -> None:
            metafunc.seen = True

    class TestOnPlain(lib.Plain):  # type: ignore[misc,name-defined]
        pass

    assert _scrubbed(TestOnBase) is TestOnBase
    assert vars(TestOnBase)["pytest_generate_tests"] is _no_generated_tests
    _scrubbed(TestOwn)
    assert vars(TestOwn)["pytest_generate_tests"] is not _no_generated_tests  # the suite's own stays
    _scrubbed(TestOnPlain)  # the change's class may still answer the name through its subject
    assert vars(TestOnPlain)["pytest_generate_tests"] is _no_generated_tests


def test_a_test_module_never_keeps_the_change_s_generator_or_getattr(load: Load) -> None:
    lib = load(LIB)
    module = types.ModuleType("test_star")
    # What `from lib import *` leaves in a test module (with __all__ naming __getattr__).
    vars(module).update(pytest_generate_tests=lib.pytest_generate_tests, __getattr__=lib.__getattr__)

    def own(metafunc: Any) -> None:
        return None

    suite_module = types.ModuleType("test_own")
    vars(suite_module)["pytest_generate_tests"] = own
    _scrubbed(module)
    _scrubbed(suite_module)
    assert "pytest_generate_tests" not in vars(module) and "__getattr__" not in vars(module)
    assert vars(suite_module)["pytest_generate_tests"] is own
