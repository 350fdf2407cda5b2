"""A test's containers handed to the change: one object on each side, kept in step (channel/kept.py).

Each scenario runs on the module imported here (one process, the reference)
and through the bridge against a real subject process; what the test sees
must be the same. The hostile ones show what is never kept: the grader's own
state (``sys.path``) and a module's namespace.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

from tests.checks.behaviour.incontainer.grader.test_iteration import bridge_of
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, load

pytestmark = pytest.mark.slow
__all__ = ["load"]

LIB = """
def extend_into(items, *more):
    items.extend(more)

def sort_in_place(items):
    items.sort()

def fill(mapping, **pairs):
    mapping.update(pairs)
    mapping.pop("drop", None)

def add_to(members, *more):
    members.update(more)

def append_byte(buffer, byte):
    buffer.append(byte)

def same(value):
    return value

def pair(value):
    return [value, len(value)]

def total(items):
    return sum(items)

def cached(cache):
    # cachetools.cached's shape: the wrapper holds the test's dict and fills it on each call.
    def decorator(func):
        def wrapper(key):
            if key in cache:
                return cache[key]
            value = cache[key] = func(key)
            return value
        return wrapper
    return decorator

class Holder:
    def __init__(self, items):
        self.items = items

    def add(self, item):
        self.items.append(item)

    def seen(self):
        return list(self.items)

def fill_then_ask(items, ask):
    items.append("before")
    seen = ask()
    items.append("after")
    return seen

def append_to(items, item):
    items.append(item)

def rebind(namespace):
    namespace["helper"] = "rebound by the change"

class Store:
    # cachetools' Cache.update then copy.copy: the values the store holds are the test's own.
    def __init__(self):
        self.data = {}

    def update(self, pairs):
        self.data.update(pairs)

    def copy(self):
        made = Store()
        made.data = dict(self.data)
        return made

    def get(self, key):
        return self.data[key]

def append_inside(rows, item):
    rows[0].append(item)
"""


def bare(source: str = LIB) -> Any:
    """The library imported in this process: what one process does."""
    module = types.ModuleType("lib_bare")
    exec(compile(source, "lib_bare.py", "exec"), module.__dict__)  # noqa: S102 - the test's own source
    return module


def both(load: Load, scenario: Callable[[Any], Any], source: str = LIB) -> tuple[Any, Any]:
    """What ``scenario`` sees on the module here, and through the bridge."""
    return scenario(bare(source)), scenario(load(source))


def changed_in_the_call(lib: Any) -> Any:
    items, mapping, members, buffer, unsorted = [1], {"drop": 0}, {1}, bytearray(b"a"), [3, 1, 2]
    lib.extend_into(items, 2, 3)
    lib.fill(mapping, a=1, b=[2])
    lib.add_to(members, 2, 3)
    lib.append_byte(buffer, 98)
    lib.sort_in_place(unsorted)
    return [items, mapping, members, bytes(buffer), unsorted]


def test_what_the_change_does_to_a_test_s_containers_in_a_call_the_test_sees(load: Load) -> None:
    expected, found = both(load, changed_in_the_call)
    assert found == expected == [[1, 2, 3], {"a": 1, "b": [2]}, {1, 2, 3}, b"ab", [1, 2, 3]]


def held_by_the_change(lib: Any) -> Any:
    cache: dict[Any, Any] = {}
    calls: list[int] = []

    def square(n: int) -> int:
        calls.append(n)
        return n * n

    wrapper = lib.cached(cache)(square)
    seen = [wrapper(2), wrapper(2), len(cache), dict(cache)]
    cache.clear()  # the test empties it: the change's next call misses
    seen += [wrapper(2), calls, dict(cache)]
    items: list[Any] = []
    holder = lib.Holder(items)
    holder.add("x")
    items.append("y")  # the test's own change, seen by the change's next request
    seen += [holder.seen(), items]
    return seen


def test_a_container_the_change_holds_stays_the_test_s_across_requests(load: Load) -> None:
    expected, found = both(load, held_by_the_change)
    assert found == expected == [4, 4, 1, {2: 4}, 4, [2, 2], {2: 4}, ["x", "y"], ["x", "y"]]


def identities(lib: Any) -> Any:
    items = [1, 2]
    back = lib.same(items)
    inside = lib.pair(items)[0]
    return [back is items, inside is items, lib.same(items) is lib.same(items)]


def test_a_test_s_container_the_change_returns_is_the_test_s_own(load: Load) -> None:
    expected, found = both(load, identities)
    assert found == expected == [True, True, True]


def read_by_a_callback(lib: Any) -> Any:
    items: list[str] = []
    seen = lib.fill_then_ask(items, lambda: list(items))
    return [seen, items]


def test_a_test_s_callback_sees_what_the_change_wrote_before_calling_it(load: Load) -> None:
    expected, found = both(load, read_by_a_callback)
    assert found == expected == [["before"], ["before", "after"]]


def test_a_container_the_change_does_not_keep_is_let_go_after_the_call(load: Load) -> None:
    lib = load(LIB)
    bridge = bridge_of(lib)
    items = [1, 2, 3]
    assert lib.total(items) == 6
    assert len(bridge.kept) == 0  # the subject let go of its object and said so
    holder = lib.Holder(items)
    assert len(bridge.kept) == 1
    bridge.kept.reset()  # the test ends: followed no longer, on either side
    items.append(4)
    holder.add(5)
    assert items == [1, 2, 3, 4] and holder.seen() == [1, 2, 3, 5]


def held_inside(lib: Any) -> Any:
    store = lib.Store()
    first, second = [1], [2]
    store.update({1: first, 2: second})
    copied = store.copy()
    rows = ([0], [1])
    lib.append_inside(rows, "from the change")  # a list inside a tuple: the test's own too
    nested: dict[str, list[list[str]]] = {"a": [[]]}
    lib.append_inside(nested["a"], "deeper")
    return [
        store.get(1) is first, copied.get(1) is store.get(1), copied.get(2) is second,
        rows, nested,
    ]  # fmt: skip


def test_the_containers_a_test_s_container_holds_are_the_test_s_own_too(load: Load) -> None:
    expected, found = both(load, held_inside)
    assert found == expected == [True, True, True, ([0, "from the change"], [1]), {"a": [["deeper"]]}]


def test_the_grader_s_own_state_inside_a_test_s_container_is_never_written(load: Load) -> None:
    # Hostile: a test's list that holds sys.path is the test's, the list inside it the process's.
    lib = load(LIB)
    before = list(sys.path)
    rows = [sys.path]
    lib.append_inside(rows, "/tmp/written-by-the-change")
    assert sys.path == before and rows[0] is sys.path
    assert not any(bridge_of(lib).kept.holds(value) for value in (sys.path,))


def test_the_grader_s_own_state_is_never_written_by_the_change(load: Load) -> None:
    # Hostile: were sys.path kept, the change would add a folder it can write to the grader's imports.
    lib = load(LIB)
    before = list(sys.path)
    lib.append_to(sys.path, "/tmp/written-by-the-change")
    assert sys.path == before
    replaced = [*sys.path]
    original, sys.path = sys.path, replaced  # a test's own list as sys.path: still the process's
    try:
        lib.append_to(sys.path, "/tmp/written-by-the-change")
        assert sys.path == before
    finally:
        sys.path = original
    assert len(bridge_of(lib).kept) == 0


def test_a_module_s_namespace_is_never_written_by_the_change(load: Load) -> None:
    # Hostile: were a module's namespace kept, the change could rebind the names its callers use.
    lib = load(LIB)
    module = types.ModuleType("patchgate_kept_target")
    module.helper = "the module's own"  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        lib.rebind(vars(module))
        assert module.helper == "the module's own"
    finally:
        del sys.modules[module.__name__]
    namespace: dict[str, Any] = {}
    lib.rebind(namespace)  # a test's own dict: one process's answer
    assert namespace == {"helper": "rebound by the change"}


METHODS = """
def cachedmethod(cache_of):
    # cachetools.cachedmethod's shape: the cache is read off the test's object at each call.
    def decorator(method):
        def wrapper(self, key):
            cache = cache_of(self)
            if key not in cache:
                cache[key] = method(self, key)
            return cache[key]
        return wrapper
    return decorator

def note_on(obj, item):
    obj.seen.append(item)

def record_name(items, fn):
    items.append(fn.__qualname__)

def memo_on(obj, key):
    # cachetools' descriptor: its state kept in the instance's __dict__, found again at each call.
    memo = obj.__dict__.setdefault("memo", {})
    memo[key] = True
    return len(memo)
"""


def reached_through_a_test_object(lib: Any) -> Any:
    class Cached:
        def __init__(self) -> None:
            self.cache: dict[int, int] = {}
            self.seen: list[int] = []

        def compute(self, key: int) -> int:
            return key * 10

    get = lib.cachedmethod(lambda self: self.cache)(Cached.compute)
    obj = Cached()
    found = [get(obj, 1), get(obj, 1), dict(obj.cache)]
    lib.note_on(obj, 5)
    found += [lib.memo_on(obj, "a"), lib.memo_on(obj, "b"), obj.memo]  # type: ignore[attr-defined]
    return [*found, obj.seen]


def test_a_container_the_change_reaches_through_a_test_s_object_is_the_test_s(load: Load) -> None:
    expected = reached_through_a_test_object(bare(METHODS))
    lib = load(METHODS)
    # This file is the suite: its classes and functions are the test's (as a suite folder's are).
    bridge_of(lib).handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"
    found = reached_through_a_test_object(lib)
    assert found == expected == [10, 10, {1: 10}, 1, 2, {"a": True, "b": True}, [5]]


def test_a_container_that_took_a_replaced_module_value_s_place_is_a_test_s() -> None:
    # A module-level dict replaced and freed: a test's new dict may be given its address (its id).
    from checks.behaviour.incontainer.grader.kept import ProcessState

    module = types.ModuleType("patchgate_kept_state")
    module.table = {"a": 1}  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        state = ProcessState("/nowhere/")
        assert state.owns(module.table)
        module.table = {}  # type: ignore[attr-defined]
        fresh: list[dict[str, int]] = [
            {} for _ in range(50)
        ]  # one of these would take the freed dict's place
        assert not any(state.owns(d) for d in fresh)
    finally:
        del sys.modules[module.__name__]


SET = """
class Cache:
    def __init__(self):
        self.data = {}

    def bump(self):
        self.stats["hits"] += 1
"""


def set_on_the_change_s_object(lib: Any) -> Any:
    # cachetools' test_copy_attributes: a test's subclass sets self.stats = {...} on the library's object.
    class Counting(lib.Cache):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.stats = {"hits": 0}

    cache = Counting()
    stats = cache.stats
    cache.bump()
    plain = lib.Cache()
    seen: list[int] = []
    plain.stats = {"hits": 5}
    plain.stats["hits"] += 0
    plain.seen = seen
    return [cache.stats is stats, stats, plain.seen is seen]


def test_a_container_a_test_sets_on_the_change_s_object_is_the_test_s(load: Load) -> None:
    expected, found = both(load, set_on_the_change_s_object, SET)
    assert found == expected == [True, {"hits": 1}, True]


REACHING = """
import inspect

HELD = []

def configure(parser):
    parser.BOOLEAN_STATES["yes"] = False

def quiet(logger):
    logger.filters.append("written by the change")

def first_and_size(items, big):
    return [len(items), items[0], len(big)]

def stash_default(items, callback):
    HELD.append(items)
    items.append(inspect.signature(callback).parameters["secret"].default)

def peek():
    return [x[::-1] for x in HELD[0] if type(x) is str]
"""


def test_a_library_object_s_class_container_the_change_reaches_is_never_written(load: Load) -> None:
    # Hostile: BOOLEAN_STATES is every ConfigParser's in the grader; kept, one test's change would
    # rewrite how every later test's parser reads "yes".
    import configparser

    lib = load(REACHING)
    lib.configure(configparser.ConfigParser())
    parser = configparser.ConfigParser()
    parser.read_string("[s]\nx = yes\n")
    assert parser.getboolean("s", "x") is True


def test_a_library_object_s_own_container_the_change_reaches_is_never_written(load: Load) -> None:
    # Hostile: a logger is the grader's (one per name, for every test); only a suite object's own
    # attributes are the test's data.
    import logging

    lib = load(REACHING)
    logger = logging.getLogger("patchgate-kept-test")
    lib.quiet(logger)
    assert logger.filters == []


def test_a_container_in_a_call_that_goes_as_a_handle_still_reaches_the_change(load: Load) -> None:
    # The second argument is too large to cross by value, so the whole argument list goes as a handle:
    # the kept list tagged on the way must not be left as "the subject has it".
    lib = load(REACHING)
    assert lib.first_and_size([7], list(range(200_000))) == [1, 7, 200_000]


def test_a_sealed_default_the_change_puts_in_a_test_s_container_stays_sealed(load: Load) -> None:
    # Hostile: were it unsealed into the test's list, the next time the list crossed it would carry
    # the test's default value to the change.
    lib = load(REACHING)

    def callback(x: int, secret: str = "the test's sealed default") -> None:  # noqa: S107
        return None

    items: list[Any] = []
    lib.stash_default(items, callback)
    items.append(1)
    lib.first_and_size(items, [])  # the test's change to the list crosses now
    assert not any("the test's sealed default"[::-1] in text for text in lib.peek())


def test_state_rebound_while_tests_run_is_the_process_s() -> None:
    # warnings.catch_warnings, around every test, rebinds warnings.filters: no import in between.
    import warnings

    from checks.behaviour.incontainer.grader.kept import ProcessState

    state = ProcessState("/nowhere/")
    assert state.owns(warnings.filters)
    with warnings.catch_warnings():
        assert state.owns(warnings.filters)


def test_a_suite_name_the_change_writes_into_a_test_s_container_is_the_real_one(load: Load) -> None:
    # A test's function's qualified name reaches the change as an alias (a held-out test's name is
    # never shown); written back into the test's list, it is the real name again, as in an answer.
    lib = load(METHODS)
    bridge_of(lib).handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"

    def callback() -> None:
        return None

    items: list[str] = []
    lib.record_name(items, callback)
    assert items == [callback.__qualname__]
