"""SARIF 2.1.0 for code scanning: the shape and hygiene findings the change introduced (pure, no I/O).

Format: https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html; what
GitHub reads of it: https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning
(``ruleId``, ``level``, ``message.text``, ``physicalLocation`` with a
repository-relative ``uri``; rule metadata in ``tool.driver.rules``; one
``category`` per analysis via ``automationDetails.id``). Pre-existing
findings are left out: code scanning shows what the change brings.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any
from urllib.parse import quote

from checks.report import Finding, Report, Severity

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# One analysis per category: code scanning replaces the previous upload of the same category.
DEFAULT_CATEGORY = "patchgate/shape"
SRCROOT = "%SRCROOT%"
# GitHub's security-severity (a CVSS-like 0.0-10.0 score: over 9 critical, 7 high, 4 medium,
# else low) of security rules, by the finding's severity.
SECURITY_TOOLS = frozenset({"bandit"})
_SECURITY_SEVERITY: dict[Severity, str] = {"error": "8.0", "warning": "5.0", "info": "2.0"}
FINGERPRINT = "patchgateFinding/v1"
INFORMATION_URI = "https://github.com/patchgate/patchgate"
_LEVEL: dict[Severity, str] = {"info": "note", "warning": "warning", "error": "error"}
_TOOL_HELP: dict[str, tuple[str, str | None]] = {
    "ruff": ("A ruff lint rule the change newly breaks.", "https://docs.astral.sh/ruff/rules/"),
    "mypy": ("A mypy type error the change introduces.", "https://mypy.readthedocs.io/en/stable/error_code_list.html"),
    "bandit": ("A bandit security finding the change introduces.", "https://bandit.readthedocs.io/en/latest/plugins/index.html"),
    "semgrep": ("A finding of patchgate's own semgrep rules (checks/rules/).", None),
    "loads": ("A changed module that does not compile or import in the sandbox.", None),
    "tree": ("The change's tree breaks a bound (depth, entries, bytes, name length).", None),
    "dependencies": ("A dependency the change adds or changes (a URL, VCS or path one is refused).", None),
}  # fmt: skip
# What each hygiene rule means (docs/hygiene.md has the precise definitions).
HYGIENE_HELP: dict[str, str] = {
    "test-deleted": "A test that exists at base is gone at head.",
    "assert-weakened": "A surviving test checks less than it did at base.",
    "assert-tautology": "A check that cannot fail (both sides the same, `or True`, a non-empty tuple).",
    "expected-changed": "A kept test's expected value changed: the test was bent to fit the code.",
    "helper-weakened": "A test helper lost its checks (an assert became `return None`).",
    "cases-removed": "A parametrized test lost cases.",
    "skip-added": "A new skip or xfail marker.",
    "suppression-added": "A new `# noqa`, `# type: ignore`, `# nosec`, `# nosemgrep` or `pragma: no cover`.",
    "stub-body": "A function the change added or changed whose body is a stub.",
    "constant-return": "A function the change added that only returns a constant.",
    "ci-edited": "The change edits CI configuration.",
    "policy-edited": "The change edits patchgate's policy (read from the base branch regardless).",
    "test-config-edited": "The change edits test configuration (conftest.py, pytest/tox/coverage settings).",
    "pytest-plugin-loaded": "The change starts or stops loading a pytest plugin.",
    "pytest-hook-added": "The change defines a pytest hook that can rewrite outcomes.",
    "grader-probing": "Non-test code that looks for the grader (frames, __main__, report files, tracers).",
    "startup-hook-edited": "The change edits code that runs at interpreter start-up (sitecustomize, *.pth).",
}


def _rule_id(finding: Finding) -> str:
    return f"{finding.tool}/{finding.rule}"


def _rule(finding: Finding) -> dict[str, Any]:
    if finding.tool == "hygiene":
        text = HYGIENE_HELP.get(finding.rule, "An agent-hygiene finding a maintainer must look at.")
        uri = None
    else:
        text, uri = _TOOL_HELP.get(finding.tool, (f"A {finding.tool} finding the change introduces.", None))
    rule: dict[str, Any] = {
        "id": _rule_id(finding),
        "name": finding.rule,
        "shortDescription": {"text": f"{finding.tool} {finding.rule}"},
        "fullDescription": {"text": text},
        "help": {"text": text, "markdown": text},
        "defaultConfiguration": {"level": _LEVEL[finding.shown_severity]},
        "properties": {"tags": [finding.tool, "maintainer" if finding.needs_maintainer else "blocking"]},
    }
    if finding.tool in SECURITY_TOOLS:
        rule["properties"]["tags"].append("security")
        rule["properties"]["security-severity"] = _SECURITY_SEVERITY[finding.shown_severity]
    if uri is not None:
        rule["helpUri"] = uri
    return rule


def _fingerprint(finding: Finding, occurrence: int) -> str:
    """A result's identity across runs: its rule, file and message, not its line (lines move)."""
    key = "\0".join((_rule_id(finding), finding.path, finding.message, str(occurrence)))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _result(finding: Finding, index: int, occurrence: int) -> dict[str, Any]:
    # A URI reference: a path with a space, `#` or `%` is percent-encoded (RFC 3986).
    location: dict[str, Any] = {
        "artifactLocation": {"uri": quote(finding.path, safe="/"), "uriBaseId": SRCROOT}
    }
    if finding.start_line >= 1:
        end = max(finding.end_line, finding.start_line)
        location["region"] = {"startLine": finding.start_line, "endLine": end}
    else:
        # Line 0 means the whole file (a deleted test file): code scanning still wants a line.
        location["region"] = {"startLine": 1}
    return {
        "ruleId": _rule_id(finding),
        "ruleIndex": index,
        "level": _LEVEL[finding.shown_severity],
        "message": {"text": finding.message or f"{finding.tool} {finding.rule}"},
        "locations": [{"physicalLocation": location}],
        "partialFingerprints": {FINGERPRINT: _fingerprint(finding, occurrence)},
    }


def installed_version() -> str:
    """patchgate's version as installed (the SARIF driver's version), "0" from a bare checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("patchgate")
    except PackageNotFoundError:
        return "0"


def render_sarif(report: Report, *, version: str = "0", category: str = DEFAULT_CATEGORY) -> dict[str, Any]:
    """Return the SARIF log of the findings the change introduced, one run, rules deduplicated.

    ``category`` becomes ``automationDetails.id`` (``<category>/``): the analysis code
    scanning keeps apart from other tools' and replaces at the next upload of the same one.
    """
    category = category.strip().strip("/") or DEFAULT_CATEGORY
    findings = sorted(
        (f for f in report.shape.findings if f.introduced and f.path),
        key=lambda f: (f.path, f.start_line, f.tool, f.rule),
    )
    rules: dict[str, dict[str, Any]] = {}
    for finding in findings:
        rules.setdefault(_rule_id(finding), _rule(finding))
    order = {rule_id: i for i, rule_id in enumerate(rules)}
    driver = {
        "name": "patchgate",
        "informationUri": INFORMATION_URI,
        "version": version,
        "rules": list(rules.values()),
    }
    seen: Counter[tuple[str, str, str]] = Counter()
    results = []
    for f in findings:
        seen[(_rule_id(f), f.path, f.message)] += 1
        results.append(_result(f, order[_rule_id(f)], seen[(_rule_id(f), f.path, f.message)]))
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "automationDetails": {"id": f"{category}/"},
        # Paths are relative to the repository's root; where that is on disk is the consumer's
        # (code scanning's: the checkout), so the base has a description and no uri (SARIF 3.14.14).
        "originalUriBaseIds": {SRCROOT: {"description": {"text": "The root of the repository's head tree."}}},
        "results": results,
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
