"""The run page's own rendering (bot/web/runpage.py): pure, no server."""

from __future__ import annotations

from pathlib import Path

from bot.store import Store
from bot.web.runpage import links, page, public_job
from checks.report import Report


def test_a_local_run_has_no_pull_request_link_no_number_and_no_attempts(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    report = Report(conclusion="failure", base_sha="a" * 40, head_sha="b" * 40)
    job_id = store.runs.add_local_job("example/duration", "agent/x", report, installation_id=0)
    job = store.leases.job(job_id)
    store.close()
    assert job is not None
    html = page(job, "the report", "https://github.com")
    assert "example/duration · local run @ bbbbbbbbbbbb" in html
    assert "#0 @" not in html and "/pull/" not in html and "attempts" not in html
    assert links(job, "https://github.com") == {}
    assert public_job(job, "https://github.com")["links"] == {}


def test_a_pull_requests_run_links_to_it(tmp_path: Path) -> None:
    from bot.github.events import GateRequest

    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    [job_id] = store.deliveries.record(
        "d1", "pull_request", "opened", [GateRequest(1, "octo/repo", "c" * 40, "pull_request.opened", 7)]
    ).job_ids
    job = store.leases.job(job_id)
    store.close()
    assert job is not None
    html = page(job, "<b>report</b>", "https://github.com")
    assert "octo/repo #7 @ cccccccccccc" in html and "attempts: 0" in html
    assert 'href="https://github.com/octo/repo/pull/7"' in html
    assert "<b>report" not in html and "&lt;b&gt;report" in html


def gated_report() -> Report:
    from checks.report import BehaviourResult, Finding, ShapeResult, SuiteResult

    hostile = Finding(
        tool="ruff", rule="F401", path="pkg/a.py", start_line=3, end_line=4, severity="error",
        message="<script>alert(1)</script> unused",
    )  # fmt: skip
    old = hostile.model_copy(update={"introduced": False, "start_line": 9, "end_line": 9, "message": "old"})
    report = Report(
        conclusion="failure",
        reasons=["behaviour: hidden 3/4 (75%), needs 100%"],
        base_sha="a" * 40,
        head_sha="d" * 40,
        shape=ShapeResult(status="failed", findings=[hostile, old], preexisting=1),
        behaviour=BehaviourResult(
            status="failed",
            suites=[
                SuiteResult(
                    name="hidden", kind="hidden", passed=3, failed=1, total=4, pass_rate=0.75, status="failed"
                ),
                SuiteResult(name="held-out", kind="held_out", passed=2, total=2, pass_rate=1.0),
            ],
            fail_to_pass=1,
            fail_to_pass_total=2,
        ),
    )
    report.timings.update({"shape": 4.0, "behaviour": 8.0})
    return report


def pull_job(
    tmp_path: Path, report: Report, *, history: int = 0, store: Store | None = None
) -> tuple[Store, int]:
    """Store ``report`` as the run of PR #7's job (after ``history`` earlier runs of other PRs)."""
    if store is None:
        store = Store(f"sqlite:///{tmp_path / 'store.db'}")
        store.migrate()
    for n in range(history):  # earlier PRs: the pass rate and suite strength climbing
        earlier = report.model_copy(deep=True)
        earlier.behaviour.strength.mutants, earlier.behaviour.strength.killed = 10, 4 + n
        _one_run(store, earlier, 100 + n, 0.5 + 0.08 * n)
    return store, _one_run(store, report, 7, 0.75)


def _one_run(store: Store, report: Report, number: int, hidden: float) -> int:
    from bot.github.events import GateRequest
    from bot.store import RunRecord

    sha = f"{number:040d}" if number != 7 else "d" * 40
    [job_id] = store.deliveries.record(
        f"d{number}",
        "pull_request",
        "opened",
        [GateRequest(1, "octo/repo", sha, "pull_request.opened", number)],
    ).job_ids
    data = report.model_dump(mode="json")
    record = RunRecord(
        job_id=job_id,
        repository="octo/repo",
        pr_number=number,
        head_sha=sha,
        base_sha="a" * 40,
        conclusion=report.conclusion,
        report=data,
        hidden_pass_rate=hidden,
        held_out_pass_rate=1.0,
    )
    store.runs.save(record)
    return job_id


def test_the_run_page_shows_layers_suites_findings_linked_to_their_lines_and_a_timeline(
    tmp_path: Path,
) -> None:
    report = gated_report()
    store, job_id = pull_job(tmp_path, report)
    job = store.leases.job(job_id)
    store.close()
    assert job is not None
    html = page(job, "text", "https://github.com", report=report, repository_url="/repos/octo/repo?token=t")
    assert '<table id="layers">' in html and '<table id="suites">' in html and '<table id="timeline">' in html
    # A finding links to its lines at the head commit; an old one is marked as already on base.
    assert 'href="https://github.com/octo/repo/blob/' + "d" * 40 + '/pkg/a.py#L3-L4"' in html
    assert "already on base" in html
    # Every value is escaped by the template engine.
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'style="width: 50.0%"' in html and 'style="width: 100.0%"' in html  # shape 4 s, behaviour 8 s
    assert 'href="/repos/octo/repo?token=t"' in html
    assert "behaviour: hidden 3/4 (75%), needs 100%" in html


def test_the_repository_page_lists_runs_and_charts_them(tmp_path: Path) -> None:
    from bot.web.runpage import repository_page

    report = gated_report()
    report.behaviour.strength.mutants, report.behaviour.strength.killed = 4, 3
    store, job_id = pull_job(tmp_path, report)
    runs = store.runs.for_repository("octo/repo")
    store.close()
    assert [(r.job_id, r.conclusion, r.hidden_pass_rate, r.mutation_score) for r in runs] == [
        (job_id, "failure", 0.75, 0.75)
    ]
    html = repository_page("octo/repo", runs, lambda j: f"/runs/{j}?token=x")
    assert f'href="/runs/{job_id}?token=x"' in html and "#7" in html
    assert '<svg id="chart"' in html and "hidden pass rate" in html and "suite strength" in html


def test_the_repository_page_plots_the_judges_calibration_with_intervals() -> None:
    from bot.web.runpage import calibration, repository_page
    from checks.quality.calibration import JudgeRecord, rate

    # 10 runs: execution failed 4 times, and the judge passed one of those (a false acceptance).
    records = [JudgeRecord(True, True, "m1", "r")] * 5 + [JudgeRecord(True, False, "m1", "r")]
    records += [JudgeRecord(False, False, "m1", "r")] * 3 + [JudgeRecord(False, True, "m1", "r")]
    [model] = calibration(records)
    assert (model["model"], model["n"]) == ("m1", 10)
    agreement, false_acceptance, false_rejection = model["bars"]
    assert agreement["width"] == 0.8 * 400 and false_acceptance["width"] == 0.25 * 400
    expected = rate(1, 4)
    assert (false_acceptance["low"], false_acceptance["high"]) == (
        round((expected.low or 0) * 400, 1),
        round((expected.high or 0) * 400, 1),
    )
    assert false_rejection["text"] == rate(1, 6).text()
    html = repository_page("octo/repo", [], lambda j: "", records)
    assert 'id="calibration-1"' in html and "false acceptance (tests failed, judge passed)" in html
    assert 'id="calibration' not in repository_page("octo/repo", [], lambda j: "")


def test_a_findings_link_names_its_file_and_nothing_else(tmp_path: Path) -> None:
    report = gated_report()
    report.shape.findings[0].path = "../../../../evil/page"
    report.shape.findings[1].path = "dir/a file#1?.py"
    store, job_id = pull_job(tmp_path, report)
    job = store.leases.job(job_id)
    store.close()
    assert job is not None
    html = page(job, "text", "https://github.com", report=report)
    assert "evil/page" in html and "/evil/page" not in html.split("<code>")[0]
    assert 'href="https://github.com/octo/repo/blob/' + "d" * 40 + '/dir/a%20file%231%3F.py#L9-L9"' in html
    assert not [line for line in html.splitlines() if "href" in line and ".." in line]


def test_the_run_page_shows_each_differential_function_and_nothing_of_a_held_out_one_s(
    tmp_path: Path,
) -> None:
    from checks.report import DifferentialResult, EfficiencyResult, FunctionCheck

    report = gated_report()
    timed = EfficiencyResult(status="failed", sizes=[10_000, 100_000], head_exponent=1.75,
                             reference_exponent=0.97, ratio=21.1, largest=100_000)  # fmt: skip
    shown = FunctionCheck(
        id="d.diff.yml::durations.parse_duration", function="durations.parse_duration",
        reference="ref.parse_duration", status="disagreed", inputs=41,
        counterexample="head returned <b>0</b> for parse_duration('0x'); reference raised ValueError",
        efficiency=timed,
    )  # fmt: skip
    secret = shown.model_copy(
        update={"function": "secret.held_out_function", "counterexample": "SECRET-INPUT"}
    )
    report.behaviour.differential = [
        DifferentialResult(
            name="hidden",
            source="hidden",
            status="failed",
            checked=1,
            agreed=0,
            inputs=41,
            functions=[shown],
            seed="5eed" * 8,
        ),
        # A held-out result that (wrongly) carried its functions still shows none of them.
        DifferentialResult(
            name="held-out", source="held_out", status="passed", checked=1, agreed=1, functions=[secret]
        ),
    ]
    store, job_id = pull_job(tmp_path, report)
    job = store.leases.job(job_id)
    store.close()
    assert job is not None
    html = page(job, "text", "https://github.com", report=report)
    assert '<table id="differential">' in html
    assert "differential (hidden) 0/1 functions agree in 41 inputs" in html
    assert "disagrees with reference ref.parse_duration after 41 inputs" in html
    assert "reference raised ValueError" in html and "<b>0</b>" not in html  # escaped
    assert "efficiency: n^1.75 vs reference n^0.97 at n = 10^5 (21x)" in html
    assert "seed " + "5eed" * 8 in html
    assert "differential (held-out) 1/1 functions agree" in html
    assert "secret.held_out_function" not in html and "SECRET-INPUT" not in html
