"""The fine-tune, through sentence-transformers' own ``SentenceTransformerTrainer`` and its in-batch negatives
ranking losses (no hand-written loop): ``MultipleNegativesRankingLoss`` (symmetric: both directions,
each its own softmax, averaged: the symmetric loss) or its cached variant (GradCache: a big batch in
``mini_batch_size`` pieces), with the ``NO_DUPLICATES`` batch sampler (a text that repeats never shares a
batch, so it is never its own false negative), linear warm-up then linear decay, one step logged per step.

Deterministic on the CPU: everything seeded (``transformers.enable_full_determinism``: the seeds and
``torch.use_deterministic_algorithms``, put back as it was afterwards), the data order from the seed, no
dataloader workers; the model saved without a model card (it would hold timings). Two runs write the same bytes
(tests/retrieval/adapt/test_adapt_e2e.py).
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragrig.configs.models import AdaptConfig
from ragrig.retrieval.adapt.output import scratch_prefix
from ragrig.retrieval.adapt.pairs import Pair

OnStep = Callable[[int, float], None]
"""``on_step(step, loss)`` after every optimiser step."""


@dataclass
class TrainStats:
    steps: int = 0
    losses: list[float] = field(default_factory=list)  # one per step
    seconds: float = 0.0  # the training loop (trainer.train)
    load_seconds: float = 0.0  # importing the libraries, loading the base model, building the trainer
    device: str = "cpu"


def columns(pairs: Sequence[Pair]) -> dict[str, list[str]]:
    """The trainer's dataset: anchor, positive, then negative_1..n (the same n for every pair)."""
    cols: dict[str, list[str]] = {"anchor": [p.anchor for p in pairs], "positive": [p.positive for p in pairs]}
    n = len(pairs[0].negatives) if pairs else 0
    for j in range(n):
        cols[f"negative_{j + 1}"] = [p.negatives[j] for p in pairs]
    return cols


def make_loss(model: Any, recipe: AdaptConfig) -> Any:
    from sentence_transformers.sentence_transformer import losses

    directions = ("query_to_doc", "doc_to_query") if recipe.symmetric else ("query_to_doc",)
    kw: dict[str, Any] = {"scale": recipe.scale, "directions": directions,
                          "partition_mode": "per_direction" if recipe.symmetric else "joint"}
    if recipe.loss == "cached_mnrl":
        return losses.CachedMultipleNegativesRankingLoss(model, mini_batch_size=recipe.mini_batch_size, **kw)
    return losses.MultipleNegativesRankingLoss(model, **kw)


def train(pairs: Sequence[Pair], base: str, out: Path, recipe: AdaptConfig, device: str = "cpu", *,
          progress: bool = True, on_step: OnStep | None = None) -> TrainStats:
    """Fine-tune the sentence-transformers model at ``base`` on ``pairs`` and save it to ``out`` (a folder that
    must not exist yet; the caller renames it into place)."""
    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.training_args import (BatchSamplers,
                                                                          SentenceTransformerTrainingArguments)
    from transformers import PrinterCallback, ProgressCallback, TrainerCallback
    from transformers.trainer_utils import enable_full_determinism
    from transformers.utils import logging as hf_logging

    if not pairs:
        raise ValueError("no training pairs")
    stats = TrainStats(device=device)
    t0 = time.perf_counter()
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    hf_logging.disable_progress_bar()
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    enable_full_determinism(recipe.seed)
    try:
        model = SentenceTransformer(base, device=device)
        window = model.max_seq_length
        model.max_seq_length = recipe.max_tokens  # a training cost: texts are cut here while training only
        data = Dataset.from_dict(columns(pairs))

        class Steps(TrainerCallback):  # type: ignore[misc]
            def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                       **kw: Any) -> None:
                if logs and "loss" in logs:
                    stats.losses.append(float(logs["loss"]))
                    if on_step is not None:
                        on_step(int(state.global_step), float(logs["loss"]))

        with tempfile.TemporaryDirectory(prefix=scratch_prefix(out), dir=out.parent) as scratch:
            args = SentenceTransformerTrainingArguments(
                output_dir=scratch, num_train_epochs=recipe.epochs, per_device_train_batch_size=recipe.batch_size,
                learning_rate=recipe.lr, warmup_steps=float(recipe.warmup_ratio), lr_scheduler_type="linear",
                seed=recipe.seed, data_seed=recipe.seed, full_determinism=True,
                batch_sampler=BatchSamplers.NO_DUPLICATES, dataloader_num_workers=0, logging_steps=1, logging_strategy="steps", save_strategy="no",
                eval_strategy="no", report_to="none", disable_tqdm=not progress, use_cpu=device == "cpu",
            )
            trainer = _trainer_class(SentenceTransformerTrainer)(model=model, args=args, train_dataset=data,
                                                                 loss=make_loss(model, recipe), callbacks=[Steps()])
            trainer.remove_callback(PrinterCallback)  # the loss goes to on_step (and the bar), not raw dicts
            if progress:
                trainer.remove_callback(ProgressCallback)
                trainer.add_callback(_QuietProgress())
            t1 = time.perf_counter()
            stats.load_seconds = t1 - t0
            result = trainer.train()
            stats.seconds = time.perf_counter() - t1
        stats.steps = int(result.global_step)
        # The saved model reads what the base read: its window decides chunking.max_tokens: null, so a folder
        # saved at the training cut would re-chunk the index (measured: 1,234 -> 2,437 chunks on pydantic-docs at
        # 128), mixing a chunking change into what adapt is meant to measure.
        model.max_seq_length = window
        model.save(str(out), create_model_card=False)
    finally:
        torch.use_deterministic_algorithms(was_deterministic)
    return stats


def _trainer_class(base: Any) -> Any:
    """The trainer without its model-card callback (it samples widget examples with a progress bar of its own,
    and the card it feeds is not written: ``create_model_card=False``)."""

    class Trainer(base):  # type: ignore[misc, valid-type]
        def add_model_card_callback(self, default_args_dict: dict[str, Any]) -> None:
            return None

    return Trainer


def _QuietProgress() -> Any:  # noqa: N802 - a class built on demand (transformers is imported lazily)
    """transformers' progress bar without its printed dicts (the loss is on the bar: ``loss=…``)."""
    from transformers import ProgressCallback

    class QuietProgress(ProgressCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if self.training_bar is not None and logs and "loss" in logs:
                self.training_bar.set_postfix(loss=f"{logs['loss']:.4f}", refresh=False)

    return QuietProgress()
