"""``ragrig tune``: choose a retrieval config for a corpus from its own test set, with a held-out estimate.

``space`` loads the search space (a sweep file with fold settings) and validates every candidate; ``folds``
splits the cases into stratified folds (and the honesty check's halves); ``select`` runs nested selection over
per-case scores and the significance rule; ``report`` holds the result and its Markdown; ``run`` evaluates every
candidate once (through the sweep's machinery) and puts it together.
"""
