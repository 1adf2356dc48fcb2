"""`evalbook gate RUN ...`: parse the conditions, check them (`_compare/_gate.run_gate`, the
gate `eb.check` is too), print the `Check`'s report in colour; exit 0 when every condition
holds, 1 when one fails."""

from __future__ import annotations

import argparse
import sys

from .._api._refs import resolve_run
from .._compare._gate import run_gate
from .._compare._gate_checks import GateSpec
from ._args import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    RUN_HELP,
    CliError,
    count,
    drop,
    fraction,
    seconds,
    store_option,
    usd,
)
from ._terminal import Out, for_terminal

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "drop", "run"]

NAME = "gate"
HELP = "check a run against thresholds (exit 0 pass, 1 fail, 2 bad usage)"
DESCRIPTION = (
    "Check conditions on one score of a run (default: its headline score). "
    "Exit 0 when every condition holds, 1 when any fails (each failure is printed with "
    "its measured value and threshold), 2 on bad usage. Fractions are written 0.8 or 80%. "
    "With --against BASE --max-drop X it fails when the paired delta's 95% CI lower bound "
    "is below -X; an underpowered comparison (mde > X) is reported, and fails only through "
    "that bound. --max-cost checks the run's total recorded cost (unknown cost fails) and "
    "--max-latency-p95 the 95th percentile of the samples' durations; --max-infra-errors "
    "the share of samples that failed outside the model (provider, environment). An "
    "incomplete or "
    "running run never passes."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """RUN, the conditions, `--against` / `--baseline`, `--store`."""
    p.add_argument("run", metavar="RUN", help=RUN_HELP)
    p.add_argument("--score", metavar="NAME", help="score to check (default: the headline's)")
    p.add_argument("--min", type=fraction, metavar="X", help="the mean must be >= X")
    p.add_argument(
        "--min-ci-low", type=fraction, metavar="X", help="the 95%% CI's lower bound must be >= X"
    )
    p.add_argument(
        "--max-errors", type=count, metavar="N", help="at most N error records for the score"
    )
    p.add_argument(
        "--max-unscored-rate",
        type=fraction,
        metavar="R",
        help="at most this share of the cases unscored",
    )
    p.add_argument(
        "--min-completion",
        type=fraction,
        metavar="R",
        help="at least this share of the cases passed or failed (not errored/timed out/not run)",
    )
    p.add_argument(
        "--against",
        metavar="BASE",
        help="a baseline run to gate against (non-inferiority; needs --max-drop)",
    )
    p.add_argument(
        "--max-drop",
        type=drop,
        metavar="X",
        help="with --against: the paired delta's 95%% CI lower bound must be >= -X "
        "(prints the delta, its CI, the mde and, when underpowered, the paired cases needed)",
    )
    p.add_argument("--baseline", metavar="RUN", help="a baseline run, for --max-regression")
    p.add_argument(
        "--max-regression",
        type=fraction,
        metavar="D",
        help="the mean may drop by at most D from --baseline's (paired, via compare)",
    )
    p.add_argument(
        "--max-cost",
        type=usd,
        metavar="USD",
        help="the run's total recorded cost must be <= USD (a run with no known cost fails)",
    )
    p.add_argument(
        "--max-latency-p95",
        type=seconds,
        metavar="S",
        help="the 95th percentile of the samples' durations must be <= S seconds",
    )
    p.add_argument(
        "--max-infra-errors",
        type=fraction,
        metavar="R",
        help="at most this share of the samples failed outside the model (provider or "
        "environment origin)",
    )
    store_option(p)


def run(args: argparse.Namespace) -> int:
    """`evalbook gate RUN ...`: 0 when every condition holds, 1 when one fails."""
    spec = GateSpec(
        score=args.score,
        min=args.min,
        min_ci_low=args.min_ci_low,
        max_errors=args.max_errors,
        max_unscored_rate=args.max_unscored_rate,
        max_regression=args.max_regression,
        min_completion=args.min_completion,
        max_drop=args.max_drop,
        max_cost=args.max_cost,
        max_latency_p95=args.max_latency_p95,
        max_infra_errors=args.max_infra_errors,
    )
    if (args.against is None) != (args.max_drop is None):
        raise CliError("--against BASE and --max-drop X go together: give both")
    if (args.baseline is None) != (args.max_regression is None):
        raise CliError("--baseline RUN and --max-regression D go together: give both")
    if not spec.any():
        raise CliError(
            "no condition to check: give at least one of --min, --min-ci-low, --max-errors, "
            "--max-unscored-rate, --min-completion, --max-cost, --max-latency-p95, "
            "--max-infra-errors, "
            "--baseline RUN --max-regression D, --against BASE --max-drop X"
        )
    gated = resolve_run(args.run, args.store)
    baseline = resolve_run(args.baseline, args.store) if args.baseline is not None else None
    against = resolve_run(args.against, args.store) if args.against is not None else None
    out = Out(sys.stdout)
    result = run_gate(gated, spec, baseline=baseline, against=against)
    for line in result.header:  # the run (and the baseline), each with its headline
        out.line(for_terminal(line))
    for note in result.notes:
        out.line(f"note: {for_terminal(note)}", "yellow")
    for check in result.checks:
        if check.holds:
            out.line(f"{out.style('ok  ', 'green')}  {for_terminal(check.text)}")
        else:
            out.line(f"{out.style('FAIL', 'red', 'bold')}  {for_terminal(check.text)}")
        for detail in check.details:
            styles = ("yellow",) if detail.startswith("underpowered") else ()
            out.line(f"      {for_terminal(detail)}", *styles)
    if not result.passed:
        out.line(result.verdict, "red", "bold")
        return EXIT_GATE_FAILED
    out.line(result.verdict, "green", "bold")
    return EXIT_OK
