"""The grader of declarative cases: hands each call to the subject, writes what it observed.

Usage: ``python3 -P -s -B /patchgate/launch.py cases PLAN``

PLAN (a private file under /grader) holds the report path, the nonce, the
rendezvous directory and the cases (id, module, call, timeout). The subject
is given the module, the call and the timeout of one case at a time - never
an id, never an expectation (those stay on the host) - and answers with an
observation; this process writes the report, in a directory the subject
cannot enter. The host compares.
"""

from __future__ import annotations

import json
from typing import Any

from .. import process
from ..channel import rendezvous
from ..channel.peer import Peer, PeerGone
from . import lines

CONNECT_S = 120.0
_ANSWER_GRACE_S = 30.0


def _refuse(request: dict[str, Any]) -> dict[str, Any]:
    # The case runner never hands the subject anything to call back.
    return {"raise": {"text": "the grader serves no requests"}}


def main(argv: list[str]) -> int:
    """Run every case of the plan through the subject and write the report; 0 unless the harness broke."""
    with open(argv[0], encoding="utf-8") as f:
        plan = json.load(f)
    fd = rendezvous.open_report(plan["report"])

    def write(record: dict[str, Any]) -> None:
        process.write_all(fd, json.dumps(record, ensure_ascii=True, allow_nan=False).encode() + b"\n")

    write({"kind": "start", "runner": "cases", "nonce": plan["nonce"], "version": 2})
    server, _ = rendezvous.listen(plan["rendezvous"])
    try:
        peer = Peer(rendezvous.accept(server, CONNECT_S), _refuse)
    except rendezvous.NoSubject as exc:
        write({"kind": "subject_error", "detail": str(exc)})
        return 0
    executable: dict[str, list[int]] = plan.get("lines") or {}
    covered: dict[str, list[int]] = {}
    if executable:
        try:
            peer.request({"op": "lines", "files": sorted(executable)}, timeout=CONNECT_S)
        except PeerGone as exc:
            write({"kind": "subject_error", "detail": f"the code under test stopped answering: {exc}"})
            return 0
    for case in plan["cases"]:
        write({"kind": "begin", "id": case["id"]})
        request = {"op": "case", **{k: case[k] for k in ("module", "call", "timeout_s")}}
        try:
            answer = peer.request(request, timeout=float(case["timeout_s"]) + _ANSWER_GRACE_S)
        except PeerGone as exc:
            write({"kind": "subject_error", "detail": f"the code under test stopped answering: {exc}"})
            return 0
        observed = answer.get("ok")
        if not isinstance(observed, dict):
            observed = {"status": "crashed", "detail": "the subject answered without an observation"}
        lines.merge(covered, lines.counted(observed.pop("lines", None), executable))
        write({**observed, "kind": "case", "id": case["id"]})
    if executable:
        write(lines.record(covered))
    write({"kind": "finish"})
    return 0
