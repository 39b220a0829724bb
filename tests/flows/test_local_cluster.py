"""ragrig's own LocalCluster claims no fixed port (``flows/runners.local_cluster_kwargs``)."""

from __future__ import annotations

import socket
import warnings

from ragrig.configs.load import load_config
from ragrig.flows.runners import local_cluster, local_cluster_kwargs


def test_the_schedulers_http_server_takes_a_free_loopback_port_without_a_warning():
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))  # Dask's default port taken (held by something else: as good)
        holder.listen()
    except OSError:
        pass
    kwargs = {**local_cluster_kwargs(load_config(None, ["flow.workers=1"])), "n_workers": 0}
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            cluster = local_cluster(**kwargs)
        try:
            http = cluster.scheduler.http_server
            assert (http.address, cluster.scheduler.address.startswith("tcp://127.0.0.1:")) == ("127.0.0.1", True)
            assert http.port != 8787
            assert not [w for w in seen if "already in use" in str(w.message)], [str(w.message) for w in seen]
        finally:
            cluster.close()
    finally:
        holder.close()
