"""bot.cli.stdout: inside the block, Python prints and raw writes to descriptor 1 land on stderr."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, subprocess, sys
from bot.cli.stdout import to_stderr
print("before")
with to_stderr():
    print("python print")
    sys.stdout.write("buffered, never flushed")
    os.write(1, b"raw fd write\\n")
    subprocess.run(["echo", "child process"], check=True)
print('{"report": true}')
"""


def test_only_what_is_written_after_the_block_reaches_stdout() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == 'before\n{"report": true}\n'
    for text in ("python print", "buffered, never flushed", "raw fd write", "child process"):
        assert text in done.stderr


def test_an_error_in_the_block_restores_stdout() -> None:
    script = (
        "from bot.cli.stdout import to_stderr\n"
        "try:\n"
        "    with to_stderr():\n"
        "        raise RuntimeError('inside')\n"
        "except RuntimeError:\n"
        "    pass\n"
        "print('after')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "after\n"
