"""Test infrastructure: what a PR must not change to pass its own tests, and how tests are found.

``files`` is the one "is this a test file" rule every layer asks; ``guarded`` lists the
files that decide how tests run (conftest, pytest and tox configuration, CI, the policy)
and compares them between base and head; ``config``, ``makefile`` and ``plugins`` read the
parts of shared configuration files (pyproject, setup.cfg, tox.ini, a Makefile's test
targets, pytest plugins loaded through configuration) that do.
"""
