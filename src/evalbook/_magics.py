"""The `%eval` line magic and `%%eval` cell magic (`%load_ext evalbook`).

They only wrap the public API (`eb.runs`, `eb.show`, `eb.compare`, `eb.run`, `eb.pool`,
`eb.import_results`, `eb.export_otel`) and, like the CLI, find runs and export tables through
`evalbook._api._refs`. IPython is imported here, and
this module is imported only by `load_ipython_extension`.
"""

from __future__ import annotations

import ast
import keyword
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import pandas as pd
from IPython.core import magic as _magic_module
from IPython.core import magic_arguments as _ma
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class

from ._api._entry import run as run_eval
from ._api._import import import_results
from ._api._refs import (
    TABLES,
    USER_ERRORS,
    column_names,
    export_table,
    missing_store,
    resolve_run,
    score_names,
    user_error_line,
)
from ._api._run import Run
from ._compare._compare import Comparison, compare
from ._compare._pool import pool
from ._errors import ConfigurationError
from ._interop._formats import FORMATS
from ._interop._otel import export_otel
from ._model._definitions import ScoreDefinition
from ._model._slices import SMALL
from ._store._listing import runs
from ._store._log._read import SchemaVersionError
from .display import show

__all__ = ["load_ipython_extension", "task_from_cell"]

# each line subcommand: its fewest and most words, its usage
_SUBCOMMANDS = {
    "runs": (0, 1, "%eval runs [STORE]"),
    "show": (1, 1, "%eval show RUN [--by COL] [--cluster COL] [--attempts]"),
    "compare": (2, 2, "%eval compare A B [--score NAME] [--by COL] [--cluster COL]"),
    "export": (2, 2, "%eval export RUN PATH  |  %eval export RUN --otlp URL"),
    "import": (1, 1, "%eval import PATH [--format F] [--name N]"),
}
# `--attempts` is the cell magic's tries per sample (a number) and `show`'s flag (no number)
_ATTEMPTS_FLAG = -1
_CELL_ONLY = (
    "scorers",
    "scores",
    "name",
    "concurrency",
    "attempts",
    "epochs",
    "timeout",
    "max_cost",
    "as_",
)
_RESERVED = {"row", "ctx", "case_id", "epoch", "output", "kwargs"}
# argparse %-formats each help string, so "%%eval" would print as "%eval" in `%eval?`: the
# label of the cell magic's options doubles each % once more
_CELL = "%%%%eval: "

_F = TypeVar("_F", bound=Callable[..., Any])
# IPython's argument decorators are untyped: give them a typed face for mypy --strict.
_argument: Any = _ma.argument
_parse_argstring: Any = _ma.parse_argstring
_magic_arguments: Any = _ma.magic_arguments
_line_cell_magic: Any = _magic_module.line_cell_magic
_no_var_expand: Any = _magic_module.no_var_expand


def _typed(decorator: Any) -> Callable[[_F], _F]:
    return cast(Callable[[_F], _F], decorator)


def magic_arguments() -> Callable[[_F], _F]:
    """`IPython.core.magic_arguments.magic_arguments` (usage in the docstring, for `%eval?`)."""
    return _typed(_magic_arguments())


def argument(*args: Any, **kwargs: Any) -> Callable[[_F], _F]:
    """`IPython.core.magic_arguments.argument`."""
    return _typed(_argument(*args, **kwargs))


no_var_expand: Callable[[_F], _F] = _typed(_no_var_expand)
line_cell_magic: Callable[[_F], _F] = _typed(_line_cell_magic)


def _is_top_level_async(tree: ast.Module) -> bool:
    """True when the body awaits outside any nested function (it becomes an `async def`)."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Await | ast.AsyncFor | ast.AsyncWith):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def _assigns_output(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == "output" and isinstance(n.ctx, ast.Store)
        for n in ast.walk(tree)
    )


def task_from_cell(
    body: str, columns: list[str], namespace: dict[str, Any], name: str
) -> Callable[..., Any]:
    """Turn a `%%eval` cell body into a task function.

    The body becomes the body of a function whose parameters are the case's columns (those
    that are identifiers) plus `row`, `ctx` and `case_id`; its globals are the notebook's
    namespace. The output is `output` if the body assigns it, else the last expression.

    Raises:
        UsageError: the body does not parse, or has neither `output = ...` nor a final
            expression.
    """
    try:
        tree = ast.parse(body, filename="<%%eval cell>")
    except SyntaxError as exc:
        raise UsageError(f"%%eval cell: {exc.msg} (line {exc.lineno})") from None
    if _assigns_output(tree):
        tree.body.append(ast.Return(value=ast.Name(id="output", ctx=ast.Load())))
    elif tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        assert isinstance(last, ast.Expr)
        tree.body[-1] = ast.copy_location(ast.Return(value=last.value), last)
    else:
        raise UsageError(
            "%%eval cell: assign the case's output to `output`, or end the cell with an "
            "expression whose value is the output"
        )
    params = [
        c for c in columns if c.isidentifier() and not keyword.iskeyword(c) and c not in _RESERVED
    ]
    params = list(dict.fromkeys(params))
    arguments = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg=p) for p in (*params, "row", "ctx", "case_id", "epoch")],
        kwonlyargs=[],
        kw_defaults=[],
        defaults=[],
    )
    cls = ast.AsyncFunctionDef if _is_top_level_async(tree) else ast.FunctionDef
    func = cls(name=name, args=arguments, body=tree.body, decorator_list=[], returns=None)
    module = ast.Module(body=[func], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, "<%%eval cell>", "exec")
    scope: dict[str, Any] = {}
    exec(code, namespace, scope)  # defines the function; globals are the notebook's
    task: Callable[..., Any] = scope[name]
    return task


def _split(names: str | None) -> list[str]:
    return [n.strip() for n in (names or "").split(",") if n.strip()]


def sliced_summary(run: Run, by: list[str] | None, cluster: str | None) -> pd.DataFrame:
    """`run.summary(by=, cluster=)` with a `small` column: fewer than 10 counted cases in
    the slice (`n_clusters`, so fewer than 10 clusters with `cluster`)."""
    summary = run.summary(by=by, cluster=cluster)
    summary["small"] = summary["n_clusters"].to_numpy() < SMALL
    return summary


@magics_class
class EvalMagics(Magics):
    """`%eval runs|show|compare|export ...` and the `%%eval DATA ...` cell magic."""

    @magic_arguments()
    @argument(
        "words",
        nargs="*",
        help="runs [STORE] | show RUN | compare A B | export RUN PATH | import PATH  (line);  "
        "DATA  (cell)",
    )
    @argument("--scorers", metavar="A,B", help=_CELL + "scorer variables, comma-separated")
    @argument("--scores", metavar="X,Y", help=_CELL + "further score definitions (or names)")
    @argument("--name", metavar="N", help=_CELL + "the run's name (default: the DATA name); import")
    @argument("--concurrency", type=int, metavar="K", help=_CELL + "cases in flight (8)")
    @argument(
        "--attempts",
        type=int,
        nargs="?",
        const=_ATTEMPTS_FLAG,
        metavar="N",
        help=_CELL + "tries per sample (1); show RUN --attempts (no N): run.attempts()",
    )
    @argument("--epochs", type=int, metavar="K", help=_CELL + "times each case runs (1)")
    @argument("--timeout", type=float, metavar="S", help=_CELL + "seconds per task attempt")
    @argument("--max-cost", type=float, metavar="USD", help=_CELL + "the run's budget, US dollars")
    @argument("--as", dest="as_", metavar="VAR", help=_CELL + "also bind the Run to VAR")
    @argument("--score", metavar="NAME", help="compare: the score to compare")
    @argument("--by", metavar="COL", help="show, compare: one row per (slice, score) of COL(s)")
    @argument("--cluster", metavar="COL", help="show, compare: cluster-robust intervals on COL")
    @argument("--table", choices=TABLES, default="scores", help="export: which table (scores)")
    @argument("--pool", action="store_true", help="show A B ...: eb.pool of the runs")
    @argument("--otlp", metavar="URL", help="export RUN --otlp URL: eb.export_otel to URL")
    @argument(
        "--otlp-steps", action="store_true", help="export --otlp: also a span per transcript step"
    )
    @argument("--format", choices=list(FORMATS), help="import: the format (default: detected)")
    @argument("--store", metavar="DIR", default="runs", help="the run store (runs)")
    @no_var_expand
    @line_cell_magic
    def eval(self, line: str, cell: str | None = None) -> Any:
        """Run, show, compare and export evaluations from a notebook.

        Line magic::

            %eval runs [STORE]             the stored runs, as a DataFrame
            %eval show RUN                 the interactive view of a run (or a Comparison)
            %eval show RUN --by COL        run.summary(by=COL): one row per (slice, score)
            %eval compare A B [--score X]  eb.compare(A, B): the Comparison
            %eval compare A B --by COL     eb.compare(A, B, by=COL), a row per (slice, score)
            %eval show RUN --attempts      run.attempts(): one row per attempt
            %eval show A B C --pool        eb.pool([A, B, C]) (with --by COL: by slice)
            %eval export RUN PATH          write a table to PATH (.csv, .parquet or .pq)
            %eval export RUN --otlp URL    eb.export_otel(RUN, endpoint=URL)
            ... --otlp URL --otlp-steps    eb.export_otel(RUN, endpoint=URL, steps=True)
            %eval import PATH              eb.import_results(PATH): another harness's run

        RUN is a variable, a run folder, or a run name (or id) in the store (latest first).
        ``--by a,b`` slices by several columns; ``--cluster COL`` (show, compare) makes the
        intervals cluster-robust. ``show --by`` returns the sliced summary with a ``small``
        column (fewer than 10 counted cases, or clusters with ``--cluster``).

        Cell magic: ``%%eval DATA [--scorers a,b] [--scores x,y] [--name N] [--as VAR] ...``;
        the cell body is the task, run once per row of DATA: the row's columns, ``row``,
        ``ctx`` and ``case_id`` are variables, and ``output`` (or the last expression) is
        the output. Returns the Run.
        """
        args = _parse_argstring(self.eval, line)
        if cell is not None:
            return self._cell(args, cell)
        return self._line(args)

    @property
    def _ns(self) -> dict[str, Any]:
        shell = self.shell
        if shell is None:  # pragma: no cover - registered magics always have a shell
            raise UsageError("%eval needs a running IPython shell")
        ns: dict[str, Any] = shell.user_ns
        return ns

    # -- line magic ----------------------------------------------------------------------

    def _line(self, args: Any) -> Any:
        command = args.words[0] if args.words else None
        line_too = {"name": "import", "attempts": "show"}  # cell options a line command takes
        misplaced = [
            "--" + o.rstrip("_").replace("_", "-")
            for o in _CELL_ONLY
            if getattr(args, o, None) is not None and line_too.get(o) != command
        ]
        if misplaced:
            raise UsageError(f"{', '.join(misplaced)}: only for the %%eval cell magic")
        if args.attempts not in (None, _ATTEMPTS_FLAG):
            raise UsageError("show RUN --attempts takes no number (--attempts N: %%eval only)")
        for option in ("by", "cluster"):
            if getattr(args, option) is not None and command not in ("show", "compare"):
                raise UsageError(f"--{option}: only for %eval show and %eval compare")
        for option, only in (("pool", "show"), ("otlp", "export"), ("format", "import")):
            if getattr(args, option) not in (None, False) and command != only:
                raise UsageError(f"--{option}: only for %eval {only}")
        if args.otlp_steps and args.otlp is None:
            raise UsageError("--otlp-steps applies only with --otlp URL (%eval export)")
        if not args.words:
            raise UsageError(
                "%eval needs a subcommand: runs [STORE] | show RUN | compare A B | "
                "export RUN PATH  (see %eval?)"
            )
        command, rest = args.words[0], args.words[1:]
        if command not in _SUBCOMMANDS:
            raise UsageError(
                f"%eval: unknown subcommand {command!r}; use one of {', '.join(_SUBCOMMANDS)} "
                "(or %%eval DATA as a cell magic)"
            )
        fewest, most, usage = _SUBCOMMANDS[command]
        if command == "show" and args.pool:
            most = len(rest)  # as `evalbook show A B C --pool`: one run or more
        if command == "export" and args.otlp is not None:
            fewest = most = 1
        if not fewest <= len(rest) <= most:
            raise UsageError(f"usage: {usage}")
        try:
            if command == "runs":
                store = rest[0] if rest else args.store
                if not Path(store).is_dir():  # as `evalbook runs` says it
                    raise UsageError(missing_store(store))
                return runs(store)
            sliced = args.by is not None or args.cluster is not None
            by = column_names(args.by) or None  # the CLI's reading and its message
            if command == "import":
                return import_results(rest[0], format=args.format, name=args.name)
            if command == "show" and (args.pool or args.attempts is not None):
                return self._show_more(args, rest, by)
            if command == "show":
                value = self._ns.get(rest[0]) if rest[0].isidentifier() else None
                if isinstance(value, Comparison) and not sliced:  # a Comparison variable too
                    return show(value)
                run = resolve_run(rest[0], args.store, self._ns)
                if sliced:
                    return sliced_summary(run, by, args.cluster)
                return show(run)
            if command == "compare":
                a, b = (resolve_run(r, args.store, self._ns) for r in rest)
                score = score_names(a, b, args.score)  # as `evalbook compare --score` reads it
                if sliced:
                    return compare(a, b, score=score, by=by, cluster=args.cluster)
                return compare(a, b, score=score)
            run = resolve_run(rest[0], args.store, self._ns)
            if args.otlp is not None:
                return export_otel(run, endpoint=args.otlp, steps=args.otlp_steps)
            return export_table(run, rest[1], args.table).path
        except USER_ERRORS as exc:  # one line, as the CLI prints it (no traceback)
            raise UsageError(user_error_line(exc)) from None

    def _show_more(self, args: Any, refs: list[str], by: list[str] | None) -> Any:
        """`show RUN --attempts` (run.attempts()) and `show A B ... --pool` (eb.pool)."""
        if args.pool and args.attempts is not None:
            raise UsageError("--attempts does not apply with --pool: leave one out")
        if args.pool:
            if args.cluster is not None:  # as `evalbook show --pool` says it
                raise UsageError(
                    "--cluster does not apply with --pool: each run's intervals use its own "
                    "cluster column (eb.run(cluster=)); leave --cluster out"
                )
            return pool([resolve_run(r, args.store, self._ns) for r in refs], by=by)
        if args.by is not None or args.cluster is not None:
            raise UsageError("--by and --cluster do not apply with --attempts: leave them out")
        return resolve_run(refs[0], args.store, self._ns).attempts()

    # -- cell magic ----------------------------------------------------------------------

    def _cell(self, args: Any, cell: str) -> Run:
        if args.attempts == _ATTEMPTS_FLAG:
            raise UsageError("%%eval --attempts N: give the tries per sample, e.g. --attempts 3")
        for option in ("pool", "otlp", "otlp_steps", "format"):
            if getattr(args, option) not in (None, False):
                raise UsageError(f"--{option.replace('_', '-')}: only for the %eval line magic")
        if len(args.words) != 1:
            raise UsageError(
                "usage: %%eval DATA [--scorers a,b] [--scores x,y] [--name N] "
                "[--concurrency K] [--attempts N] [--epochs K] [--timeout S] [--max-cost USD] "
                "[--as VAR]"
            )
        if args.score is not None:
            raise UsageError("--score: only for %eval compare")
        if args.as_ is not None and (not args.as_.isidentifier() or keyword.iskeyword(args.as_)):
            raise UsageError(f"--as {args.as_!r}: not a valid variable name")
        ns = self._ns
        data_name = args.words[0]
        data = self._data(data_name)
        scorers = []
        for n in _split(args.scorers):
            if n not in ns:
                raise UsageError(f"--scorers: no variable named {n!r} in the notebook")
            scorers.append(ns[n])
        scores: list[ScoreDefinition | str] = []
        for n in _split(args.scores):
            value = ns.get(n)
            scores.append(value if isinstance(value, ScoreDefinition) else n)
        name = args.name or (Path(data_name).stem if not data_name.isidentifier() else data_name)
        task = task_from_cell(cell, [str(c) for c in data.columns], ns, "eval_cell")
        options: dict[str, Any] = {
            k: getattr(args, k)
            for k in ("concurrency", "attempts", "epochs", "timeout", "max_cost")
            if getattr(args, k) is not None
        }
        try:
            result: Run = run_eval(
                data, task, scorers=scorers, scores=scores, name=name, store=args.store, **options
            )
        except (ConfigurationError, SchemaVersionError, OSError) as exc:  # not the task's errors
            raise UsageError(user_error_line(exc)) from None
        if args.as_:
            ns[args.as_] = result
        return result

    def _data(self, ref: str) -> pd.DataFrame:
        ns = self._ns
        if ref.isidentifier() and ref in ns:
            value = ns[ref]
            if isinstance(value, pd.DataFrame):
                return value
            raise UsageError(f"{ref} is a {type(value).__name__}, not a pandas DataFrame")
        path = Path(ref).expanduser()
        readers: dict[str, Callable[[Path], pd.DataFrame]] = {
            ".csv": pd.read_csv,
            ".parquet": pd.read_parquet,
            ".pq": pd.read_parquet,  # the extension `%eval export` and the CLI also write
            ".jsonl": lambda path: pd.read_json(path, lines=True),
        }
        if path.suffix.lower() in readers and path.is_file():
            try:
                return readers[path.suffix.lower()](path)
            except (OSError, ValueError) as exc:  # unreadable, damaged, not that format
                raise UsageError(
                    f"%%eval {ref}: cannot read {path} as "
                    f"{path.suffix.lower().lstrip('.')}: {user_error_line(exc)}"
                ) from None
        raise UsageError(
            f"%%eval {ref}: DATA must name a DataFrame variable or a .csv, .parquet, .pq or "
            ".jsonl file"
        )


def load_ipython_extension(ipython: Any) -> None:
    """Register `%eval` / `%%eval` (called by `%load_ext evalbook`)."""
    ipython.register_magics(EvalMagics)
