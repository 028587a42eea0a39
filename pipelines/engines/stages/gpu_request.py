"""A standing request to the autoscaler for GPU bundles, made the way Ray 2.60 keeps it.

`ray.autoscaler.sdk.request_resources` holds one cluster-wide request, replaced by the next
call from anyone. In Ray 2.60, Ray Data runs such a caller: its `AutoscalingCoordinator`
actor (ray/data/_internal/cluster_autoscaler/default_autoscaling_coordinator.py) merges the
requests of its requesters and sends the merged list every 20 s, so a request made with the
SDK beside it is overwritten within a tick (seen here: the GPU worker the sweep had asked
for was released as idle before its model's engine started). So the request goes through
that coordinator, as one more requester: merged with Ray Data's own, renewed while it stands
(each renewal moves its expiry), cancelled when done; and if its owner dies, it expires after
`TTL_S` instead of holding GPU nodes forever. Without that coordinator (another Ray), the
SDK call is made directly.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

TTL_S = 120.0  # a request not renewed for this long lapses (its owner is gone)
RENEW_S = 30.0  # renewed at least this often while it stands


class GPURequest:
    """One owner's request for GPU bundles (`{"GPU": n}` per engine replica)."""

    def __init__(self, owner: str) -> None:
        self.requester = f"geosee-{owner}-{uuid.uuid4().hex[:8]}"
        self.bundles: list[dict[str, float]] = []
        self._renewed = 0.0
        self._coordinator: Any = None

    def set(self, gpus: list[float]) -> None:
        """Ask for one bundle per entry of `gpus` (an empty list withdraws the request);
        renews an unchanged request every RENEW_S seconds, else does nothing."""
        bundles = [{"GPU": float(g)} for g in gpus if g]
        now = time.monotonic()
        if bundles == self.bundles and (not bundles or now - self._renewed < RENEW_S):
            return
        if bundles:
            self._send(bundles)
        else:
            self._cancel()
        self.bundles, self._renewed = bundles, now

    def clear(self) -> None:
        """Withdraw the request (nothing to do when there is none)."""
        self.set([])

    def _actor(self) -> Any:
        if self._coordinator is None:
            from ray.data._internal.cluster_autoscaler.default_autoscaling_coordinator import (
                get_or_create_autoscaling_coordinator,
            )

            self._coordinator = get_or_create_autoscaling_coordinator()
        return self._coordinator

    def _send(self, bundles: list[dict[str, float]]) -> None:
        import ray

        try:
            actor = self._actor()
        except ImportError:  # no Ray Data coordinator in this Ray: the SDK's own request
            from ray.autoscaler.sdk import request_resources

            request_resources(bundles=bundles)
            return
        ray.get(
            actor.request_resources.remote(
                requester_id=self.requester, resources=bundles, expire_after_s=TTL_S
            ),
            timeout=60,
        )

    def _cancel(self) -> None:
        import ray

        if not self.bundles or not ray.is_initialized():
            return
        try:
            actor = self._actor()
        except ImportError:
            from ray.autoscaler.sdk import request_resources

            request_resources(bundles=[])
            return
        ray.get(actor.cancel_request.remote(self.requester), timeout=60)
