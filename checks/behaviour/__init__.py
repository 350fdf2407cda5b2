"""The behaviour layer: does the change pass tests its author never saw?

``run_behaviour`` runs the repository's hidden and held-out suites (from the
server-side test store, see ``suites_for``) on base and head in the sandbox
and grades the change; see docs/behaviour.md.
"""

from checks.behaviour.layer import run_behaviour
from checks.behaviour.suites import suites_for

__all__ = ["run_behaviour", "suites_for"]
