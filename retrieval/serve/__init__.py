"""The evaluated retriever, served: ``ragrig serve``'s library part (no rich, no Prefect).

``live.py`` holds the open index version and switches to a newly published one without dropping a request;
``app.py`` is the FastAPI app (``/retrieve``, ``/context``, ``/health``, ``/metrics``); ``api.py`` its request
shapes, limits and errors; ``metrics.py`` the Prometheus metrics; ``client.py`` what ``ragrig query`` uses to ask a
running server (standard library only, so a query through a server starts fast).

Nothing is imported here: ``import ragrig.retrieval.serve.client`` stays cheap.
"""
