"""Process state that travels with each request, and what comes back besides the answer.

In one process, a test's ``monkeypatch.setenv``, ``chdir`` and
``random.seed`` reach the code under test, and that code's prints and
warnings reach the test's ``capsys`` and ``pytest.warns``. Across the two
trust domains they travel with the requests:

- grader -> subject (``Outbound``, ``apply``): the environment and working
  directory when they changed, and each ``random.seed``/``random.setstate``
  the test made since the last request - the test's own choices, never the
  generator's state otherwise (that would let the code under test predict
  the test's later draws) and never back (the code under test would choose
  the test's random inputs);
- subject -> grader (``Capture``, ``deliver``): what the request printed
  and the warnings it raised, re-issued here under the test's own filters.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

CAPTURE_CHARS = 1_000_000
MAX_WARNINGS = 100
_GETCWD = os.getcwd
_SEEDS: list[tuple[str, tuple[Any, ...]]] = []
_SEED_LOCK = threading.Lock()
_SEEDABLE = (int, float, str, bytes, bytearray, type(None))


def _recording(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        with _SEED_LOCK:
            _SEEDS.append((name, args))
        return result

    call._patchgate_records = True  # type: ignore[attr-defined]
    return call


def install_seed_hooks() -> None:
    """Record the test's random.seed and random.setstate calls (the module's shared generator)."""
    if not getattr(random.seed, "_patchgate_records", False):
        random.seed = _recording("seed", random.seed)
        random.setstate = _recording("setstate", random.setstate)


class Outbound:
    """The grader's side: what a request carries besides itself."""

    def __init__(self) -> None:
        self._env: dict[str, str] | None = None
        self._raw: dict[Any, Any] | None = None
        self._cwd: str | None = None

    def add(self, message: dict[str, Any], encode: Callable[[object], Any]) -> None:
        # Our own getcwd: a test that patches os.getcwd to see whether the change calls it sees only
        # the change's calls.
        cwd = _GETCWD()
        # Copying os.environ decodes every entry (most of a round trip's own cost); its bytes store
        # compared in C says whether anything changed since the last request.
        raw = getattr(os.environ, "_data", None)
        if type(raw) is not dict or raw != self._raw:
            env = dict(os.environ)
            if env != self._env:
                message["env"], self._env = env, env
            self._raw = dict(raw) if type(raw) is dict else None
        if cwd != self._cwd:
            message["cwd"], self._cwd = cwd, cwd
        with _SEED_LOCK:
            seeds, _SEEDS[:] = list(_SEEDS), []
        kept = [
            (n, args) for n, args in seeds if n == "setstate" or all(isinstance(a, _SEEDABLE) for a in args)
        ]
        if kept:
            message["random"] = encode([[name, list(args)] for name, args in kept])


def deliver(answer: dict[str, Any], decode: Callable[[Any], Any], registry: dict[Any, Any]) -> None:
    """The grader's side: the request's prints to our streams, its warnings through our filters."""
    for stream, key in ((sys.stdout, "out"), (sys.stderr, "err")):
        text = answer.get(key)
        if isinstance(text, str) and text:
            stream.write(text)
    found = answer.get("warnings")
    for w in found[:MAX_WARNINGS] if isinstance(found, list) else []:
        if not isinstance(w, dict):
            continue
        try:
            category = decode(w.get("category"))
        except ValueError:
            continue
        if not (isinstance(category, type) and issubclass(category, Warning)):
            continue
        lineno = w.get("lineno")
        warnings.warn_explicit(str(w.get("message")), category, str(w.get("filename")),
                               lineno if isinstance(lineno, int) else 0, registry=registry)  # fmt: skip
