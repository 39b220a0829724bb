"""What ``prefect deploy`` sets up besides the deployments: prefect.yaml's ``build`` step calls
``ensure_concurrency_limits``, so the task concurrency limits ragrig's tags rely on (``tasks.stages.CONCURRENCY``:
``ragrig-embedding`` -> 1) exist wherever ragrig is deployed, with no command to remember.

A limit that already exists is left as it is: an operator who raised it keeps their value.
"""

from __future__ import annotations

from typing import Any

from ragrig.tasks.stages import CONCURRENCY


def ensure_concurrency_limits(limits: dict[str, int] | None = None) -> dict[str, Any]:
    """Create each tag's task concurrency limit (default ``CONCURRENCY``) on the Prefect API unless it exists;
    returns ``{"concurrency_limits": {tag: limit in force}, "created": [tags created now]}`` (a step's outputs)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    wanted = dict(CONCURRENCY if limits is None else limits)
    in_force: dict[str, int] = {}
    created: list[str] = []
    with get_client(sync_client=True) as client:
        for tag, limit in wanted.items():
            try:
                in_force[tag] = int(client.read_concurrency_limit_by_tag(tag).concurrency_limit)
            except ObjectNotFound:
                client.create_concurrency_limit(tag=tag, concurrency_limit=int(limit))
                in_force[tag] = int(limit)
                created.append(tag)
    return {"concurrency_limits": in_force, "created": created}
