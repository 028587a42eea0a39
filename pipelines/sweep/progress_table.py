"""The sweep's progress table: per model and setup, the node(s) its actors live on, its
rows on disk of the rows planned, and its state."""

from __future__ import annotations

import json
import time

from pipelines.sweep.plan import Job, rows_on_disk
from store.storage import Location

TAG_ENV = "GEOSEE_SWEEP_JOB"  # rides on each model's runtime env, so its actors can be found


def _nodes_by_tag() -> dict[str, set[str]]:
    """Job tag -> IPs of the nodes its actors live on (needs the state API: a dashboard)."""
    import ray

    ips = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]}
    if len(ips) == 1:
        return {"*": set(ips.values())}
    try:
        from ray.util.state import list_actors

        actors = list_actors(filters=[("state", "=", "ALIVE")], detail=True, limit=10000)
    except Exception:  # no dashboard (local mode): the table shows '?'
        return {}
    nodes: dict[str, set[str]] = {}
    for actor in actors:
        try:
            env = json.loads(actor.serialized_runtime_env or "{}")
        except ValueError:
            continue
        tag = (env.get("env_vars") or {}).get(TAG_ENV) if isinstance(env, dict) else None
        if tag:
            nodes.setdefault(tag, set()).add(ips.get(actor.node_id or "", "?"))
    return nodes


def waiting_state(job: Job, state: str, present_gpus: float) -> str:
    """A GPU model whose GPUs the autoscaler has not added yet is pending (a started one's
    task waits for them before it builds its engine), never "not run"."""
    if state in ("pending", "running") and job.cfg.gpus and present_gpus < job.cfg.gpus:
        return f"pending: waiting for {job.cfg.gpus:g} GPU(s)"
    return state


def print_progress(
    jobs: list[Job], states: dict[str, str], out: Location, cache: dict[Location, int]
) -> None:
    """One progress table: per model and setup its node(s), rows on disk of rows planned and
    state."""
    import ray

    nodes = _nodes_by_tag()
    present = float(ray.cluster_resources().get("GPU", 0))
    lines = [f"{'model':34} {'setup':7} {'node':16} {'rows':>11}  state"]
    for job in jobs:
        name = job.cfg.name
        node = ",".join(sorted(nodes.get(name, nodes.get("*", {"?"}))))
        for setup in job.done_setups + job.setups:
            n = rows_on_disk(out, name, setup, cache)
            state = "done" if setup in job.done_setups else states[name]
            state = waiting_state(job, state, present)
            rows = f"{n}/{job.rows.get(setup, 0)}"
            lines.append(f"{name[:34]:34} {setup:7} {node[:16]:16} {rows:>11}  {state}")
    stamp = time.strftime("%H:%M:%S")
    print(f"--- sweep progress {stamp} ---\n" + "\n".join(lines), flush=True)
