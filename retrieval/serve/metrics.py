"""The server's Prometheus metrics (``GET /metrics``), in a registry of its own (two apps in one process, as in
tests, never share counters):

    ragrig_requests_total{endpoint, status}          requests answered, by status code
    ragrig_request_seconds{endpoint}                 request latency (histogram), from arrival to response
    ragrig_stage_seconds{stage}                      per retrieval stage, from each result's ``timings_ms``
                                                     (process, embed, vector, bm25, header, fuse, shape, hops, total),
                                                     plus ``queue``: the wait for the search thread
    ragrig_cache_hits_total                          answers served from the query cache (no stage timings)
    ragrig_in_flight_requests                        requests being answered now
    ragrig_index_info{index, version, model}         1 for the version being served
    ragrig_index_chunks                              its chunk count
    ragrig_index_switches_total                      newly published versions switched to
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# 0.5 ms .. 10 s: a cached answer is sub-millisecond, a multi-hop one with an LLM judge takes seconds
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
STAGES = ("process", "embed", "vector", "bm25", "header", "fuse", "shape", "hops", "total", "queue")


class ServeMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("ragrig_requests", "Requests answered, by endpoint and status code",
                                ["endpoint", "status"], registry=r)
        self.latency = Histogram("ragrig_request_seconds", "Request latency, arrival to response", ["endpoint"],
                                 buckets=BUCKETS, registry=r)
        self.stages = Histogram("ragrig_stage_seconds", "Retrieval time per stage (queue: waiting for the search)",
                                ["stage"], buckets=BUCKETS, registry=r)
        self.cache_hits = Counter("ragrig_cache_hits", "Answers served from the query cache", registry=r)
        self.in_flight = Gauge("ragrig_in_flight_requests", "Requests being answered now", registry=r)
        self.index = Gauge("ragrig_index_info", "The index version being served", ["index", "version", "model"],
                           registry=r)
        self.chunks = Gauge("ragrig_index_chunks", "Chunks in the version being served", registry=r)
        self.switches = Counter("ragrig_index_switches", "Newly published versions switched to", registry=r)
        self._labels: tuple[str, str, str] | None = None

    def serving(self, index: str, version: str, model: str, chunks: int) -> None:
        """The version now served (the previous one's info series goes)."""
        if self._labels is not None:
            self.index.remove(*self._labels)
        self._labels = (index, version, model)
        self.index.labels(*self._labels).set(1)
        self.chunks.set(chunks)

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, str(status)).inc()
        self.latency.labels(endpoint).observe(seconds)

    def retrieval(self, timings_ms: Mapping[str, float], queue_s: float, cached: bool) -> None:
        self.stages.labels("queue").observe(queue_s)
        if cached:  # its timings are the original search's, already counted
            self.cache_hits.inc()
            return
        for stage, ms in timings_ms.items():
            if stage in STAGES:
                self.stages.labels(stage).observe(ms / 1000)

    def render(self) -> bytes:
        return generate_latest(self.registry)
