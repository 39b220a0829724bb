"""The ONNX backend: a transformer encoder exported to ONNX, run with onnxruntime and tokenized with ``tokenizers``
(sentence-transformers' own ONNX backend needs optimum-onnx, which requires transformers < 4.58; we pin 5.x).

A folder holds ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``; the pooling comes from the packaged
entry or sentence-transformers' ``1_Pooling/config.json``; the input limit from the entry, ``config.json``
(``max_position_embeddings``) or ``tokenizer_config.json`` (``model_max_length``), whichever is smallest.

Each text is run on its own, unpadded: an int8 export quantises its activations with one scale per call
(DynamicQuantizeLinear over the whole batch tensor, padding included), so in a batch a text's vector moves with
its batch-mates (cosine 0.997 against the same text alone, measured on SciFact abstracts). Alone, a text's vector
is a function of the text: the embedding cache, a query typed once and the same query in a 300-case eval all get
the same vector. The texts of a call run on a pool of single-threaded session runs, one per available core:
on 2 cores that was faster than token-sorted batches of 16 or 32 (abstracts 3.5 against 1.6-1.8 texts/s,
queries 52-74 against 43-52 under the same load).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.configs.errors import InputError
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.encoders.model_files import json_object

POOLING_FILE = Path("1_Pooling") / "config.json"


def onnx_file(folder: Path) -> Path | None:
    for rel in ("model.onnx", "onnx/model.onnx"):
        if (folder / rel).is_file():
            return folder / rel
    return None


def quantisation(model_file: Path) -> str:
    """int8 when the graph holds integer (dynamic or static) quantisation operators, else fp32."""
    with open(model_file, "rb") as fh:
        head = fh.read(64 << 20)  # operator names sit in the node list, before most weights
    return "int8" if any(op in head for op in (b"DynamicQuantizeLinear", b"MatMulInteger", b"QLinearMatMul")) \
        else "fp32"




def folder_pooling(folder: Path) -> str:
    conf = json_object(folder / POOLING_FILE)
    if conf.get("pooling_mode_cls_token"):
        return "cls"
    if conf.get("pooling_mode_mean_tokens"):
        return "mean"
    return ""


def cpu_session(model_file: Path, field: str, threads: int | None = None) -> Any:
    """An onnxruntime CPU session that does not spin idle threads (``threads``: intra- and inter-op threads;
    None: onnxruntime's own choice); a file it cannot load is one InputError naming the config ``field``."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads is not None:
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = threads
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(model_file), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise InputError(f"{field}: cannot load {model_file} ({type(exc).__name__}: {str(exc)[:200]})") from None


def _max_tokens(folder: Path, given: int) -> int:
    limits = [given, int(json_object(folder / "config.json").get("max_position_embeddings") or 0)]
    tok_max = json_object(folder / "tokenizer_config.json").get("model_max_length")
    if isinstance(tok_max, int) and tok_max < 100_000:  # transformers writes 1e30 for "no limit"
        limits.append(tok_max)
    return min((n for n in limits if n > 0), default=512)


def _threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class OnnxEncoder:
    backend = "onnx"

    def __init__(self, folder: Path, cfg: EmbeddingConfig, *, pooling: str = "", max_tokens: int = 0) -> None:
        from tokenizers import Tokenizer

        self.cfg = cfg
        model_file = onnx_file(folder)
        if model_file is None or not (folder / "tokenizer.json").is_file():
            raise InputError(f"embedding.model: {folder} is not an ONNX model folder "
                             "(it needs model.onnx or onnx/model.onnx, and tokenizer.json)")
        self.pooling = pooling or folder_pooling(folder)
        if self.pooling not in ("cls", "mean"):
            raise InputError(f"embedding.model: {folder} does not say how to pool token vectors; add "
                             f"{POOLING_FILE} (sentence-transformers' format) with pooling_mode_cls_token or "
                             "pooling_mode_mean_tokens true")
        self.max_tokens = _max_tokens(folder, max_tokens)
        self.counter = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.counter.no_truncation()
        self.counter.no_padding()
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_tokens)
        self.specials = len(self.tokenizer.encode("").ids)  # [CLS] and [SEP] for a BERT
        # one core per text; texts run side by side (see the module docstring)
        self.session = cpu_session(model_file, "embedding.model", threads=1)
        self.inputs = {i.name for i in self.session.get_inputs()}
        outputs = self.session.get_outputs()
        self.output = next((o for o in outputs if o.name == "last_hidden_state"), outputs[0])
        self.threads = _threads()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @property
    def window(self) -> int:
        return self.max_tokens - self.specials

    @property
    def dim(self) -> int:
        last = self.output.shape[-1]
        return int(last) if isinstance(last, int) else int(self._run(self.tokenizer.encode("dim").ids).shape[0])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self.counter.encode_batch(list(texts), add_special_tokens=False)]

    def _run(self, ids: list[int]) -> np.ndarray:
        row = np.asarray([ids], dtype=np.int64)
        feed = {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)}
        hidden = self.session.run([self.output.name], {k: v for k, v in feed.items() if k in self.inputs})[0][0]
        return hidden[0] if self.pooling == "cls" else hidden.mean(axis=0)

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        if len(ids) > 1 and self.threads > 1:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="ragrig-onnx")
            rows = list(self._pool.map(self._run, ids))
        else:
            rows = [self._run(x) for x in ids]
        vecs = np.asarray(rows, dtype=np.float32).reshape(len(ids), -1)
        if self.cfg.normalize:
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs
