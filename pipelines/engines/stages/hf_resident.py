"""The hf engine kept across a GeoBuild run's rounds, as vLLM's is (`vllm_resident`).

Each round is its own Ray Data pipeline; the hf stage as an actor pool (`engine_stages.
hf_stage`) would load the model again every round. Here `HFEngine` lives in long-lived,
restartable host actors (`resident_hosts`), each round's pipeline forwarding its batches to
them: the weights load once per run, and a host whose node is lost is started again on
another node (fetching the model's mirror there) with the batches it held answered there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages.engine_stages import hf_placement
from pipelines.engines.stages.options import LIGHT_CPUS, EngineOptions
from pipelines.engines.stages.resident_hosts import (
    RestartableHost,
    answer,
    forget_hosts,
    forwarder_kwargs,
    node_ip,
    restartable,
    watches,
)


class HFHost(RestartableHost):
    """Ray actor: one hf engine, loaded once, answering batches of many pipelines."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        from actors.hf_engine import HFEngine

        super().__init__()
        self.engine = HFEngine(**kwargs)

    def run(self, batch: dict[str, np.ndarray]) -> tuple[str, dict[str, np.ndarray]]:
        """This node's address and the engine's rows for one batch."""
        return node_ip(), self.engine(batch)


class ForwardBatches:
    """Ray Data callable class: each batch to the next host in turn, its rows back."""

    def __init__(
        self, hosts: list[Any], model: str, demand: dict[str, float], wait_s: float
    ) -> None:
        self.watches = watches(hosts, model, demand, wait_s)
        self.turn = 0

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The host's rows for `batch`."""
        watch = self.watches[self.turn % len(self.watches)]
        self.turn += 1
        out: dict[str, np.ndarray] = answer(watch, batch)
        return out


class ResidentHF:
    """A GeoBuild engine stage (`(ds, cfg, opts) -> ds`) whose hf engines outlive each round;
    `hosts_started` counts engine loads, `rounds_served` the pipelines that used them;
    `close()` ends the hosts (the loop calls it)."""

    def __init__(self) -> None:
        self.hosts: list[Any] = []
        self.demand: dict[str, float] = {}
        self.hosts_started = 0
        self.rounds_served = 0

    def __call__(self, ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
        """The dataset through the resident hf hosts, a pool of light forwarders in front."""
        import ray

        if not self.hosts:
            self._start(cfg, opts)
        self.rounds_served += 1
        return ds.map_batches(
            ForwardBatches,
            fn_constructor_kwargs=forwarder_kwargs(self.hosts, cfg.name, self.demand),
            batch_size=opts.batch_size,
            compute=ray.data.ActorPoolStrategy(size=opts.pool_size),
            batch_format="numpy",
            num_cpus=LIGHT_CPUS,
        )

    def _start(self, cfg: ModelConfig, opts: EngineOptions) -> None:
        """The hosts, placed as `engine_stages.hf_stage` places its actors."""
        import ray

        kwargs, gpus = hf_placement(cfg, opts)
        resources = {"num_gpus": gpus} if gpus else {"num_cpus": opts.cpus_per_actor}
        self.demand = {"GPU": gpus} if gpus else {"CPU": opts.cpus_per_actor}
        host_cls = ray.remote(HFHost)
        for _ in range(opts.pool_size):
            self.hosts.append(host_cls.options(**restartable(resources)).remote(kwargs))
            self.hosts_started += 1

    def close(self) -> None:
        """Stop the hosts (their weights are freed)."""
        import ray

        for host in self.hosts:
            ray.kill(host)
        forget_hosts(self.hosts)
        self.hosts = []
