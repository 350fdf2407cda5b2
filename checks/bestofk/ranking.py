"""Best-of-k: rank competing candidate patches for one task by execution, then by a two-order judge. Pure.

Agents are often run several times on one issue. Candidates are ordered by
what execution measured, in this order, each with its numbers:

1. held-out pass rate (higher first) - the suite no candidate could overfit to;
2. hidden pass rate (higher first);
3. differential checks passed (higher first): functions agreeing with their references and
   efficiency checks within bounds, of those checked - a correct but quadratic candidate ranks
   below a linear one that passes the same tests;
4. regressions (fewer first);
5. blocking shape findings (fewer first).

Candidates tied on all five *and all passing their gate* may be separated by
the pairwise judge, asked in both orders (checks.quality.pairwise): a
preference counts only when both orders agree. Within such a group a
candidate's score is its number of agreed wins; equal scores share a rank
("no preference"). Nothing else is ever decided by a model.

The summary says how many of the k candidates pass; when they are
independent samples of one agent it also gives pass@j with the unbiased
estimator 1 - C(n-c, j) / C(n, j) (Chen et al., 2021).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import combinations
from math import comb
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from checks.report import Report

# Pairwise comparisons are asked for groups of at most this many tied candidates
# (n*(n-1) judge calls); a larger group stays tied, and says why.
MAX_PAIRWISE_GROUP = 6

PairPreference = Literal["a", "b", "tie"]
# The execution sort key: held-out, hidden and differential rates (negated), regressions, findings.
Key = tuple[Fraction, Fraction, Fraction, int, int]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Execution(_Model):
    """What execution measured of one candidate: the ranking keys and the gate's conclusion."""

    conclusion: str
    held_out_passed: int = 0
    held_out_total: int = 0
    hidden_passed: int = 0
    hidden_total: int = 0
    # Functions agreeing and efficiency checks within bounds / functions and efficiency checks measured.
    differential_passed: int = 0
    differential_total: int = 0
    regressions: int = 0
    blocking_findings: int = 0

    @property
    def passes(self) -> bool:
        """Return True when the candidate passes its gate (conclusion ``success``)."""
        return self.conclusion == "success"

    def key(self) -> Key:
        """Return the sort key, best first: a missing suite ranks below 0%."""
        return (
            -_rate(self.held_out_passed, self.held_out_total),
            -_rate(self.hidden_passed, self.hidden_total),
            -_rate(self.differential_passed, self.differential_total),
            self.regressions,
            self.blocking_findings,
        )

    def versus(self, other: Execution) -> str:
        """Return the first ranking key on which this differs from ``other``, with both numbers."""
        mine, theirs = self.key(), other.key()
        for i, (name, a, b) in enumerate(
            (
                ("held-out pass rate", self._held_out(), other._held_out()),
                ("hidden pass rate", self._hidden(), other._hidden()),
                ("differential checks", self._differential(), other._differential()),
                ("regressions", str(self.regressions), str(other.regressions)),
                ("blocking findings", str(self.blocking_findings), str(other.blocking_findings)),
            )
        ):
            if mine[i] != theirs[i]:
                return f"{name} {a} vs {b}"
        return "equal on execution"

    def _held_out(self) -> str:
        return _fraction("", self.held_out_passed, self.held_out_total).strip()

    def _hidden(self) -> str:
        return _fraction("", self.hidden_passed, self.hidden_total).strip()

    def _differential(self) -> str:
        return _fraction("", self.differential_passed, self.differential_total).strip()

    def numbers(self) -> str:
        """Return e.g. ``held-out 14/14 · hidden 21/21 · regressions 0 · blocking findings 0``."""
        return " · ".join(
            (
                _fraction("held-out", self.held_out_passed, self.held_out_total),
                _fraction("hidden", self.hidden_passed, self.hidden_total),
                *(
                    [_fraction("differential", self.differential_passed, self.differential_total)]
                    if self.differential_total
                    else []
                ),
                f"regressions {self.regressions}",
                f"blocking findings {self.blocking_findings}",
            )
        )


def _rate(passed: int, total: int) -> Fraction:
    return Fraction(passed, total) if total else Fraction(-1)


def _fraction(label: str, passed: int, total: int) -> str:
    return f"{label} {passed}/{total} ({passed / total:.0%})" if total else f"{label} -"


def execution_of(report: Report) -> Execution:
    """Read a candidate's ranking numbers from its report."""
    suites = report.behaviour.suites
    held = [s for s in suites if s.kind == "held_out"]
    hidden = [s for s in suites if s.kind == "hidden"]
    shape = report.shape
    blocking = (
        sum(1 for f in shape.findings if f.introduced and not f.needs_maintainer)
        if shape.status == "failed"
        else 0
    )
    differential = report.behaviour.differential
    return Execution(
        conclusion=report.conclusion,
        held_out_passed=sum(s.passed for s in held),
        held_out_total=sum(s.total for s in held),
        hidden_passed=sum(s.passed for s in hidden),
        hidden_total=sum(s.total for s in hidden),
        differential_passed=sum(d.agreed + d.efficiency_passed for d in differential),
        differential_total=sum(d.checked + d.efficiency_checked for d in differential),
        regressions=report.behaviour.regressions,
        blocking_findings=blocking,
    )


class Candidate(_Model):
    """One competing patch: a PR (``#13``) or a branch; ``execution`` is None until it was gated."""

    id: str
    title: str = ""
    url: str = ""
    agent: str = ""
    execution: Execution | None = None


class Pairwise(_Model):
    """One pairwise comparison as the ranking uses it (see checks.quality.pairwise.PairwiseResult)."""

    a: str
    b: str
    preferred: PairPreference | None = None
    a_first: PairPreference | None = None
    b_first: PairPreference | None = None
    detail: str = ""

    @property
    def consistent(self) -> bool:
        return self.a_first is not None and self.a_first == self.b_first


class Placed(_Model):
    candidate: Candidate
    rank: int
    why: str
    pairwise_wins: int | None = None


class Ranking(_Model):
    """The ranking of k candidates for one task: the public output of `patchgate rank`."""

    target: str
    k: int
    placed: list[Placed]
    passing: int
    # pass@j for j = 1..k, only when the candidates are independent samples of one agent.
    pass_at: dict[int, float] | None = None
    samples: str = ""
    pairwise: list[Pairwise] = Field(default_factory=list)
    # Comparisons answered in both orders, how many agreed, and how many picked the first shown.
    orders_answered: int = 0
    orders_agreed: int = 0
    first_position_wins: int = 0

    def place_of(self, candidate_id: str) -> Placed | None:
        """Return where ``candidate_id`` was placed."""
        return next((p for p in self.placed if p.candidate.id == candidate_id), None)


def execution_groups(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """Group candidates tied on execution, best group first; candidates not gated yet come last."""
    gated = sorted((c for c in candidates if c.execution is not None), key=_sort_key)
    groups: list[list[Candidate]] = []
    for c in gated:
        if groups and _key(groups[-1][0]) == _key(c):
            groups[-1].append(c)
        else:
            groups.append([c])
    pending = [c for c in candidates if c.execution is None]
    return groups + ([pending] if pending else [])


def _key(c: Candidate) -> Key:
    if c.execution is None:  # only gated candidates are keyed; the caller filters the rest
        raise ValueError(f"{c.id} was not gated")
    return c.execution.key()


def _sort_key(c: Candidate) -> tuple[Key, str]:
    return _key(c), c.id


def pairs_to_judge(candidates: Sequence[Candidate]) -> list[tuple[Candidate, Candidate]]:
    """Return the pairs the judge must compare: within each group tied on execution and all passing."""
    out: list[tuple[Candidate, Candidate]] = []
    for group in execution_groups(candidates):
        if _judgeable(group):
            out += list(combinations(group, 2))
    return out


def _judgeable(group: Sequence[Candidate]) -> bool:
    return 2 <= len(group) <= MAX_PAIRWISE_GROUP and all(
        c.execution is not None and c.execution.passes for c in group
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Return the unbiased estimate of pass@k from n samples of which c pass (Chen et al., 2021)."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@{k} needs 0 < k <= n and 0 <= c <= n (n={n}, c={c})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def rank(
    target: str,
    candidates: Sequence[Candidate],
    pairwise: Mapping[frozenset[str], Pairwise] | None = None,
) -> Ranking:
    """Rank ``candidates`` for ``target`` (e.g. ``#12``) by execution, then by agreed pairwise wins."""
    pairwise = pairwise or {}
    placed: list[Placed] = []
    used: list[Pairwise] = []
    groups = execution_groups(candidates)
    for i, group in enumerate(groups):
        start = len(placed) + 1
        if group[0].execution is None:
            placed += [Placed(candidate=c, rank=start, why="not gated yet") for c in group]
            continue
        if len(group) == 1:
            placed.append(Placed(candidate=group[0], rank=start, why=_decided(groups, i)))
            continue
        if not _judgeable(group):
            why = "tied on execution" + _unjudged(group)
            placed += [Placed(candidate=c, rank=start, why=why) for c in group]
            continue
        results = [pairwise.get(frozenset((a.id, b.id))) for a, b in combinations(group, 2)]
        found = [r for r in results if r is not None]
        used += found
        placed += _by_wins(group, found, start)
    return _summary(target, list(candidates), placed, used)


def _decided(groups: Sequence[Sequence[Candidate]], i: int) -> str:
    """Say what separates group ``i`` from its neighbour: the next one below, or for the last, above."""
    this = groups[i][0].execution
    below = groups[i + 1][0].execution if i + 1 < len(groups) else None
    above = groups[i - 1][0].execution if i > 0 else None
    if this is None:
        return "not gated yet"
    if below is not None:
        return f"ahead on {this.versus(below)}"
    if above is not None:
        return f"behind on {this.versus(above)}"
    return "the only candidate"


def _unjudged(group: Sequence[Candidate]) -> str:
    if len(group) > MAX_PAIRWISE_GROUP:
        return f"; {len(group)} tied, more than the {MAX_PAIRWISE_GROUP} the judge compares"
    return "; not all pass, so no judge is asked"


def _by_wins(group: Sequence[Candidate], results: Sequence[Pairwise], start: int) -> list[Placed]:
    wins = {c.id: 0 for c in group}
    for r in results:
        if r.preferred == "a":
            wins[r.a] += 1
        elif r.preferred == "b":
            wins[r.b] += 1
    asked = len(results) == len(group) * (len(group) - 1) // 2
    ordered = sorted(group, key=lambda c: (-wins[c.id], c.id))
    out = []
    for c in ordered:
        better = sum(1 for other in group if wins[other.id] > wins[c.id])
        shared = sum(1 for other in group if wins[other.id] == wins[c.id]) > 1
        why = f"tied on execution; pairwise judge, both orders: {wins[c.id]} agreed win(s)"
        if shared:
            why += "; no preference" + ("" if asked else " (judge unavailable for some pairs)")
        out.append(Placed(candidate=c, rank=start + better, why=why, pairwise_wins=wins[c.id]))
    return out


def _summary(target: str, candidates: list[Candidate], placed: list[Placed], used: list[Pairwise]) -> Ranking:
    k = len(candidates)
    gated = [c for c in candidates if c.execution is not None]
    passing = sum(1 for c in gated if c.execution is not None and c.execution.passes)
    agents = {c.agent for c in candidates}
    pass_at: dict[int, float] | None = None
    if len(gated) == k and k >= 1 and len(agents) == 1 and "" not in agents:
        pass_at = {j: pass_at_k(k, passing, j) for j in range(1, k + 1)}
        samples = f"the {k} candidates are samples of one agent ({agents.pop()})"
    elif len(gated) < k:
        samples = f"{k - len(gated)} candidate(s) not gated yet: no pass@k"
    else:
        samples = "the candidates are not samples of one agent: no pass@k"
    answered = [r for r in used if r.a_first is not None and r.b_first is not None]
    return Ranking(
        target=target,
        k=k,
        placed=placed,
        passing=passing,
        pass_at=pass_at,
        samples=samples,
        pairwise=used,
        orders_answered=len(answered),
        orders_agreed=sum(1 for r in answered if r.consistent),
        first_position_wins=sum(1 for r in answered if r.a_first == "a" and r.b_first == "b"),
    )
