"""A test's temporary files reach the code under test, as its tmp_path does.

The subject runs as another uid in the same container. ``tempfile.mkdtemp``
makes a folder only its owner may enter (0700) and ``mkstemp`` a file only
its owner may read (0600), so a folder or file a test makes with the
standard library and hands over by path (``iter_tree(tempfile.mkdtemp())``,
a ``NamedTemporaryFile`` the library reads) was out of the subject's reach.
The grader's are opened as tmp_path's are: a folder anyone may write into,
sticky (the subject cannot remove or rename the test's own files), and
files readable. The test's files stay the test's: the subject writes new
ones beside them, never over them (the grader's umask is left as it is).
"""

from __future__ import annotations

import os
import stat
import tempfile
from typing import Any

SHARED_DIR = stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO | stat.S_ISVTX
SHARED_FILE = stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH


def install() -> None:
    """Wrap the ``tempfile`` functions a test makes named folders and files with.

    Only those: ``TemporaryFile`` (pytest's own capture of the grader's output) is left alone.
    """
    mkdtemp, mkstemp, named = tempfile.mkdtemp, tempfile.mkstemp, tempfile.NamedTemporaryFile

    def shared_mkdtemp(*args: Any, **kwargs: Any) -> Any:
        path = mkdtemp(*args, **kwargs)
        os.chmod(path, SHARED_DIR)
        return path

    def shared_mkstemp(*args: Any, **kwargs: Any) -> Any:
        fd, path = mkstemp(*args, **kwargs)
        os.fchmod(fd, SHARED_FILE)
        return fd, path

    def shared_named(*args: Any, **kwargs: Any) -> Any:
        found = named(*args, **kwargs)
        os.fchmod(found.fileno(), SHARED_FILE)
        return found

    # TemporaryDirectory calls the module's mkdtemp by name: its folders are shared too.
    tempfile.mkdtemp = shared_mkdtemp
    tempfile.mkstemp = shared_mkstemp
    tempfile.NamedTemporaryFile = shared_named
