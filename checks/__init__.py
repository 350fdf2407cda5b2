"""The gate itself: three layers, the decision and the renderings, independent of GitHub.

A map, read from the top down (.importlinter's ``checks-inside`` contract holds
this order: a module imports only what is below it):

- ``pipeline.py``: one gate run. Shape and behaviour side by side, then
  quality, then the decision; ``PipelineInputs`` puts each layer's inputs
  together.
- ``bestofk/``: best of k (``ranking.py`` orders competing patches by
  execution, then by a two-order judge; ``render.py`` is its table).
- ``render/``: check-run markdown, annotations, SARIF, workflow commands,
  the terminal view.
- The three layers, which never import each other:
  ``shape/`` (does it load, is it clean: ruff, mypy, bandit, semgrep, one
  module a tool, on what the PR introduces only; ``shape/hygiene/`` is the
  agent-hygiene gate, one module a rule; ``shape/incontainer/`` the probe
  that runs in the sandbox), ``behaviour/``
  (hidden and held-out suites in the sandbox; ``behaviour/incontainer/``
  is the code that runs inside the container) and ``quality/`` (the rubric
  judge with checked citations, and its calibration).
- ``testinfra/``: the test-infrastructure rules every layer asks:
  ``files.py`` (what a test file is), ``guarded.py`` (files a PR must not
  change to pass its own tests), ``config.py``, ``makefile.py``,
  ``plugins.py`` (the parts of shared configuration that decide how tests run).
- The core: ``decide.py`` (the conclusion, pure), ``refusal.py`` (a tree
  beyond bounds is the PR's failure), ``runner.py`` (the sandbox port and
  the contexts a layer is given), ``workspace.py`` (base and head trees),
  ``policy.py`` (``.github/patchgate.yml`` from the base sha), ``report.py``
  (the public output contract), ``hostfiles.py``, ``toolnames.py``.
- Data: ``rules/`` (semgrep rules), ``defaults/`` (tool configurations).

Docker is reached only through ``sandbox/`` (``runner.Runner``) and litellm
only through ``quality/judge.py``; docs/architecture.md has the rest.
"""
