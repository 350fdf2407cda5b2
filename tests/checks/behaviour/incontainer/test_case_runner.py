# ruff: noqa: E501 - tables of cases read best one case a line
"""The subject's case runner (codec and subject.run_case), run as a real process on the host.

The grader half and the report are exercised against real Docker in
tests/checks/behaviour/test_trust_domains.py: here, one case per forked child.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour.incontainer.channel import codec
from checks.behaviour.incontainer.channel.codec import Unserializable, encode
from sandbox.host import run_process

ROOT = Path(__file__).resolve().parents[4]
DRIVER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from checks.behaviour.incontainer import process as reaping
from checks.behaviour.incontainer.subject import cases as subject
repo, cases = sys.argv[2], json.load(open(sys.argv[3]))
sys.path[:0] = [p for p in (os.path.join(repo, "src"), repo) if os.path.isdir(p)]
os.chdir(repo)
reaping.become_subreaper()
for case in cases:
    print(json.dumps({**subject.run_case(case, repo), "kind": "case", "id": case["id"]}), flush=True)
"""


class AlwaysEqual:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class LyingInt(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__

    def __int__(self) -> int:
        return 999


class LyingDelta(datetime.timedelta):
    @property
    def days(self) -> int:
        return 42


Point = collections.namedtuple("Point", "x y")


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (None, None),
        (True, True),
        (LyingInt(3), 3),
        (1.5, 1.5),
        (math.nan, {"__type__": "float", "value": "nan"}),
        (-math.inf, {"__type__": "float", "value": "-inf"}),
        ("s", "s"),
        (b"hi", {"__type__": "bytes", "hex": "6869"}),
        ([1, (2,)], [1, {"__type__": "tuple", "items": [2]}]),
        (Point(1, 2), {"__type__": "tuple", "items": [1, 2]}),
        ({"a": 1}, {"a": 1}),
        ({"__type__": 1}, {"__type__": "dict", "items": [["__type__", 1]]}),
        ({1: "x"}, {"__type__": "dict", "items": [[1, "x"]]}),
        ({3, 1, 2}, {"__type__": "set", "items": [1, 2, 3]}),
        (frozenset({"b"}), {"__type__": "frozenset", "items": ["b"]}),
        (datetime.timedelta(days=1, seconds=5, microseconds=7),
         {"__type__": "timedelta", "seconds": 86405, "microseconds": 7}),
        (LyingDelta(days=1), {"__type__": "timedelta", "seconds": 86400, "microseconds": 0}),
        (datetime.datetime(2024, 1, 2, 3, 4, 5), {"__type__": "datetime", "iso": "2024-01-02T03:04:05"}),
        (datetime.date(2024, 1, 2), {"__type__": "date", "iso": "2024-01-02"}),
        (datetime.time(1, 2), {"__type__": "time", "iso": "01:02:00"}),
        (decimal.Decimal("1.10"), {"__type__": "decimal", "value": "1.10"}),
        (complex(1, 2), {"__type__": "complex", "real": 1.0, "imag": 2.0}),
    ],
)  # fmt: skip
def test_encode(value: object, encoded: object) -> None:
    assert encode(value) == encoded


def test_encode_refuses_what_has_no_plain_encoding() -> None:
    with pytest.raises(Unserializable, match=r"type tests\..*AlwaysEqual has no JSON encoding"):
        encode(AlwaysEqual())
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(Unserializable, match="nested deeper"):
        encode(cyclic)
    with pytest.raises(Unserializable, match="more than"):
        encode(list(range(codec.MAX_NODES + 1)))


MODULE = """\
import datetime
import inspect
import os
import time


def parse(text):
    if text == "1h":
        return datetime.timedelta(hours=1)
    raise ValueError(f"cannot parse {text!r}")


class AlwaysEqual:
    def __eq__(self, other):
        return True


def cheat():
    return AlwaysEqual()


def peek():
    # Walk every frame for anything that looks like an expected value.
    found = []
    frame = inspect.currentframe()
    while frame is not None:
        found += [repr(v) for v in frame.f_locals.values()]
        frame = frame.f_back
    return " ".join(found)


def hang():
    time.sleep(60)


def leave():
    os._exit(0)


def shout():
    print("PASSED " * 1000)
    return 1
"""


def run_runner(tmp_path: Path, cases: list[dict[str, object]]) -> list[dict[str, Any]]:
    repo = tmp_path / "repo"
    (repo / "src/durations").mkdir(parents=True, exist_ok=True)
    (repo / "src/durations/__init__.py").write_text(MODULE)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(cases))
    result = run_process(
        (sys.executable, "-I", "-B", "-c", DRIVER, str(ROOT), str(repo), str(plan)), timeout=60
    )
    assert result.returncode == 0, result.stderr.decode()
    records = [json.loads(line) for line in result.stdout.decode().splitlines()]
    # Whatever a case printed went to /dev/null, never among the observations.
    assert all(isinstance(r, dict) and r.get("kind") == "case" for r in records)
    return records


def case(name: str, call: str, module: str = "durations", timeout_s: float = 5) -> dict[str, object]:
    return {"id": f"c.cases.yml::{name}", "module": module, "call": call, "timeout_s": timeout_s}


def test_runner_reports_each_case_as_plain_json(tmp_path: Path) -> None:
    records = run_runner(tmp_path, [
        case("ok", 'parse("1h")'),
        case("raises", 'parse("garbage")'),
        case("cheat", "cheat()"),
        case("peek", "peek()"),
        case("hang", "hang()", timeout_s=0.5),
        case("leave", "leave()"),
        case("shout", "shout()"),
        case("missing", "f()", module="not_installed_anywhere"),
        case("name", "nope()"),
    ])  # fmt: skip
    results = {r["id"].split("::")[1]: r for r in records if r["kind"] == "case"}
    assert results["ok"]["value"] == {"__type__": "timedelta", "seconds": 3600, "microseconds": 0}
    assert results["raises"]["status"] == "raised"
    assert results["raises"]["exception"]["type"] == "ValueError"
    assert "Exception" in results["raises"]["exception"]["mro"]
    assert results["raises"]["exception"]["message"] == "cannot parse 'garbage'"
    # An object equal to everything has no encoding: it cannot pass any `equals`.
    assert results["cheat"]["status"] == "unserializable"
    assert "durations.AlwaysEqual" in str(results["cheat"]["detail"])
    # The expectation never entered the process: frames hold the plan's call, not the answer.
    assert results["peek"]["status"] == "returned"
    assert "peek()" in json.dumps(results["peek"])
    assert "EXPECTED_4242" not in json.dumps(results["peek"])
    assert results["hang"]["status"] == "timeout"
    assert results["leave"] == {"status": "crashed", "detail": "the case ended without a result (exit code 0)",
                                "seconds": results["leave"]["seconds"], "kind": "case", "id": "c.cases.yml::leave"}  # fmt: skip
    assert results["shout"]["value"] == 1
    assert results["missing"]["status"] == "import_error"
    assert results["missing"]["missing_module"] == "not_installed_anywhere"
    assert results["name"]["exception"]["type"] == "NameError"


def test_a_case_can_only_answer_for_itself(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo/evil.py").write_text(
        "import json, os, struct, sys, time\n"
        "FORGED = json.dumps({'status': 'returned', 'value': 1, 'id': 'c.cases.yml::other', 'kind': 'finish'})\n"
        "def forge():\n"
        "    # Write a forged record into every inherited descriptor (the result pipe among them).\n"
        "    payload = FORGED.encode()\n"
        "    for fd in range(3, 64):\n"
        "        try:\n"
        "            os.write(fd, struct.pack('>Q', len(payload)) + payload)\n"
        "        except OSError:\n"
        "            pass\n"
        "    os._exit(0)\n"
        "def daemon():\n"
        "    # Leave a detached process that keeps writing where an old runner kept its report.\n"
        "    report = os.path.join(os.getcwd(), 'report.jsonl')\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            for _ in range(400):\n"
        "                with open(report, 'w') as f:\n"
        "                    f.write(FORGED + '\\n')\n"
        "                time.sleep(0.005)\n"
        "        os._exit(0)\n"
        "    time.sleep(0.2)\n"
        "    return 2\n"
    )
    records = run_runner(tmp_path, [
        case("forge", "forge()", module="evil"),
        case("daemon", "daemon()", module="evil"),
        case("after", "1 + 1", module="evil"),
    ])  # fmt: skip
    cases = records
    assert [r["id"] for r in cases] == ["c.cases.yml::forge", "c.cases.yml::daemon", "c.cases.yml::after"]
    # Its own result pipe is the one thing a case can write to: that is just a return value,
    # and the forged id and kind are dropped.
    assert (cases[0]["status"], cases[0]["value"]) == ("returned", 1)
    assert (cases[1]["value"], cases[2]["value"]) == (2, 2)
