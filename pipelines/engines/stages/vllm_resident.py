"""One vLLM engine for every round of a GeoBuild run.

Each GeoBuild round is its own Ray Data pipeline, and Ray's processor starts its engine
replicas with the pipeline, so a round-per-pipeline loop would reload the weights every
round. Here the engine lives in long-lived Ray actors (`EngineHost`), each holding the
processor's engine UDF (Ray's `vLLMEngineStageUDF` with the request cache, `vllm_cache`,
built with the very constructor arguments Ray's processor gives it); every round builds
Ray's processor as usual and swaps its engine stage for a light stage that forwards batches
to the hosts. Chat template, tokenize and detokenize stay Ray's (they load only a
tokenizer). A host whose node is lost starts again on another node, with its placement
group, and the batches it held are answered there (`resident_hosts`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ray.llm._internal.batch.stages.base import StatefulStageUDF

from pipelines.engines.models.model_schema import ModelConfig
from pipelines.engines.stages.gpus import check_gpus
from pipelines.engines.stages.options import LIGHT_CPUS, EngineOptions
from pipelines.engines.stages.placement_groups import made_count, remove_made_since
from pipelines.engines.stages.resident_hosts import (
    RestartableHost,
    answer_async,
    forget_hosts,
    forwarder_kwargs,
    node_ip,
    restartable,
    watches,
)
from pipelines.engines.stages.vllm_path import build_vllm_processor, engine_stage_of
from pipelines.engines.stages.vllm_rows import normalise_engine_errors

# Resource options of Ray's engine stage that the host actor takes over.
HOST_OPTIONS = ("num_gpus", "accelerator_type", "runtime_env")


class EngineHost(RestartableHost):
    """Ray actor: one vLLM engine, loaded once, answering batches of many pipelines."""

    def __init__(self, udf_cls: type, udf_kwargs: dict[str, Any]) -> None:
        super().__init__()
        # Ray's vLLMEngineStageUDF, or it with the request cache (vllm_cache).
        self.udf = udf_cls(**udf_kwargs)
        self.calls = 0

    async def run(self, batch: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """This node's address and the engine's replies to one batch."""
        self.calls += 1
        return node_ip(), [out async for out in self.udf(batch)]


class ForwardUDF(StatefulStageUDF):
    """Ray Data stage UDF: hands each batch, as Ray's stage protocol has it, to an engine
    host, round-robin; the host's own UDF does the column handling."""

    def __init__(
        self,
        data_column: str,
        expected_input_keys: list[str],
        hosts: list[Any],
        model: str,
        demand: dict[str, float],
        wait_s: float,
    ):
        super().__init__(data_column, expected_input_keys)
        self.watches = watches(hosts, model, demand, wait_s)
        self.turn = 0

    async def __call__(self, batch: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Send the batch to the next host in turn; yield its replies."""
        watch = self.watches[self.turn % len(self.watches)]
        self.turn += 1
        for out in await answer_async(watch, batch):
            yield out


def _host_options(map_batches_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The engine stage's GPU request (or, for TP/PP over Ray, its placement group), with
    Ray's restarts (`resident_hosts.restartable`)."""
    options = {k: map_batches_kwargs[k] for k in HOST_OPTIONS if map_batches_kwargs.get(k)}
    make_strategy = map_batches_kwargs.get("ray_remote_args_fn")
    if make_strategy is not None:
        options.update(make_strategy())
    return restartable(options)


def host_demand(cfg: ModelConfig, options: dict[str, Any]) -> dict[str, float]:
    """What one node must hold for a host: its GPUs (a tensor-parallel engine's all on one
    node, `placement_groups.STRATEGY`)."""
    return {"GPU": float(options.get("num_gpus") or cfg.tensor_parallel_size)}


class ResidentVLLM:
    """A GeoBuild engine stage (`(ds, cfg, opts) -> ds`) whose engines outlive each round.

    `hosts_started` counts engine loads, `rounds_served` the pipelines that used them;
    `close()` ends the hosts and removes their placement groups (the loop calls it).
    """

    def __init__(self) -> None:
        self.hosts: list[Any] = []
        self.demand: dict[str, float] = {}
        self.groups_mark: int | None = None  # placement groups made from here on are ours
        self.hosts_started = 0  # engine loads
        self.rounds_served = 0  # pipelines built on the hosts

    def __call__(self, ds: Any, cfg: ModelConfig, opts: EngineOptions) -> Any:
        """The dataset through Ray's vLLM processor, its engine stage on the resident hosts."""
        from ray.llm._internal.batch.processor.base import Processor
        from ray.llm._internal.batch.stages.base import StatefulStage

        check_gpus(cfg)
        processor = build_vllm_processor(cfg, opts)
        engine = engine_stage_of(processor)
        name = next(n for n, s in processor.stages.items() if s is engine)
        if not self.hosts:
            self._start(engine, Processor.DATA_COLUMN, opts.pool_size, cfg)
        self.rounds_served += 1
        processor.stages[name] = StatefulStage(
            fn=ForwardUDF,
            fn_constructor_kwargs=forwarder_kwargs(self.hosts, cfg.name, self.demand),
            map_batches_kwargs={
                "compute": _pool(opts.pool_size),
                "num_cpus": LIGHT_CPUS,
                # Several batches in flight per forwarder, as Ray's engine stage allows.
                "max_concurrency": engine.map_batches_kwargs.get("max_concurrency", 8),
            },
        )
        return processor(ds).map_batches(normalise_engine_errors, num_cpus=LIGHT_CPUS)

    def _start(self, engine: Any, data_column: str, replicas: int, cfg: ModelConfig) -> None:
        import ray

        udf_kwargs = {
            **engine.fn_constructor_kwargs,
            "data_column": data_column,
            "expected_input_keys": list(engine.get_required_input_keys()),
        }
        host_cls = ray.remote(EngineHost)
        if self.groups_mark is None:
            self.groups_mark = made_count()
        for _ in range(replicas):
            options = _host_options(engine.map_batches_kwargs)
            self.demand = host_demand(cfg, options)
            self.hosts.append(host_cls.options(**options).remote(engine.fn, udf_kwargs))
            self.hosts_started += 1

    def close(self) -> None:
        """Stop the engine hosts (their weights are freed) and remove the placement groups
        their tensor-parallel engines were given (Ray's stage removes none)."""
        import ray

        for host in self.hosts:
            ray.kill(host)
        forget_hosts(self.hosts)
        self.hosts = []
        if self.groups_mark is not None:
            remove_made_since(self.groups_mark)
            self.groups_mark = None


def _pool(size: int) -> Any:
    import ray

    return ray.data.ActorPoolStrategy(size=size)
