"""Scripts that run inside the sandbox, under the container's own python3.

They use the standard library (and pytest, for the plugin) only, and never
import anything from patchgate: the sandbox image does not have it.
"""
