"""MLflow tracking for evaluations: where runs go (``store``), what never reaches them (``secrets``), one run
per evaluation with its params, metrics and tags (``runs``), and the files attached to it (``artifacts``,
``plots``). MLflow itself is imported only inside the functions that talk to it."""
