"""A BERT exported to ONNX (int8 by onnxruntime's dynamic quantisation, or fp32) turned back into a float
sentence-transformers folder: the packaged bge-small-en-v1.5 ships only as int8 ONNX, and a float copy of its
weights (each int8 weight times its scale) both ranks better than the int8 graph, whose activations are
quantised at run time too (docs/experiments.md E23), and can be fine-tuned (``ragrig adapt``).

The graph is read as onnxruntime's exporter writes a BERT: float initializers under the Hugging Face parameter
names (``encoder.layer.0.attention.self.query.bias``), each linear layer a ``MatMulInteger`` (or ``MatMul``)
whose weight is an initializer and whose output reaches an ``Add`` of its ``….bias``, the embedding tables
through ``DequantizeLinear``. Anything else (a parameter missing, a shape that does not fit the config, a
matrix product adding no named bias) is refused in one line naming it (``ConversionError``), never guessed.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


class ConversionError(ValueError):
    """The graph is not a BERT this reader can take apart (the message names what is missing or odd)."""


def _arrays(graph: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    out = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:  # constants written as nodes
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    out[node.output[0]] = numpy_helper.to_array(a.t)
    return out


def _dequantised(q: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> np.ndarray:
    return ((q.astype(np.float32) - zero.astype(np.float32)) * scale.astype(np.float32)).astype(np.float32)


def _bias_after(start: str, consumers: dict[str, list[Any]], arrays: dict[str, np.ndarray]) -> str | None:
    """The ``….bias`` initializer added to a matrix product's output within a few nodes (cast, rescale)."""
    frontier = [start]
    for _ in range(4):
        nxt: list[str] = []
        for name in frontier:
            for node in consumers[name]:
                if node.op_type == "Add":
                    for i in node.input:
                        if i.endswith(".bias") and i in arrays:
                            return i
                nxt += list(node.output)
        frontier = nxt
    return None


def state_dict(model_file: Path) -> dict[str, np.ndarray]:
    """The Hugging Face ``BertModel`` parameters, as float32, read out of an ONNX BERT."""
    import onnx

    graph = onnx.load(str(model_file)).graph
    arrays = _arrays(graph)
    producer = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list[Any]] = defaultdict(list)
    for node in graph.node:
        for i in node.input:
            consumers[i].append(node)
    params = {k: v.astype(np.float32) for k, v in arrays.items()
              if k.startswith(("embeddings.", "encoder.")) and k.endswith((".weight", ".bias"))
              and v.dtype in (np.float32, np.float16)}
    for node in graph.node:
        if node.op_type == "DequantizeLinear" and node.input[1].endswith("_scale"):
            data = node.input[0]
            if data not in arrays and data in producer and producer[data].op_type == "Gather":
                data = producer[data].input[0]  # the table is gathered before it is dequantised
            if data in arrays and len(node.input) > 2 and node.input[2] in arrays:
                name = node.input[1].removesuffix("_scale")
                params[name] = _dequantised(arrays[data], arrays[node.input[1]], arrays[node.input[2]])
        elif node.op_type in ("MatMulInteger", "MatMul") and node.input[1] in arrays:
            weight = arrays[node.input[1]]
            if node.op_type == "MatMulInteger":
                base = node.input[1].removesuffix("_quantized")
                zero = arrays.get(node.input[3]) if len(node.input) > 3 else None
                if base + "_scale" not in arrays:
                    raise ConversionError(f"{model_file}: no scale for the quantised weight {node.input[1]!r}")
                weight = _dequantised(weight, arrays[base + "_scale"], zero if zero is not None else np.zeros(1))
            bias = _bias_after(node.output[0], consumers, arrays)
            if bias is None:
                raise ConversionError(f"{model_file}: the matrix product {node.name or node.output[0]!r} adds no "
                                      "named bias (not an exported BERT layer)")
            params[bias.removesuffix(".bias") + ".weight"] = np.ascontiguousarray(weight.T.astype(np.float32))
    return params


def convert(folder: Path, model_file: Path, out: Path, *, pooling: str, query_prompt: str) -> None:
    """Write a sentence-transformers folder at ``out`` (which must not exist) holding the float copy of the ONNX
    BERT in ``folder`` (its ``config.json`` and tokenizer files), pooled as ``pooling`` (cls | mean),
    normalised, with ``query_prompt`` as its own query prompt."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers import models
    from transformers import BertConfig, BertModel

    config = BertConfig.from_pretrained(str(folder))
    model = BertModel(config)
    wanted = {k: tuple(v.shape) for k, v in model.state_dict().items() if not k.startswith("pooler.")}
    params = state_dict(model_file)
    missing = sorted(k for k in wanted if k not in params)
    odd = sorted(k for k in wanted if k in params and tuple(params[k].shape) != wanted[k])
    if missing or odd:
        raise ConversionError(f"{model_file}: not a BERT matching {folder / 'config.json'} "
                              f"({len(missing)} parameter(s) missing, e.g. {missing[:2]}; {len(odd)} of another "
                              f"shape, e.g. {odd[:2]})")
    state = {k: torch.from_numpy(params[k]) for k in wanted}
    # the pooler is no part of a sentence embedding; zeros (not a random draw) keep the folder's bytes fixed
    state.update({k: torch.zeros_like(v) for k, v in model.state_dict().items() if k.startswith("pooler.")})
    model.load_state_dict(state, strict=True)
    with tempfile.TemporaryDirectory(prefix=".convert-", dir=out.parent) as tmp:
        hf = Path(tmp) / "hf"
        model.save_pretrained(str(hf))
        for name in TOKENIZER_FILES:
            if (folder / name).is_file():
                shutil.copy(folder / name, hf / name)
        body = models.Transformer(str(hf), max_seq_length=int(config.max_position_embeddings))
        pool = models.Pooling(int(config.hidden_size), pooling_mode=pooling)
        st = SentenceTransformer(modules=[body, pool, models.Normalize()], device="cpu",
                                 prompts={"query": query_prompt, "document": ""})
        st.save(str(out), create_model_card=False)
