"""A test's temporary folders and files are open to the code under test (another uid), as tmp_path is."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import os, stat, sys, tempfile
from checks.behaviour.incontainer.grader import tempfiles
tempfiles.install()
folder = tempfile.mkdtemp(dir=sys.argv[1])
fd, path = tempfile.mkstemp(dir=sys.argv[1])
os.close(fd)
named = tempfile.NamedTemporaryFile(dir=sys.argv[1], delete=False)
named.close()
with tempfile.TemporaryDirectory(dir=sys.argv[1]) as scoped:
    scoped_mode = os.stat(scoped).st_mode
unnamed = tempfile.TemporaryFile(dir=sys.argv[1])
print(oct(os.stat(folder).st_mode), oct(os.stat(path).st_mode), oct(os.stat(named.name).st_mode),
      oct(scoped_mode), oct(os.fstat(unnamed.fileno()).st_mode))
"""


def test_named_temporary_folders_and_files_are_shared_and_the_rest_is_not(tmp_path: Path) -> None:
    # In a process of its own: install() changes the tempfile module for good, as in the grader.
    root = Path(__file__).resolve().parents[5]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, check=True, cwd=root
    )
    folder, made, named, scoped, unnamed = (int(m, 8) for m in done.stdout.split())
    sticky_open = stat.S_ISVTX | 0o777
    assert stat.S_IMODE(folder) == sticky_open and stat.S_IMODE(scoped) == sticky_open
    # Readable, never writable by another uid: the code under test writes beside a test's files.
    assert stat.S_IMODE(made) == stat.S_IMODE(named) == 0o644
    # pytest's capture of the grader's own output (an unnamed TemporaryFile) stays its owner's alone.
    assert stat.S_IMODE(unnamed) & 0o077 == 0
