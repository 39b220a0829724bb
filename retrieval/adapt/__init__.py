"""``ragrig adapt``'s library: training pairs from a published index version's structure (``pairs.py``, with
BM25-mined hard negatives in ``negatives.py``), the fine-tune through sentence-transformers' own trainer
(``train.py``), where the model folder goes and when one can be reused (``output.py``), and the sequence
(``run.py``). No Prefect, no test set: nothing here reads ``eval.testsets``."""
