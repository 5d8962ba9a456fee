"""``privelet advise``: how coarse each attribute's domain should be for the expected queries (no data needed)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import UsageError, epsilon_type, fmt, parse_sa, progress_bar
from .release import public_total_of, workload_of, workload_options

__all__ = ["register"]


def register(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's commands to the ``privelet`` parser."""
    p = commands.add_parser(
        "advise", parents=[common], help="suggest coarser domains for your queries (no data needed)",
        description="For the workload you expect, say how much each attribute multiplies the expected error and "
                    "suggest concrete changes of the schema (bins of a width, a hierarchy level, dropping an "
                    "attribute no query constrains), each with its predicted error. Data-independent: it reads the "
                    "schema only and costs no privacy. Suggestions keep every query of the workload exact, so "
                    "their predicted error is the whole error; changes that leave some query inexact are listed "
                    "apart (--lossy), with the share of queries kept exact and the bias the others risk: they are "
                    "answered by spreading a coarse cell's count evenly over its values (--across spread, the "
                    "default) or by rounding out to whole bins or groups (--across round-out).",
    )
    p.add_argument("--schema", required=True, metavar="S.json", help="schema file")
    p.add_argument("--epsilon", type=epsilon_type, default=1.0, metavar="E", help="privacy budget (default 1)")
    p.add_argument("--mechanism", choices=("best", "privelet"), default=None,
                   help="what the current schema and every suggestion are released with: best (the default unless "
                        "--sa is given: the per-axis strategies chosen for each one's workload, as 'privelet release' "
                        "does) or privelet (Privelet+ with --sa's S_A)")
    p.add_argument("--sa", metavar="A,B|recommended|best|none", default=None,
                   help="with --mechanism privelet, S_A of the current schema and of every suggestion: 'best' (the "
                        "default: each one's best for the workload), 'recommended' (each one's by the paper's rule; "
                        "'auto', its earlier name, works too), or a list or 'none' kept for all (less a dropped "
                        "attribute)")
    p.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace", help="neighbouring notion")
    p.add_argument("--raw", action="store_true", help="errors of the raw release (not shifted to the public total)")
    workload_options(p)
    p.add_argument("--rows", type=int, metavar="N", help="the table's number of rows, to say how big a typical count is")
    p.add_argument("--top", type=int, default=10, metavar="K", help="suggestions to show (default 10; under the best strategy, the changes that get a strategy "
                        "search of their own: the best K lossless and the first K lossy after a quick screen)")
    p.add_argument("--lossy", action="store_true",
                   help="also list the changes that leave some query inexact (after the lossless ones, numbered on)")
    p.add_argument("--across", choices=("spread", "round-out"), default="spread",
                   help="how a lossy change answers a query across coarser bins: spread a coarse cell's count evenly "
                        "over its values (default) or round out to whole bins")
    p.add_argument("--apply", type=int, metavar="I", help="write the schema of suggestion I (1 = the first shown) to --out")
    p.add_argument("--out", metavar="S.json", help="schema file to write with --apply")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_advise)


def _cmd_advise(args: argparse.Namespace) -> int:
    from ..engine import InternalError, ReleaseSpec, advise
    from ..engine.descriptions import describe_measurements
    from ..io import check_writable, load_schema, save_schema

    if (args.apply is None) != (args.out is None):
        raise UsageError("--apply I and --out S.json go together")
    out = check_writable(args.out, force=args.force) if args.out is not None else None
    best = (args.mechanism or ("privelet" if args.sa is not None else "best")) == "best"
    if best and args.sa is not None:
        raise UsageError("--sa is Privelet+'s S_A: give it with --mechanism privelet (the best strategy chooses "
                         "every attribute's strategy)")
    schema = load_schema(args.schema)
    rule, given = parse_sa("best" if args.sa is None else args.sa, schema)
    spec = ReleaseSpec(schema, args.epsilon, "privelet+", given, args.neighbours, public_total=public_total_of(args))
    workload = workload_of(args, schema)
    top = max(args.top, 0)
    bar = progress_bar(args)
    try:
        advice = advise(spec, workload, objective=args.objective, sa_rule=rule, answering=args.across,
                        strategies="best" if best else "spec", searched=top, progress=bar)
    finally:
        bar.close()
    shown = advice.suggestions[:top]
    lossy = advice.lossy[:top] if args.lossy else ()
    listed = (*shown, *lossy)
    if args.apply is not None:
        if not 1 <= args.apply <= len(listed):
            raise UsageError(f"--apply takes a suggestion number from 1 to {len(listed)}" if listed
                             else "--apply: there is no suggestion for this workload")
        chosen = listed[args.apply - 1]
        if out is None:
            raise InternalError("--apply passed the check that --out goes with it, without --out")
        save_schema(chosen.schema, out, force=args.force)
    if args.json:
        def entry(s: Any) -> dict[str, Any]:
            return {"kind": s.kind, "attribute": s.attribute, "description": s.description, "sa": list(s.sa),
                    "error": s.error, "factor": s.factor, "exact_share": s.exact_share, "lossless": s.lossless,
                    "answering": s.answering, "estimated_share": s.estimated_share, "added_share": s.added_share,
                    "strategies": list(s.strategies), "marginals": _marginals_json(s.marginals)}

        result: dict[str, Any] = {
            "workload": {"name": workload.name, "queries": len(workload), "objective": args.objective},
            "mechanism": "best" if best else "privelet",
            "sa": list(advice.spec.effective_sa),
            "strategies": list(advice.spec.axis_strategies) if best else [],
            "marginals": _marginals_json(advice.spec.marginals),
            "error": advice.error,
            "margin95": advice.margin95,
            "multipliers": [{"attribute": m.name, "in_sa": m.in_sa, "multiplier": m.multiplier,
                             "constrained": m.constrained} for m in advice.multipliers],
            "suggestions": [entry(s) for s in shown],
            "lossy": [entry(s) for s in lossy],
            "answering": advice.answering,
        }
        print(json.dumps(result, indent=2))
        return 0
    print(f"workload {workload.name} ({len(workload):,} queries), epsilon {args.epsilon:g}, neighbours {args.neighbours}")
    if best:
        print(f"best strategy ({describe_measurements(advice.spec)}): expected error "
              f"{fmt(advice.error)}; {advice.sentence(args.rows)}")
    else:
        print(f"S_A {{{', '.join(advice.spec.effective_sa)}}}: expected error {fmt(advice.error)}; "
              f"{advice.sentence(args.rows)}")
    print("each attribute multiplies the error by (error / error without it"
          + (", the others keeping their strategies):" if best else "):"))
    for m in advice.multipliers:
        queried = "" if m.constrained else ", no query constrains it"
        print(f"  {m.name:<20} x{m.multiplier:,.2f} ({m.measured}{queried})")
    if shown:
        print("suggestions (every query stays exact; the predicted error is the whole error):")
    else:
        print("no lossless change makes this workload's error smaller")
    for number, s in enumerate(shown, start=1):
        print(f"  {number}. {s.description}: error {fmt(s.error)}, {s.factor:,.2f}x smaller"
              + (f" (then {s.measured})" if s.measured else ""))
    if lossy:
        print("lossy changes (predicted noise only; the inexact queries are biased by an amount that depends on the "
              "data):")
    elif not args.lossy and advice.lossy:
        print(f"({len(advice.lossy)} lossy change(s) not shown: some queries would no longer be exact; --lossy lists them)")
    for number, s in enumerate(lossy, start=len(shown) + 1):
        print(f"  {number}. {s.description}: noise {fmt(s.error)}, {s.factor:,.2f}x smaller; {s.exact_share:.0%} of "
              f"the queries exact, {s.bias_text()}")
    if args.apply is not None:
        print(f"wrote {out} (suggestion {args.apply}); count the table again with it")
    return 0


def _marginals_json(marginals: tuple[tuple[tuple[str, ...], int], ...]) -> list[dict[str, Any]]:
    return [{"attributes": list(names), "weight": weight} for names, weight in marginals]
