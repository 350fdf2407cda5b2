from __future__ import annotations

import sys
import time

import pytest

from sandbox.host import ProcessError, run_process


def test_captures_output_and_code() -> None:
    r = run_process(
        (sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    )
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out\n", b"err\n")


def test_missing_executable_is_a_return_code() -> None:
    r = run_process(("definitely-not-a-command-xyz",))
    assert r.returncode == 127
    assert b"definitely-not-a-command-xyz" in r.stderr


@pytest.mark.slow
def test_timeout_kills_the_whole_group() -> None:
    start = time.monotonic()
    script = "import subprocess, time; subprocess.Popen(['sleep', '600']); time.sleep(600)"
    r = run_process((sys.executable, "-c", script), timeout=1)
    assert r.timed_out
    # Had the grandchild survived holding the pipes, this would wait its 600 s: a bound no busy
    # machine comes near, far from the 1 s timeout.
    assert time.monotonic() - start < 120


def test_output_is_capped() -> None:
    r = run_process((sys.executable, "-c", "print('x' * 10_000_000)"), output_cap=1000)
    assert len(r.stdout) == 1000 and r.truncated


def test_check_raises_with_what_ran_and_what_it_printed() -> None:
    with pytest.raises(ProcessError) as info:
        run_process(
            (sys.executable, "-c", "import sys; print('boom'); sys.exit(2)"), check=True, what="probe"
        )
    text = str(info.value)
    assert "probe" in text and "return code 2" in text and "boom" in text
