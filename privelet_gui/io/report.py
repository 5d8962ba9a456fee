"""The release report: one self-contained HTML page that says what a release is, in plain words.

A custodian does not publish alone: a review board or a data protection officer signs off, and
users of the published table ask how accurate it is. :func:`release_report` writes what they
need from the release file alone (never the table): what was released (attributes, domains and
where each came from, the rows-outside-the-domain policy), the guarantee (epsilon, the
neighbouring notion, what it covers and what not, the sampler and the bit source), the
mechanism and why it was chosen (with the alternatives' expected errors on the same workload),
the error a user can expect (+/- at 95% per query size, as a chart, the worst case, and how to
get an interval for one's own query), the privacy ledger's record of the table, and the
software version, the file's SHA-256 and the dates. Every error figure is data-independent
(:mod:`privelet_gui.engine.accuracy`): the report holds no true count, and under add/remove
neighbours not the number of rows either.

:func:`evaluation_report` is the same page for ``privelet evaluate``, whose errors are measured
on the TRUE data: it says so in a CONFIDENTIAL banner on every printed page.

The page carries its CSS and its figures (inline SVG), loads nothing from the network, and
prints on A4 from a browser.
"""

from __future__ import annotations

import hashlib
import html
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..engine import (
    NEIGHBOUR_NAMES,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    QuintileRow,
    Release,
    ReleaseSpec,
    SaRule,
    Schema,
    Workload,
    expected_error,
    margin95,
    mechanism_name,
    quintile_summary,
    resolve_sa,
)
from ..engine.descriptions import (
    BIT_SOURCE_DESCRIPTIONS,
    NEIGHBOUR_MEANINGS,
    SAMPLER_DESCRIPTIONS,
    describe_axis_strategy,
    describe_mechanism,
)
from ..engine.progress import CancelCallback, Progress, ProgressCallback
from .atomic import atomic_write
from .choices import ReleaseChoices, release_choices
from .ledger import COMPOSITION_TEXT, Ledger, LedgerError, spending_summary
from .releases import load_release, load_release_metadata
from .workloads import workload_from_description, workloads_from_descriptions

__all__ = [
    "CONFIDENTIAL_TEXT",
    "LISTED_QUERIES",
    "evaluation_report",
    "file_sha256",
    "release_report",
    "write_evaluation_report",
    "write_release_report",
]

#: The per-size figures list a workload's queries one by one, up to this many.
LISTED_QUERIES = 200_000
#: What an evaluation report says at the top of every page.
CONFIDENTIAL_TEXT = (
    "CONFIDENTIAL: measured on the TRUE data, for the data custodian only. Do not publish this report "
    "or ship it with a release."
)
_RELEASED = ' class="released"'
_COLOURS = ("#1f5f8b", "#c9792b", "#6a9a55", "#8d6bb0", "#9aa5b1")


# -- the release report ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    """A mechanism the report compares on the workload, with its expected errors."""

    label: str
    spec: ReleaseSpec
    released: bool
    typical: float  # +/- at 95% for a typical query (the workload's mean square error)
    worst: float  # +/- at 95% for the workload's worst query
    by_size: list[QuintileRow] | None


def release_report(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    workload: Sequence[str] = (),
    ledger: Ledger | None = None,
    progress: ProgressCallback | None = None,
    should_cancel: CancelCallback | None = None,
) -> str:
    """The HTML report of the release file ``path`` (see the module docstring).

    ``name`` is the table's name as the custodian gives it (default: the dataset recorded, or
    the release file's name). ``workload`` (``--workload`` descriptions) is what the error
    figures are for; default: the workload S_A was chosen for, else the paper's random
    workload. ``ledger`` defaults to the user's (``PRIVELET_LEDGER``); it is only read.
    """
    steps = Progress(progress, should_cancel)
    p = Path(path)
    steps.report(0.0, f"reading {p.name}")
    warnings: list[str] = []
    release = load_release(p, warn=lambda message: warnings.append(message.replace(str(p), p.name)))
    meta = load_release_metadata(p)
    if release.schema is None:
        raise PriveletError(f"{p.name} holds no schema, so its errors cannot be worked out for a report")
    choices = release_choices(meta)
    spec = release.spec
    steps.report(0.05, "computing the checksum")
    checksum = file_sha256(p)
    work = _workload_of(spec.schema, workload, choices)
    steps.report(0.15, "computing the expected errors")
    candidates = _candidates(spec, work, steps.slice(0.15, 0.95))
    ledger_html = _ledger_section(p, ledger)
    title = name or (choices.dataset if choices is not None and choices.dataset else p.name)
    body = [
        _header(title, release, meta, warnings),
        _what_section(title, release, spec, choices),
        _guarantee_section(release, meta),
        _mechanism_section(spec, choices, work, candidates),
        _error_section(spec, work, candidates, p.name),
        ledger_html,
        _provenance_section(p, meta, checksum, warnings),
    ]
    steps.report(1.0, "report done")
    return _page(f"Release report: {title}", "\n".join(body))


def write_release_report(
    path: str | os.PathLike[str], out: str | os.PathLike[str], *, force: bool = False, **options: Any
) -> Path:
    """Write :func:`release_report` of ``path`` to ``out`` (atomically; an existing file only with ``force``)."""
    text = release_report(path, **options)
    with atomic_write(out, force=force, mode="w", encoding="utf-8") as handle:
        handle.write(text)
    return Path(out)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file (hex); of a folder (a Zarr release), over its files' names and bytes in name order."""
    p = Path(path)
    digest = hashlib.sha256()
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for file in files:
        if p.is_dir():
            digest.update(file.relative_to(p).as_posix().encode() + b"\0")
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def _workload_of(schema: Schema, descriptions: Sequence[str], choices: ReleaseChoices | None) -> Workload:
    if descriptions:
        return workloads_from_descriptions(list(descriptions), schema)
    if choices is not None and choices.sa_rule == "best" and choices.workload:
        try:
            return workloads_from_descriptions(list(choices.workload), schema)
        except (PriveletError, OSError):
            pass  # a workload file gone since: the paper's workload below
    return workload_from_description("paper", schema)


def _candidates(spec: ReleaseSpec, workload: Workload, steps: Progress) -> list[_Candidate]:
    """The released mechanism first, then Basic, Privelet and Privelet+ (the recommended S_A) on the same workload."""
    specs = [(f"{spec.name} (released)", spec, True)]
    recommended = resolve_sa("recommended", spec)
    paper = {"strategies": (), "marginals": ()}
    for label, other in (("Basic", spec.replace(mechanism="basic", sa=(), **paper)),
                         ("Privelet", spec.replace(mechanism="privelet", sa=(), **paper)),
                         ("Privelet+ (recommended S_A)", spec.replace(mechanism="privelet+", sa=recommended, **paper))):
        if all((other.label, other.effective_sa) != (s.label, s.effective_sa) for _, s, _ in specs):
            specs.append((label, other, False))
    listed = workload.queries() if len(workload) <= LISTED_QUERIES else None
    coverage = listed.coverage(spec.schema.shape) if listed is not None else None
    out = []
    for number, (label, candidate, released) in enumerate(specs):
        steps.report(number / len(specs), f"expected errors of {label}")
        by_size = None
        if listed is not None and coverage is not None:
            by_size = quintile_summary(coverage, candidate.variances(listed))
        out.append(_Candidate(
            label, candidate, released, margin95(expected_error(candidate, workload)),
            margin95(expected_error(candidate, workload, objective="worst")), by_size,
        ))
    steps.report(1.0, "expected errors done")
    return out


def _sa_text(spec: ReleaseSpec) -> str:
    if not spec.effective_sa:
        return "none"
    if len(spec.effective_sa) == len(spec.schema):
        return "all"
    return ", ".join(spec.effective_sa)


# -- sections ------------------------------------------------------------------------------------


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _n(value: float) -> str:
    """A figure for people: grouped digits, three significant digits for small ones."""
    if not math.isfinite(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _header(title: str, release: Release, meta: Mapping[str, Any], warnings: Sequence[str]) -> str:
    spec = release.spec
    facts = [
        ("epsilon", f"{release.epsilon:g}"),
        ("neighbours", NEIGHBOUR_NAMES.get(release.neighbours, release.neighbours)),
        ("mechanism", spec.name),
        ("cells", f"{release.noisy.size:,}"),
    ]
    parts = [
        f"<h1>Release report: {_e(title)}</h1>",
        f'<p class="lead">A differentially private frequency table made with Privelet Studio on '
        f"{_e(_date(meta.get('created')))}. This report is made from the release file alone: it holds no "
        "true count of the table.</p>",
        '<div class="facts">' + "".join(f'<div class="fact"><span>{_e(k)}</span><b>{_e(v)}</b></div>'
                                        for k, v in facts) + "</div>",
    ]
    if release.seeded:
        parts.append('<p class="banner">SEEDED TEST RELEASE: NOT PRIVATE. Its noise was made with a fixed seed, '
                     "and anyone who knows the seed can remove it. Never publish it.</p>")
    if release.schema is not None and release.schema.domain_from_data:
        parts.append(f'<p class="banner">NOT PRIVATE until fixed: the domains of '
                     f"{_e(', '.join(release.schema.domain_from_data))} were taken from the data, and a value's mere "
                     "presence in a domain can reveal a person. Replace them with public domains and release "
                     "again.</p>")
    if warnings:
        parts.append('<p class="banner">Read the warning about this file in "Provenance" below.</p>')
    return "\n".join(parts)


def _domain_text(attribute: Any) -> str:
    labels = list(attribute.labels)
    if isinstance(attribute, NominalAttribute):
        height = attribute.hierarchy.height
        shown = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
        return f"{attribute.size} values in a hierarchy of {height} levels: {shown}"
    if isinstance(attribute, OrdinalAttribute) and attribute.bins is not None:
        return f"{attribute.size} bins from {labels[0]} to {labels[-1]}"
    return f"{attribute.size} ordered values from {labels[0]} to {labels[-1]}"


def _outside_text(attribute: Any, invalid: str | None) -> str:
    parts = []
    out_of_range = getattr(attribute, "out_of_range", "error")
    if out_of_range == "clamp":
        parts.append("numbers beyond the ends count as the first or last value")
    elif out_of_range == "drop":
        parts.append("numbers beyond the ends drop their row")
    if attribute.drop_missing:
        parts.append("rows with this cell missing are dropped")
    elif attribute.missing is not None:
        parts.append(f"missing cells count as {attribute.missing!r}")
    if not parts:
        parts.append({"drop": "rows with another value are dropped", "error": "any other value stopped the release"}
                     .get(invalid or "", "other values: not recorded"))
    return "; ".join(parts)


def _what_section(title: str, release: Release, spec: ReleaseSpec, choices: ReleaseChoices | None) -> str:
    schema = spec.schema
    invalid = choices.invalid if choices is not None else None
    rows = []
    for attribute in schema:
        kind = "nominal" if isinstance(attribute, NominalAttribute) else "ordinal"
        origin = ('<strong class="warn">taken from the data (NOT private)</strong>' if attribute.domain_from_data
                  else "declared in the schema (public)")
        rows.append(f"<tr><td>{_e(attribute.name)}</td><td>{_e(kind)}</td><td>{_e(_domain_text(attribute))}</td>"
                    f"<td>{origin}</td><td>{_e(_outside_text(attribute, invalid))}</td></tr>")
    policy = {
        "error": "Every row of the table had a value in every domain (a row outside one would have stopped the release).",
        "drop": "Rows with a value outside a domain were dropped before counting (how many is not published).",
    }.get(invalid or "", "The rows-outside-the-domain policy was not recorded in this release file.")
    shape = " x ".join(str(n) for n in schema.shape)
    total = ("Under replace-one neighbours the number of rows is public, and the release was shifted so that its "
             "total equals it." if release.public_total else
             "The number of rows is not published: it appears nowhere in the release or this report."
             if release.neighbours == "add-remove" else "The release was not shifted to the number of rows.")
    return f"""<section><h2>1. What was released</h2>
<p>The table <strong>{_e(title)}</strong>, published as a noisy frequency matrix: one noisy count for every
combination of the attributes' values, {shape} = {schema.size:,} cells. Counts may be negative or fractional:
that is the noise, and it keeps sums unbiased.</p>
<p class="note">Ordinal attributes have ordered values (ranges of them are queried); nominal ones are unordered,
grouped by a hierarchy.</p>
<table><thead><tr><th>Attribute</th><th>Kind</th><th>Domain</th><th>Where the domain came from</th>
<th>Values outside it, missing cells</th></tr></thead><tbody>{"".join(rows)}</tbody></table>
<p>{_e(policy)} {_e(total)}</p></section>"""


def _guarantee_section(release: Release, meta: Mapping[str, Any]) -> str:
    neighbours = NEIGHBOUR_MEANINGS.get(release.neighbours, release.neighbours)
    sampler = SAMPLER_DESCRIPTIONS.get(release.sampler, release.sampler)
    source = str(meta.get("bit_source", "not recorded"))
    source_text = BIT_SOURCE_DESCRIPTIONS.get(source, source)
    seeded = ('<p class="banner">This release is SEEDED (a test release): the guarantee does not hold. '
              "Do not publish it.</p>" if release.seeded else
              "<p>Seeded: <strong>no</strong>. The noise was not made from a seed; nobody, the custodian included, "
              "can remove it.</p>")
    return f"""<section><h2>2. The guarantee</h2>
<p><strong>epsilon = {release.epsilon:g}</strong> differential privacy. Whatever an attacker knows, the
probability of any outcome of this release changes by a factor of at most e<sup>epsilon</sup> =
{math.exp(release.epsilon):.3g} between neighbouring tables. Smaller epsilon: more private, more noise.</p>
<p><strong>Neighbouring tables here:</strong> {_e(neighbours)}</p>
<h3>What it covers</h3>
<ul><li>Any one record of the table, as the neighbouring notion above says.</li>
<li>Everything computed from the release afterwards: sums of cells, exports, rounding, charts. Post-processing
cannot weaken the guarantee.</li></ul>
<h3>What it does not cover</h3>
<ul><li>Other releases of the same table: their epsilons add up (see the privacy ledger below).
{_e(COMPOSITION_TEXT)}</li>
<li>A person with several records in the table: k records are protected at k x epsilon.</li>
<li>Facts about groups rather than individuals: the release is meant to show them.</li>
<li>Domains taken from the data, and the table itself: keep the true data safe.</li></ul>
<h3>How the noise was drawn</h3>
<p>Sampler: {_e(sampler)}.<br>Bit source: {_e(source_text)} (<code>{_e(source)}</code>).</p>
{seeded}</section>"""


def _why_text(spec: ReleaseSpec, choices: ReleaseChoices | None, workload: Workload) -> str:
    if choices is None:
        return "How the mechanism was chosen was not recorded in this release file."
    if spec.label == "basic" and choices.mechanism == "basic" and choices.sa_rule == "given":
        return "The custodian chose Basic."
    objective = "average square error" if choices.objective == "mean" else "worst query"
    chosen_for = ", ".join(choices.workload) or workload.name
    if choices.sa_rule is None:  # the best strategy: a mechanism that chooses every attribute's strategy
        return (f"Each attribute's strategy was chosen as the one with the least expected error ({objective}) on the "
                f"workload {chosen_for}, among counting each value, the paper's wavelet and hierarchies of several "
                "branchings; Basic, Privelet and Privelet+ were among the candidates, so it is never worse than them "
                "on that workload.")
    rules: dict[SaRule, str] = {
        "recommended": "S_A is the recommended one, by the paper's rule: an attribute goes into S_A when its "
                       "domain is small enough that counting its values directly costs less than transforming it "
                       "(|A| <= P(A)^2 H(A)).",
        "best": f"S_A was chosen as the best one for the workload: the least expected error ({objective}) on "
                f"{chosen_for}, searched over the subsets of the attributes; Basic and Privelet were among the "
                "candidates.",
        "given": "The custodian chose this mechanism and S_A.",
    }
    return rules[choices.sa_rule]


def _mechanism_section(spec: ReleaseSpec, choices: ReleaseChoices | None, workload: Workload,
                       candidates: Sequence[_Candidate]) -> str:
    if spec.label == "marginals":  # not measured axis by axis: the marginals and their weights
        head = '<th>Marginal (attributes counted together)</th><th class="num">Weight</th>'
        measured = "".join(f'<tr><td>{_e(", ".join(names) or "the total")}</td><td class="num">{weight}</td></tr>'
                           for names, weight in spec.marginals)
    else:
        head = "<th>Attribute</th><th>How its axis is measured</th>"
        measured = "".join(
            f"<tr><td>{_e(a.name)}</td><td>{_e(describe_axis_strategy(s.kind, name))}</td></tr>"
            for a, s, name in zip(spec.schema, spec.plan.strategies, spec.axis_strategies)
        )
    rows = "".join(
        f"<tr{_RELEASED if c.released else ''}><td>{_e(c.label)}</td><td>{_e(_sa_text(c.spec))}</td>"
        f'<td class="num">±{_n(c.typical)}</td><td class="num">±{_n(c.worst)}</td>'
        f'<td class="num">±{_n(c.spec.worst_case_margin95())}</td></tr>'
        for c in candidates
    )
    return f"""<section><h2>3. The mechanism and why</h2>
<p><strong>{_e(spec.name)}.</strong> {_e(describe_mechanism(spec.label))}</p>
<table><thead><tr>{head}</tr></thead><tbody>{measured}</tbody></table>
<p><strong>Why:</strong> {_e(_why_text(spec, choices, workload))}</p>
<p>The alternatives on the same workload ({_e(workload.name)}), at the same epsilon and neighbours. Each figure is
the +/- within which a query's noise stays in 95% of releases, worked out exactly from the domains alone
(no data, no privacy cost):</p>
<table><thead><tr><th>Mechanism</th><th>S_A (untransformed)</th><th class="num">typical query</th><th class="num">worst query of the workload</th>
<th class="num">worst range query of all</th></tr></thead><tbody>{rows}</tbody></table>
<p class="note">Typical: the root mean square error over the workload's queries. The last column is for the raw
release (before any shift to the public total).</p></section>"""


def _error_section(spec: ReleaseSpec, workload: Workload, candidates: Sequence[_Candidate], file_name: str) -> str:
    released = candidates[0]
    chart = ""
    if released.by_size is not None:
        groups = [f"{r.quintile}|{_percent(r.coverage)} of cells" for r in released.by_size]
        series = [(c.label, [margin95(r.square_error) for r in c.by_size or []]) for c in candidates]
        head = "".join(f'<th class="num">{_e(c.label)}</th>' for c in candidates)
        body = "".join(
            f"<tr><td>{r.quintile}</td><td class=\"num\">{_percent(r.coverage)}</td>"
            + "".join(f'<td class="num">±{_n(margin95((c.by_size or [])[i].square_error))}</td>' for c in candidates)
            + "</tr>"
            for i, r in enumerate(released.by_size)
        )
        chart = f"""<figure>{_bar_chart(groups, series, y_title="± at 95% (count, log scale)")}
<figcaption>Expected error (± at 95%) of the workload's queries by size: five groups of equal number, from the
smallest queries to the largest (share of the matrix's cells a query covers).</figcaption></figure>
<table><thead><tr><th>Size group</th><th class="num">cells covered</th>{head}</tr></thead><tbody>{body}</tbody></table>"""
    else:
        chart = (f"<p>The workload has {len(workload):,} queries, more than the {LISTED_QUERIES:,} the figure by size "
                 "lists; its typical and worst errors are above.</p>")
    shifted = (" The release is shifted to the public number of rows, so a query over the whole table is exact."
               if spec.uses_public_total else "")
    return f"""<section><h2>4. The error you can expect</h2>
<p>For a typical query of the workload ({_e(workload.name)}), the noisy answer is within
<strong>±{_n(released.typical)}</strong> of the true answer in 95% of releases; for its worst query within
±{_n(released.worst)}. No range-count query on this release has more noise than
±{_n(spec.worst_case_margin95())} (95%, raw release).{shifted}</p>
{chart}
<h3>A confidence interval for your own query</h3>
<p>The noise has mean zero and an exact variance that depends only on the query, epsilon and the domains. For a
query that sums the cells of a box (ranges of ordinal attributes, nodes of hierarchies):</p>
<ul><li><code>privelet query {_e(file_name)} --where "attribute=first..last" --where "other=value"</code> prints the
noisy answer, its exact variance and the 95% interval: answer ± 1.96 x sqrt(variance).</li>
<li>For a single cell, a CSV or Parquet export with the standard error column gives sqrt(variance) of each cell:
the interval is count ± 1.96 x standard error. Do not add the cells' variances for a sum: the noise of
neighbouring cells is correlated under the wavelets, and <code>privelet query</code> accounts for it.</li></ul>
<p class="note">The 95% figures use the normal approximation of the noise, a sum of many independent
discrete-Laplace terms; they describe the noise only, not errors in the data itself.</p></section>"""


def _percent(fraction: float) -> str:
    value = 100.0 * fraction
    return f"{value:.2g}%" if value < 10 else f"{value:.0f}%"


def _ledger_section(path: Path, ledger: Ledger | None) -> str:
    ledger = ledger if ledger is not None else Ledger()
    head = "<section><h2>5. The privacy ledger's record</h2>"
    if not ledger.path.exists():
        return head + "<p>This machine has no privacy ledger: the release was made elsewhere.</p></section>"
    try:
        report = ledger.report()
    except LedgerError as exc:
        return head + f'<p class="banner">The privacy ledger could not be read: {_e(exc)}</p></section>'
    target = path.resolve()
    entry = next((e for e in reversed(report.releases) if e.output and Path(e.output) == target), None)
    if entry is None:
        return head + ("<p>The privacy ledger on this machine has no release written to this file: it was made on "
                       "another machine, moved since, or recorded in another ledger. The ledger of the machine that "
                       "made it says what its table has spent.</p></section>")
    table = report.table_of(entry)
    by_id = {e.id: e for e in report.releases}
    rows = "".join(
        f"<tr{_RELEASED if e.id == entry.id else ''}><td>{e.id}</td><td>{_e(e.created)}</td>"
        f'<td class="num">{e.epsilon:g}</td><td>{_e(e.neighbours)}</td><td>{_e(mechanism_name(e.mechanism))}</td>'
        f"<td>{'{' + _e(', '.join(e.sa)) + '}'}</td><td>{'yes (not private)' if e.seeded else 'no'}</td></tr>"
        for e in (by_id[i] for i in table.entries)
    )
    totals = "".join(f"<li>{_e(NEIGHBOUR_NAMES.get(notion, notion))}: epsilon {total:g}</li>"
                     for notion, total in sorted(table.epsilon.items())) or "<li>no epsilon (seeded releases only)</li>"
    return head + f"""<p>This release is entry {entry.id} of the privacy ledger. Its table has had
{table.releases} release{'s' * (table.releases != 1)}{f" and {table.seeded} seeded test release(s)" if table.seeded else ""}:
{_e(spending_summary(table))}.</p>
<p>Epsilon spent on this table in total, per neighbouring notion:</p><ul>{totals}</ul>
<table><thead><tr><th>Entry</th><th>Made (UTC)</th><th class="num">epsilon</th><th>Neighbours</th><th>Mechanism</th>
<th>S_A</th><th>Seeded</th></tr></thead><tbody>{rows}</tbody></table>
<p class="note">The ledger knows a table by salted fingerprints of its rows and file, never by a count or a
name; a fingerprint means nothing off this machine.</p></section>"""


def _provenance_section(path: Path, meta: Mapping[str, Any], checksum: str, warnings: Sequence[str]) -> str:
    signature = ("".join(f'<p class="banner">{_e(w)}</p>' for w in warnings) if warnings else
                 "<p>Its signature checks out on this machine: it is as it was written.</p>")
    return f"""<section><h2>6. Provenance</h2>
<table><tbody>
<tr><th>Release file</th><td><code>{_e(path.name)}</code></td></tr>
<tr><th>SHA-256</th><td><code>{_e(checksum)}</code></td></tr>
<tr><th>Made</th><td>{_e(_date(meta.get('created')))} with privelet-gui {_e(meta.get('software_version', '?'))}</td></tr>
<tr><th>This report</th><td>{_e(_date(None))} with privelet-gui {_e(__version__)}</td></tr>
</tbody></table>
{signature}
<p class="note">To check a copy of the release: <code>sha256sum {_e(path.name)}</code> prints the checksum above.</p>
</section>"""


def _date(text: object) -> str:
    if isinstance(text, str) and text:
        return text.replace("T", " ").replace("Z", " UTC")
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# -- the evaluation report ---------------------------------------------------------------------------


def evaluation_report(
    rows: Sequence[Any],
    *,
    table_name: str,
    schema: Schema,
    sa: Sequence[str],
    neighbours: str,
    queries: int,
    seeded: bool = False,
    workload: str | None = None,
) -> str:
    """The HTML report of ``privelet evaluate``'s ``rows`` (:class:`~privelet_gui.engine.EvaluationRow`):
    errors measured against the TRUE data, under a CONFIDENTIAL banner on every page. ``workload``
    names the custodian's queries when they were measured (None: ``queries`` random ones)."""
    epsilons = sorted({r.epsilon for r in rows})
    sections = []
    for epsilon in epsilons:
        mine = {(r.mechanism, r.row.quintile): r.row for r in rows if r.epsilon == epsilon}
        mechanisms = [m for m in ("basic", "privelet+") if (m, 1) in mine]
        groups = [f"{q}|{_percent(mine[(mechanisms[0], q)].coverage)} of cells" for q in range(1, 6)]
        series = [(mechanism_name(m), [mine[(m, q)].square_error for q in range(1, 6)]) for m in mechanisms]
        body = "".join(
            f"<tr><td>{q}</td><td class=\"num\">{_percent(mine[(mechanisms[0], q)].coverage)}</td>"
            + "".join(f'<td class="num">{_n(mine[(m, q)].square_error)}</td>' for m in mechanisms)
            + "".join(f'<td class="num">{_n(100 * mine[(m, q)].relative_error)}%</td>' for m in mechanisms)
            + "</tr>"
            for q in range(1, 6)
        )
        head = "".join(f'<th class="num">{_e(mechanism_name(m))} square error</th>' for m in mechanisms)
        head += "".join(f'<th class="num">{_e(mechanism_name(m))} relative error</th>' for m in mechanisms)
        sections.append(f"""<section><h2>epsilon = {epsilon:g}</h2>
<figure>{_bar_chart(groups, series, y_title="average square error (log scale)")}
<figcaption>Average square error of the noisy answers against the TRUE answers, by query size (five groups of
equal number, smallest first).</figcaption></figure>
<table><thead><tr><th>Size group</th><th class="num">cells covered</th>{head}</tr></thead><tbody>{body}</tbody></table>
</section>""")
    asked = (f"{queries:,} random range-count queries" if workload is None
             else f"{queries:,} range-count queries of {_e(workload)}")
    seed = ('<p class="banner">Seeded: the workload and the noise were made with a fixed seed (tests only).</p>'
            if seeded else "")
    content = f"""<p class="banner confidential">{_e(CONFIDENTIAL_TEXT)}</p>
<h1>Evaluation report: {_e(table_name)}</h1>
<p class="lead">The paper's experiment (Figures 8 and 9) on the custodian's own table: {asked}, answered on releases made with Basic and with Privelet+ (S_A = {{{_e(', '.join(sa))}}}) under
{_e(NEIGHBOUR_NAMES.get(neighbours, neighbours))} neighbours, compared with the TRUE answers. The relative error
divides by the true answer, at least 0.1% of the rows. Matrix: {' x '.join(map(str, schema.shape))} =
{schema.size:,} cells. Made {_e(_date(None))} with privelet-gui {_e(__version__)}.</p>
{seed}
<p><strong>These figures come from the true data.</strong> They are for deciding on epsilon and S_A on the
custodian's machine; a published table is described by its release report, whose figures need no data.</p>
{"".join(sections)}"""
    return _page(f"CONFIDENTIAL evaluation report: {table_name}", content, confidential=True)


def write_evaluation_report(out: str | os.PathLike[str], *, force: bool = False, **options: Any) -> Path:
    """Write :func:`evaluation_report` to ``out`` (atomically; an existing file only with ``force``)."""
    text = evaluation_report(**options)
    with atomic_write(out, force=force, mode="w", encoding="utf-8") as handle:
        handle.write(text)
    return Path(out)


# -- the page and its figure -------------------------------------------------------------------------

_CSS = """
:root { --ink: #1b1f24; --muted: #59626c; --line: #d3d8de; --accent: #1f5f8b; --warn: #8a1c1c; --warnbg: #fcebea; }
* { box-sizing: border-box; }
html { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; font-size: 10pt; color: var(--ink);
       line-height: 1.45; background: #fff; }
body { max-width: 182mm; margin: 10mm auto; padding: 0 6mm; }
h1 { font-size: 19pt; margin: 0 0 2mm; color: var(--accent); line-height: 1.2; }
h2 { font-size: 13pt; color: var(--accent); border-bottom: 1.5px solid var(--accent); padding-bottom: 1mm;
     margin: 7mm 0 3mm; break-after: avoid; page-break-after: avoid; }
h3 { font-size: 10.5pt; margin: 4mm 0 1.5mm; break-after: avoid; page-break-after: avoid; }
p, ul { margin: 1.5mm 0 2.5mm; }
ul { padding-left: 6mm; }
.lead { font-size: 10.5pt; }
.note { color: var(--muted); font-size: 8.5pt; }
.warn { color: var(--warn); }
.facts { display: grid; grid-template-columns: repeat(4, 1fr); gap: 3mm; margin: 4mm 0; }
.fact { border: 1px solid var(--line); border-left: 3px solid var(--accent); padding: 2mm 3mm; }
.fact span { display: block; color: var(--muted); font-size: 8.5pt; text-transform: uppercase; letter-spacing: .04em; }
.fact b { display: block; font-size: 12pt; }
.banner { border: 2px solid var(--warn); background: var(--warnbg); color: var(--warn); padding: 2.5mm 4mm;
          font-weight: bold; break-inside: avoid; }
table { border-collapse: collapse; width: 100%; margin: 2mm 0 3mm; font-size: 9pt; break-inside: avoid;
        page-break-inside: avoid; }
th, td { border-bottom: 1px solid var(--line); padding: 1.2mm 2mm; text-align: left; vertical-align: top; }
thead th { background: #eef2f6; border-bottom: 1.5px solid #b9c2cc; }
tbody th { width: 30mm; background: #f6f8fa; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.released td { font-weight: bold; background: #f1f6fa; }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 8.5pt; overflow-wrap: anywhere; }
figure { margin: 3mm 0 2mm; break-inside: avoid; page-break-inside: avoid; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 8.5pt; margin-top: 1mm; }
section { margin-bottom: 2mm; }
@page { size: A4; margin: 15mm 14mm 16mm; }
@media print {
  html { font-size: 9.5pt; }
  body { max-width: none; margin: 0; padding: 0; }
  .confidential { position: fixed; top: 0; left: 0; right: 0; margin: 0; padding: 1.5mm 3mm; font-size: 9pt; }
  body.confidential-page { padding-top: 14mm; }
}
"""


def _page(title: str, content: str, *, confidential: bool = False) -> str:
    body_class = ' class="confidential-page"' if confidential else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="generator" content="privelet-gui {_e(__version__)}">
<title>{_e(title)}</title>
<style>{_CSS}</style></head>
<body{body_class}>
{content}
</body></html>
"""


def _bar_chart(groups: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *, y_title: str) -> str:
    """Grouped bars on a log scale as inline SVG; a group label's ``|`` starts its second line."""
    width, height, left, right, top, bottom = 680, 290, 64, 12, 40, 46
    values = [v for _, vs in series for v in vs if math.isfinite(v) and v > 0]
    if not values:
        return ""
    low = 10.0 ** math.floor(math.log10(min(values)))
    high = 10.0 ** math.ceil(math.log10(max(values)))
    if high <= low:
        high = low * 10
    span = math.log10(high) - math.log10(low)
    plot_h = height - top - bottom

    def y(value: float) -> float:
        return top + plot_h * (1.0 - (math.log10(value) - math.log10(low)) / span)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{_e(y_title)} by query size" font-family="DejaVu Sans, Arial, sans-serif" font-size="11">']
    for power in np.arange(math.log10(low), math.log10(high) + 0.5):
        tick = 10.0 ** power
        ty = y(tick)
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#d3d8de"/>')
        out.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="#59626c">{_e(_tick(tick))}</text>')
    out.append(f'<text x="14" y="{top + plot_h / 2:.1f}" transform="rotate(-90 14 {top + plot_h / 2:.1f})" '
               f'text-anchor="middle" fill="#59626c">{_e(y_title)}</text>')
    band = (width - left - right) / max(len(groups), 1)
    bar = band * 0.78 / max(len(series), 1)
    for g, group in enumerate(groups):
        x0 = left + g * band + band * 0.11
        for s, (name, vs) in enumerate(series):
            if g >= len(vs) or not (math.isfinite(vs[g]) and vs[g] > 0):
                continue
            top_y = y(vs[g])
            out.append(f'<rect x="{x0 + s * bar:.1f}" y="{top_y:.1f}" width="{bar - 2:.1f}" '
                       f'height="{top + plot_h - top_y:.1f}" fill="{_COLOURS[s % len(_COLOURS)]}">'
                       f"<title>{_e(name)}: {_e(_n(vs[g]))}</title></rect>")
        first, _, second = group.partition("|")
        cx = left + g * band + band / 2
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{_e(first)}</text>')
        if second:
            out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 30}" text-anchor="middle" fill="#59626c" '
                       f'font-size="10">{_e(second)}</text>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#59626c"/>')
    x = float(left)
    for s, (name, _) in enumerate(series):
        out.append(f'<rect x="{x:.0f}" y="12" width="11" height="11" fill="{_COLOURS[s % len(_COLOURS)]}"/>')
        out.append(f'<text x="{x + 15:.0f}" y="22">{_e(name)}</text>')
        x += 26 + 6.5 * len(name)
    out.append("</svg>")
    return "".join(out)


def _tick(value: float) -> str:
    return f"{value:,.0f}" if 1 <= value < 1e7 else f"{value:g}"
