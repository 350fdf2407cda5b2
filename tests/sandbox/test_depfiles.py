"""read_dependencies: what each kind of dependency file contributes, parsed, never executed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox.depfiles import MAX_REQUIREMENT, is_direct, read_dependencies


def write(tree: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tree / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tree


def texts(tree: Path) -> list[str]:
    return [r.text for r in read_dependencies(tree).requirements]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"main.py": "print(1)\n"}, []),
        (
            {
                "requirements.txt": (
                    "# comment\nrequests>=2  # inline\n-r requirements/base.txt\n-e .\n./local\n"
                    "--index-url https://evil.example/simple\nattrs==23.1 --hash=sha256:abc\n"
                    "numpy; python_version >= '3.9'\n"
                ),
                "requirements/base.txt": "click\n-r ../requirements.txt\n",
            },
            ["requests>=2", "click", "attrs==23.1", "numpy; python_version >= '3.9'", "click"],
        ),
        (
            {
                "pyproject.toml": (
                    '[project]\nname = "My_Pkg"\ndependencies = ["httpx>=0.27", "my-pkg[extra]"]\n'
                    "[project.optional-dependencies]\n"
                    'test = ["pytest>=8"]\nDev = ["ruff"]\ndocs = ["sphinx"]\n'
                    "[dependency-groups]\n"
                    'tests = ["hypothesis", {include-group = "lint"}]\nlint = ["flake8"]\n'
                )
            },
            ["httpx>=0.27", "pytest>=8", "ruff", "hypothesis"],
        ),
        (
            {
                "setup.cfg": (
                    "[metadata]\nname = pkg\n[options]\ninstall_requires =\n    six\n    pyyaml>=6\n"
                    "[options.extras_require]\ntesting =\n    pytest\nall =\n    numpy\n"
                )
            },
            ["six", "pyyaml>=6", "pytest"],
        ),
        (
            {
                "setup.py": (
                    "import os\nfrom setuptools import setup\nos.system('touch /tmp/pwned')\n"
                    "setup(name='pkg', install_requires=['six', 'pkg'], tests_require=['nose'],\n"
                    "      extras_require={'dev': ['black'], 'gui': ['pyqt5']},\n"
                    "      version=open('VERSION').read())\n"
                )
            },
            ["six", "nose", "black"],
        ),
        ({"setup.py": "from setuptools import setup\nsetup(install_requires=compute())\n"}, []),
        ({"pyproject.toml": "this is [ not toml"}, []),
    ],
)
def test_requirements_by_file_kind(tmp_path: Path, files: dict[str, str], expected: list[str]) -> None:
    assert texts(write(tmp_path, files)) == list(dict.fromkeys(expected))


def test_each_requirement_remembers_its_file(tmp_path: Path) -> None:
    write(tmp_path, {"requirements-dev.txt": "pytest\n", "pyproject.toml": '[project]\ndependencies=["x"]\n'})
    deps = read_dependencies(tmp_path)
    assert deps.files == ("requirements-dev.txt", "pyproject.toml")
    assert {(r.text, r.origin) for r in deps.requirements} == {
        ("pytest", "requirements-dev.txt"),
        ("x", "pyproject.toml"),
    }


def test_setup_py_is_never_executed(tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    source = f"open({str(flag)!r}, 'w').close()\nfrom setuptools import setup\nsetup()\n"
    write(tmp_path, {"setup.py": source})
    read_dependencies(tmp_path)
    assert not flag.exists()


def test_direct_references_are_kept_apart_and_never_reach_the_build(tmp_path: Path) -> None:
    lines = [
        "requests>=2",
        "evil @ https://h/e.whl",
        "-e ./vendor/lib",
        "./vendor/other",
        "git+https://h/r.git",
    ]
    deps = read_dependencies(write(tmp_path, {"requirements.txt": "\n".join(lines) + "\n"}))
    assert [r.text for r in deps.direct] == ["evil @ https://h/e.whl", "-e ./vendor/lib", "./vendor/other",
                                             "git+https://h/r.git"]  # fmt: skip
    # What the build installs is as before: local paths and editables dropped, PEP 508 URLs kept (base's).
    assert texts(tmp_path) == ["requests>=2", "evil @ https://h/e.whl", "git+https://h/r.git"]


@pytest.mark.parametrize("kind", ["file", "folder", "climb", "large"])
def test_a_file_out_of_the_tree_through_a_symlink_or_include_or_too_large_is_not_read(
    tmp_path: Path, kind: str
) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("sk-live-secret==1.0\n")
    write(tree, {"pyproject.toml": '[project]\nname = "x"\n'})
    if kind == "file":
        (tree / "requirements.txt").symlink_to(outside / "secret.txt")
    elif kind == "folder":
        (tree / "requirements").symlink_to(outside)
        (outside / "a.txt").write_text("sk-live-secret==1.0\n")
    elif kind == "climb":
        write(tree, {"requirements.txt": "-r ../outside/secret.txt\n-r sub/../../outside/secret.txt\n"})
    else:
        write(tree, {"requirements.txt": "big==1\n" + "#" * (2 * 1024 * 1024) + "\n"})
    deps = read_dependencies(tree)
    assert not any("secret" in r.text or r.text == "big==1" for r in (*deps.requirements, *deps.direct))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # tomllib recurses once per array: nested past the interpreter's depth (RecursionError).
        ("pyproject.toml", '[project]\nname = "x"\ndependencies = ' + "[" * 100_000 + "]" * 100_000 + "\n"),
        # CPython's parser overflows its stack on a long run of unary operators (MemoryError).
        (
            "setup.py",
            "from setuptools import setup\nx = " + "-" * 100_000 + "1\nsetup(install_requires=['a'])\n",
        ),
        ("setup.py", "setup(install_requires=['a'])\x00\n"),
    ],
)
def test_a_file_nested_past_the_readers_depth_asks_for_nothing_and_raises_nothing(
    tmp_path: Path, name: str, text: str
) -> None:
    # A head tree is the change's: a reader that raised here would turn the gate's run into an error
    # (neutral), a conclusion the change could provoke at will.
    (tmp_path / name).write_text(text)
    assert read_dependencies(tmp_path).requirements == ()


@pytest.mark.parametrize(
    "text",
    ["pgleak==1.0\n--no-binary :all:", "x\r-r /run/patchgate-build/pip.conf", "x\u2028--pre", "x\ny"],
)
def test_a_requirement_string_of_more_than_one_line_never_reaches_the_build_whole(
    tmp_path: Path, text: str
) -> None:
    # Written a line a requirement into the build's requirements file, its next line is a pip option.
    (tmp_path / "pyproject.toml").write_text(f"[project]\ndependencies = [{json.dumps(text)}]\n")
    deps = read_dependencies(tmp_path)
    assert is_direct(text)
    built = [r.text for r in deps.requirements if not is_direct(r.text)]  # what a head build installs
    assert all(len(t.splitlines()) == 1 and " -" not in t for t in built)
    assert text not in built


def test_a_pyproject_string_never_carries_pip_options_to_the_build(tmp_path: Path) -> None:
    # A requirements-file option after a requirement (what the build's file would hold) is no PEP 508.
    (tmp_path / "pyproject.toml").write_text(
        '[project]\ndependencies = ["pgx==1.0 --global-option=--evil", "pgy>=2 -C k=v"]\n'
    )
    (tmp_path / "setup.cfg").write_text(
        "[options]\ninstall_requires =\n    pgz==3 --install-option=--prefix=/x\n"
    )
    assert [r.text for r in read_dependencies(tmp_path).requirements] == ["pgx==1.0", "pgy>=2", "pgz==3"]


def test_a_requirement_line_of_spaces_reads_at_once(tmp_path: Path) -> None:
    # Hostile: splitting a requirement from its pip options backtracked quadratically over a run of
    # spaces - minutes for this line, about an hour for the 1 MB a requirements file may hold, before
    # any layer ran (the GIL held throughout).
    (tmp_path / "requirements.txt").write_text("humanize" + " " * 300_000 + "x\nattrs --hash=sha256:0\n")
    assert [r.text for r in read_dependencies(tmp_path).requirements] == [
        "humanize" + " " * 300_000 + "x",
        "attrs",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "@" * 60_000,  # ^[^;]*@\s*\S+: backtracked over a run of @ (25 minutes at 1 MB)
        "-i" + "=" * 60_000 + " a b",  # [\s=]+\S+ over a run of = (2 hours at 1 MB)
        "-r" + "=" * 60_000 + " a b",
        "-e" + "=" * 60_000 + " a b",
    ],
)
def test_a_requirements_line_no_pattern_backtracks_over_reads_at_once(tmp_path: Path, line: str) -> None:
    # Hostile: each of these took seconds at 32-64k characters and grew fourfold per doubling; read
    # in one pass now, and a line past MAX_REQUIREMENT is never parsed (kept apart as direct).
    (tmp_path / "requirements.txt").write_text(line + "\nattrs\n" + "x" * (MAX_REQUIREMENT + 1) + "\n")
    deps = read_dependencies(tmp_path)
    assert "attrs" in [r.text for r in deps.requirements]
    assert "x" * (MAX_REQUIREMENT + 1) in [r.text for r in deps.direct]


@pytest.mark.parametrize(
    ("requirement", "direct"),
    [
        ("name@https://example.org/x.whl", True),
        ("name @ https://example.org/x.whl", True),
        ("name@ https://example.org/x.whl", True),
        ("x@y;a:b", True),  # the @ before the marker, the word after it past the ;
        ("x;y@z:w", False),  # an @ only after the ;
        ("name@version", False),
        ("user@@host:", True),
    ],
)
def test_a_direct_reference_is_told_as_pep_508_writes_it(requirement: str, direct: bool) -> None:
    assert is_direct(requirement) is direct
