"""patchgate's semgrep rules (checks/rules/*.yml): each matches what it should and nothing else.

Each case file carries semgrep's test annotations (``# ruleid: <id>`` above a
line that must match, ``# ok: <id>`` above one that must not), and
``semgrep --test`` runs them in the real sandbox image.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks.shape.config import RULES_DIR
from sandbox.docker import DockerSandbox
from sandbox.spec import Limits, Mount, RunSpec

CASES: dict[str, str] = {
    "optional-regex-guard": r"""
import re

DURATION = re.compile(r"(\d+h)?(\d+m)?(\d+s)?")


def parse(text):
    # ruleid: optional-regex-guard
    m = re.match(r"(\d+h)?(\d+m)?(\d+s)?", text)
    if not m:
        raise ValueError(text)
    return m


def parse_full(text):
    # ruleid: optional-regex-guard
    m = re.fullmatch(r"(?:(\d+)h)?\s*(?:(\d+)m)?", text)
    if m is None:
        raise ValueError(text)
    return m


def parse_walrus(text):
    # ruleid: optional-regex-guard
    if not (m := re.search(r"\d*", text)):
        raise ValueError(text)
    return m


def parse_compiled(text):
    # ruleid: optional-regex-guard
    m = DURATION.match(text)
    if not m:
        raise ValueError(text)
    return m


def parse_required(text):
    # ok: optional-regex-guard
    m = re.match(r"(\d+h)?(\d+m)?(\d+s)", text)
    if not m:
        raise ValueError(text)
    return m


def parse_plus(text):
    # ok: optional-regex-guard
    m = re.fullmatch(r"\d+", text)
    if not m:
        raise ValueError(text)
    return m


def parse_alternation(text):
    # ok: optional-regex-guard
    m = re.match(r"(a)?|b", text)
    if not m:
        raise ValueError(text)
    return m


def unguarded(text):
    # ok: optional-regex-guard
    m = re.match(r"(\d+h)?", text)
    return m.group(1)
""",
    "swallowed-exception": r"""
import contextlib


def load(path):
    # ruleid: swallowed-exception
    try:
        return open(path).read()
    except Exception:
        pass


def load_none(path):
    # ruleid: swallowed-exception
    try:
        return open(path).read()
    except Exception as exc:
        return None


def load_bare(path):
    # ruleid: swallowed-exception
    try:
        return open(path).read()
    except:
        pass


def load_tuple(path):
    # ruleid: swallowed-exception
    try:
        return open(path).read()
    except (OSError, Exception):
        return


def loop(paths):
    for p in paths:
        # ruleid: swallowed-exception
        try:
            open(p)
        except BaseException:
            continue


def suppressed(path):
    # ruleid: swallowed-exception
    with contextlib.suppress(Exception):
        open(path)


def specific(path):
    # ok: swallowed-exception
    try:
        return open(path).read()
    except FileNotFoundError:
        return None


def handled(path, log):
    # ok: swallowed-exception
    try:
        return open(path).read()
    except Exception as exc:
        log.warning("cannot read %s: %s", path, exc)
        return None


def reraised(path):
    # ok: swallowed-exception
    try:
        return open(path).read()
    except Exception:
        raise


def narrow_suppress(path):
    # ok: swallowed-exception
    with contextlib.suppress(FileNotFoundError):
        open(path)


def tuple_as(path):
    # ruleid: swallowed-exception
    try:
        return open(path).read()
    except (OSError, Exception) as exc:
        return None


def tuple_narrow(path):
    # ok: swallowed-exception
    try:
        return open(path).read()
    except (OSError, ValueError) as exc:
        return None
""",
    "shell-format": r"""
import os
import subprocess
from subprocess import run


def fstring(name):
    # ruleid: shell-format
    subprocess.run(f"ls {name}", shell=True, check=True)


def dotformat(name):
    # ruleid: shell-format
    return subprocess.check_output("grep {} log.txt".format(name), shell=True)


def percent(name):
    # ruleid: shell-format
    subprocess.call("rm -rf %s" % name, shell=True)


def concat(name):
    # ruleid: shell-format
    subprocess.Popen("cat " + name, shell=True)


def imported(name):
    # ruleid: shell-format
    run(f"echo {name}", shell=True)


def via_variable(name):
    cmd = f"tar xf {name}"
    # ruleid: shell-format
    subprocess.run(cmd, shell=True)


def system(name):
    # ruleid: shell-format
    os.system("ping -c1 " + name)


def argv_list(name):
    # ok: shell-format
    subprocess.run(["ls", name], check=True)


def constant_shell():
    # ok: shell-format
    subprocess.run("ls -l | wc -l", shell=True)


def formatted_no_shell(name):
    # ok: shell-format
    subprocess.run(f"ls {name}".split(), check=True)


def shell_false(name):
    # ok: shell-format
    subprocess.run(f"ls {name}", shell=False)
""",
    "sql-format": r"""
import sqlite3


def fstring(cur, name):
    # ruleid: sql-format
    cur.execute(f"SELECT * FROM users WHERE name = '{name}'")


def dotformat(conn, uid):
    # ruleid: sql-format
    conn.execute("DELETE FROM users WHERE id = {}".format(uid))


def percent(cur, name):
    # ruleid: sql-format
    cur.execute("select id from t where name = '%s'" % name)


def concat(cur, table):
    # ruleid: sql-format
    cur.executemany("INSERT INTO " + table + " VALUES (?)", [(1,)])


def via_variable(cur, name):
    query = f"UPDATE users SET seen = 1 WHERE name = '{name}'"
    # ruleid: sql-format
    cur.execute(query)


def parameters(cur, name):
    # ok: sql-format
    cur.execute("SELECT * FROM users WHERE name = ?", (name,))


def percent_placeholder(cur, name):
    # ok: sql-format
    cur.execute("SELECT * FROM users WHERE name = %s", (name,))


def constant(cur):
    # ok: sql-format
    cur.execute("SELECT count(*) FROM users")


def not_sql(executor, job):
    # ok: sql-format
    executor.execute(f"job {job}")
""",
}


def test_every_rule_has_cases_that_should_and_should_not_match() -> None:
    rules = {p.stem for p in RULES_DIR.glob("*.yml")}
    assert rules == set(CASES)
    for rule, text in CASES.items():
        assert f"# ruleid: {rule}" in text
        assert f"# ok: {rule}" in text


@pytest.mark.docker
def test_rules_match_their_cases(tmp_path: Path, shape_sandbox: DockerSandbox, shape_image: str) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    for rule, text in CASES.items():
        (cases / f"{rule}.py").write_text(text)
    for path in (tmp_path, cases, *cases.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    argv = ("semgrep", "--test", "--json", "--metrics=off", "--disable-version-check")
    spec = RunSpec(
        image=shape_image,
        argv=(*argv, "--config", "/rules", "/cases"),
        mounts=(Mount(RULES_DIR, "/rules"), Mount(cases, "/cases")),
        workdir="/tmp",
        env={"SEMGREP_ENABLE_VERSION_CHECK": "0"},
        limits=Limits(timeout_s=180, memory_mb=2048),
    )
    result = shape_sandbox.run(spec)
    assert result.exit_code == 0, result.stderr.decode()[-2000:]
    report = json.loads(result.stdout)
    assert report["config_missing_tests"] == []
    assert report["config_with_errors"] == []
    checks = {rule: check for file in report["results"].values() for rule, check in file["checks"].items()}
    assert set(checks) == set(CASES)
    for rule, check in checks.items():
        matches = next(iter(check["matches"].values()))
        expected, reported = matches["expected_lines"], matches["reported_lines"]
        assert check["passed"], f"{rule}: expected lines {expected}, got {reported}"
        assert matches["expected_lines"], rule
