"""Hostile programs against DockerSandbox's isolation: network, filesystem, user, secrets, socket."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox
from sandbox.spec import Limits, Mount, RunResult, RunSpec

pytestmark = pytest.mark.docker

LIMITS = Limits(timeout_s=60, memory_mb=512, tmpfs_mb=32)


def run_python(
    sandbox: DockerSandbox, image: str, program: str, *args: str, limits: Limits = LIMITS, **spec: object
) -> RunResult:
    return sandbox.run(
        RunSpec(image=image, argv=("python3", "-c", textwrap.dedent(program), *args), limits=limits, **spec)  # type: ignore[arg-type]
    )


def report(result: RunResult) -> dict[str, object]:
    assert result.exit_code == 0, result
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_network_is_none(sandbox: DockerSandbox, base_image: str) -> None:
    program = """
        import json, os, socket
        errors = {}
        for host, port in [("1.1.1.1", 53), ("172.17.0.1", 2375), ("pypi.org", 443)]:
            try:
                socket.create_connection((host, port), timeout=3).close()
                errors[host] = None
            except OSError as exc:
                errors[host] = type(exc).__name__
        print(json.dumps({"errors": errors, "interfaces": sorted(os.listdir("/sys/class/net"))}))
    """
    data = report(run_python(sandbox, base_image, program))
    assert data["interfaces"] == ["lo"]
    assert all(error is not None for error in data["errors"].values()), data  # type: ignore[attr-defined]


def test_root_is_read_only_and_tmpfs_fills_with_enospc(
    sandbox: DockerSandbox, base_image: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("a")
    program = """
        import errno, json, os
        out = {"root_ro": bool(os.statvfs("/").f_flag & os.ST_RDONLY), "writes": {}, "fills": {}}
        for path in ["/x", "/etc/x", "/usr/local/lib/x", "/var/tmp/x", "/run/patchgate-in/x"]:
            try:
                open(path, "w").close()
                out["writes"][path] = "written"
            except OSError as exc:
                out["writes"][path] = errno.errorcode[exc.errno]
        for directory in ["/work", "/tmp"]:
            written = 0
            try:
                with open(directory + "/fill", "wb") as f:
                    while written < 256 * 2**20:
                        f.write(b"x" * 2**20)
                        f.flush()
                        written += 2**20
                out["fills"][directory] = ["no error", written]
            except OSError as exc:
                out["fills"][directory] = [errno.errorcode[exc.errno], written]
            os.remove(directory + "/fill")
        print(json.dumps(out))
    """
    data = report(run_python(sandbox, base_image, program, copy_in=(Mount(tmp_path, "/work"),)))
    assert data["root_ro"] is True
    assert set(data["writes"].values()) <= {"EROFS", "EACCES"}, data  # type: ignore[attr-defined]
    for directory, (error, written) in data["fills"].items():  # type: ignore[attr-defined]
        assert error == "ENOSPC", directory
        assert written <= 32 * 2**20, directory


def test_runs_unprivileged(sandbox: DockerSandbox, base_image: str) -> None:
    program = """
        import json, os, subprocess
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        out = {k: status[k].strip() for k in ("Uid", "Gid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs")}
        try:
            os.setuid(0)
            out["setuid"] = "became root"
        except PermissionError:
            out["setuid"] = "denied"
        # A setuid-root binary must not raise privileges either (no-new-privileges).
        su = subprocess.run(["su", "-c", "id -u", "root"], capture_output=True, text=True, input="")
        out["su"] = [su.returncode, su.stdout.strip()]
        out["groups"] = os.getgroups()
        print(json.dumps(out))
    """
    data = report(run_python(sandbox, base_image, program))
    assert data["Uid"].split() == ["10001"] * 4  # type: ignore[attr-defined]
    assert data["Gid"].split() == ["10001"] * 4  # type: ignore[attr-defined]
    for caps in ("CapEff", "CapPrm", "CapBnd"):
        assert int(str(data[caps]), 16) == 0, caps
    assert data["NoNewPrivs"] == "1"
    assert data["setuid"] == "denied"
    assert data["su"] != [0, "0"]
    assert 0 not in data["groups"]  # type: ignore[operator]


SCAN = """
    import json, os, sys
    needle = (sys.argv[1] + sys.argv[2]).encode()
    found = []
    if needle in "\\0".join(f"{k}={v}" for k, v in os.environ.items()).encode():
        found.append("os.environ")
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for name in ("environ", "cmdline"):
                try:
                    data = open(f"/proc/{pid}/{name}", "rb").read()
                except OSError:
                    continue
                if needle in data and not (pid == str(os.getpid()) and name == "cmdline"):
                    found.append(f"/proc/{pid}/{name}")
    scanned = 0
    for root, dirs, files in os.walk("/"):
        if root == "/":
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
        for name in files:
            path = os.path.join(root, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > 64 * 2**20:
                    continue
                with open(path, "rb") as f:
                    if needle in f.read():
                        found.append(path)
                scanned += 1
            except OSError:
                pass
    print(json.dumps({"found": found, "scanned": scanned}))
"""


def test_host_environment_secret_is_unreachable(
    sandbox: DockerSandbox, base_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"pgsecret-{uuid.uuid4().hex}"
    monkeypatch.setenv("PATCHGATE_PLANTED_SECRET", secret)
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    halves = (secret[:10], secret[10:])

    data = report(run_python(sandbox, base_image, SCAN, *halves, limits=Limits(timeout_s=120)))
    assert data["found"] == []
    assert int(str(data["scanned"])) > 1000, "the scan did not look at the filesystem"

    # The same scan does find a value the run was given, so an empty result above means something.
    given = report(
        run_python(sandbox, base_image, SCAN, *halves, limits=Limits(timeout_s=120), env={"VISIBLE": secret})
    )
    assert "os.environ" in given["found"]  # type: ignore[operator]
    assert any(str(p).endswith("/environ") for p in given["found"])  # type: ignore[attr-defined]


def test_no_docker_socket_inside(sandbox: DockerSandbox, base_image: str) -> None:
    program = """
        import json, os, stat
        sockets = []
        for root, dirs, files in os.walk("/"):
            if root == "/":
                dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
            for name in files + dirs:
                path = os.path.join(root, name)
                try:
                    if stat.S_ISSOCK(os.lstat(path).st_mode) or name.endswith(".sock"):
                        sockets.append(path)
                except OSError:
                    pass
        print(json.dumps({"sockets": sockets, "env": sorted(os.environ)}))
    """
    data = report(run_python(sandbox, base_image, program))
    assert data["sockets"] == []
    assert data["env"] == ["HOME", "LANG", "PATH"]
