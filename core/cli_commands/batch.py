"""``marginalia-cli batch predict|evaluate``: the same work spread over a Dask cluster."""

from __future__ import annotations

import argparse

from ..batch import ClusterError, configured_scheduler
from ._common import UsageError, check_output, info, require_file

__all__ = ["add_parser", "run"]

HELP = "predict or evaluate many items on a Dask cluster (local by default), resumably"
EPILOG = """\
By default a local Dask cluster is started with one single-threaded worker process per core
(--workers N to change). To use machines of your own, start a scheduler and workers that can read the
same files (same paths) and have Marginalia installed, then point --scheduler at the scheduler:

  dask scheduler                                   # prints tcp://HOST:8786
  dask worker tcp://HOST:8786 --nthreads 1         # on every machine, as many as you like
  marginalia-cli batch predict cgh.model --profiles /shared/profiles.csv.gz --out /shared/out \\
      --scheduler tcp://HOST:8786

Workers read the inputs themselves (only paths and (profile, chromosome) keys are sent). Each item's
output is written atomically as it finishes, so an interrupted batch resumes where it stopped (items
already done with the same model are skipped). Items that fail are listed at the end (exit code 1).

examples:
  marginalia-cli batch predict cgh.model --profiles profiles.csv.gz --out predictions/ --workers 2
  marginalia-cli batch evaluate cgh.model --profiles profiles.csv.gz --annotations annotations.csv
  marginalia-cli batch predict cgh.model data/ --out predictions/ --scheduler tcp://10.0.0.5:8786
"""


def _cluster_options(p) -> None:
    g = p.add_argument_group("cluster")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="address of a running Dask scheduler (tcp://host:8786); default: Dask's configuration "
                        "(DASK_SCHEDULER_ADDRESS), else a local cluster")
    g.add_argument("--scheduler-file", metavar="FILE",
                   help="the scheduler file of a running Dask scheduler (dask scheduler --scheduler-file, "
                        "dask-jobqueue, dask-mpi)")
    g.add_argument("--workers", type=int, metavar="N", help="local cluster: number of worker processes "
                                                            "(default: the number of cores)")
    g.add_argument("--threads", action="store_true",
                   help="local cluster: threads in this process instead of worker processes")
    g.add_argument("--timeout", type=float, default=5.0, metavar="S",
                   help="seconds to wait for the scheduler (default 5)")


def add_parser(sub, parents) -> None:
    from .evaluate import add_evaluate_arguments
    from .predict import add_model_inputs
    p = sub.add_parser("batch", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    bsub = p.add_subparsers(dest="batch_command", metavar="{predict,evaluate}", parser_class=type(p))
    pp = bsub.add_parser("predict", help="`predict` on the cluster", parents=parents, epilog=EPILOG,
                         description="Run `marginalia-cli predict` on a Dask cluster.",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_inputs(pp)
    _cluster_options(pp)
    pe = bsub.add_parser("evaluate", help="`evaluate` on the cluster (profiles form)", parents=parents,
                         epilog=EPILOG, description="Run `marginalia-cli evaluate` on a Dask cluster.",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    add_evaluate_arguments(pe)
    pe.add_argument("--work", metavar="DIR", help="keep per-sequence results here so a rerun resumes")
    _cluster_options(pe)
    p.set_defaults(run=run)


def run(args) -> int:
    from ..batch import open_client
    from ..exceptions import require_extra
    require_extra("distributed", "batch", "marginalia-cli batch")
    if args.batch_command is None:
        raise UsageError("batch needs a subcommand: `batch predict ...` or `batch evaluate ...`")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: expected a positive number, got {args.workers}")
    if args.scheduler and args.scheduler_file:
        raise UsageError("give --scheduler or --scheduler-file, not both")
    source = "--scheduler"
    if not args.scheduler and not args.scheduler_file and args.workers is None and not args.threads:
        args.scheduler = configured_scheduler()
        source = "DASK_SCHEDULER_ADDRESS"
    if (args.scheduler or args.scheduler_file) and (args.workers is not None or args.threads):
        raise UsageError("--workers/--threads size a local cluster; they do not apply with --scheduler")
    if not args.timeout > 0:
        raise UsageError(f"--timeout: expected a positive number of seconds, got {args.timeout}")
    _check_inputs_first(args)
    where = (f"the scheduler of {args.scheduler_file}" if args.scheduler_file else
             f"{args.scheduler} (from {source})" if args.scheduler else
             f"a local cluster of {args.workers or 'one worker per core'}")
    info(args, f"batch: connecting to {where}")
    with open_client(args.scheduler, scheduler_file=args.scheduler_file, n_workers=args.workers,
                     processes=not args.threads, timeout=args.timeout) as client:
        link = getattr(client, "dashboard_link", None) if _has_dashboard(client) else None
        if link:
            info(args, f"batch: dashboard at {link}")
        try:
            client.wait_for_workers(1, timeout=args.timeout)
        except (TimeoutError, OSError):
            raise ClusterError(f"the Dask scheduler at {args.scheduler or args.scheduler_file} has no worker after "
                               f"{args.timeout:g} s; "
                               f"start some with `dask worker {args.scheduler} --nthreads 1`") from None
        n = len(client.scheduler_info().get("workers", {}))
        _check_workers(client)
        info(args, f"batch: {n} worker(s) ready")
        if args.batch_command == "predict":
            from .predict import predict_inputs
            return predict_inputs(args, client=client, label="batch predict")
        from .evaluate import dispatch
        return dispatch(args, client=client, work_dir=args.work)


def _has_dashboard(client) -> bool:
    """Whether the scheduler serves a dashboard (without one, ``dashboard_link`` is a guess).

    The scheduler keeps its HTTP port without bokeh, but every dashboard page is then a 404, so
    bokeh is looked for where the scheduler runs.
    """
    def bokeh_importable() -> bool:  # nested: pickled by value, so the scheduler needs no Marginalia
        import importlib.util
        return importlib.util.find_spec("bokeh") is not None

    try:
        return (bool(client.scheduler_info().get("services", {}).get("dashboard"))
                and bool(client.run_on_scheduler(bokeh_importable)))
    except Exception:  # noqa: BLE001 - a link is a convenience, never a reason to fail
        return False


def _check_workers(client) -> None:
    """Every worker can import Marginalia (a remote worker without it would fail every item)."""
    from ._work import warm_imports
    try:
        client.run(warm_imports)
    except Exception as exc:  # noqa: BLE001 - whatever the worker raised, the fix is the same
        raise ClusterError(f"a Dask worker cannot run Marginalia ({type(exc).__name__}: {exc}); install the same "
                           "Marginalia version on every worker machine") from None


def _check_inputs_first(args) -> None:
    """Usage errors before starting a cluster (which takes seconds)."""
    if args.model is not None:
        require_file("MODEL", args.model, "model file", stdin=False)
    if getattr(args, "out", None):
        check_output("--out", args.out, "folder" if args.batch_command == "predict" else "file")
    if args.batch_command == "predict" and not args.inputs and not args.profiles:
        raise UsageError("nothing to predict: give INPUTS (files or folders) or --profiles P.csv")
    if args.batch_command == "predict":
        from ..models.files import load_model
        from .predict import refuse_sync_model
        refuse_sync_model(args.model, load_model(args.model).task)
