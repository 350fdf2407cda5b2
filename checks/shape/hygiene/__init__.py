"""The agent-hygiene gate and its rules: the ways a PR makes its own checks pass without the work.

``gate.py`` is the gate (``HygieneGate``); the rules, each on what the change
introduces only: ``testrules.py`` (changed test files: tests deleted, checking
less or nothing), ``assertions.py`` (tautologies, expected values rewritten),
``suppressions.py`` (telling a linter, type checker or coverage tool to look
away), ``stubs.py`` (bodies that look written and compute nothing; ``bases.py``: which
classes are subclassed, whose empty methods are hooks),
``probing.py`` (code that looks for the test harness), ``pluginuse.py``
(pytest plugins loaded from code, hooks that rewrite outcomes). What they
share: ``examination.py`` (each changed file read and parsed once, and the
findings), ``testcode.py`` (what a module says about its tests),
``pysource.py`` and ``statements.py`` (reading and walking the source).
Rule ids: docs/hygiene.md.
"""
