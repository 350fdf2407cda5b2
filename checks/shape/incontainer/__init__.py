"""The shape layer's code that runs inside the sandbox: ``probe.py`` (stdlib only, run as a file)."""
