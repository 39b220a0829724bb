"""A sentence-transformers BERT model (Transformer -> mean or CLS Pooling -> optional Normalize: all-MiniLM-L6-v2,
every ``ragrig adapt`` folder) run with torch alone: the ``tokenizers`` library and ``safetensors``, without
importing sentence-transformers or transformers (~8 s of a cold ``ragrig query`` on 2 cores, where torch itself
is ~2.5 s). The same ops in the same order as transformers' ``BertModel`` (sdpa attention; a boolean padding
mask only when a batch is padded) and sentence-transformers' ``encode`` (batches by ``np.argsort`` of minus the
character length, pooling summed in float32, the model's Normalize, then ``normalize_embeddings``), so the
vectors are the same bits. That is never assumed: ``forward_check.py`` compares the two on probe texts the
first time a model meets a set of library versions, and only a model recorded equal is run here.

``BertForward.open(folder)`` is None for anything else (another architecture, a Dense layer, lower-casing done by
sentence-transformers, prompts applied by default, missing files): those load sentence-transformers as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ragrig.retrieval.encoders.model_files import json_object, read_json

_TYPES = ("Transformer", "Pooling", "Normalize")


def _layout(folder: Path) -> tuple[int, str, bool] | None:
    """(max tokens with special tokens, pooling "mean" or "cls", whether the model normalises) when ``folder`` is
    a model this module runs, else None."""
    modules = read_json(folder / "modules.json")
    if not isinstance(modules, list) or not 2 <= len(modules) <= 3:
        return None
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] if isinstance(m, dict) else "" for m in modules]
    if kinds != list(_TYPES[: len(kinds)]) or modules[0].get("path") not in ("", "."):
        return None
    config, st = read_json(folder / "config.json"), json_object(folder / "sentence_bert_config.json")
    if not isinstance(config, dict) or config.get("model_type") != "bert" or config.get("is_decoder") \
            or config.get("hidden_act", "gelu") != "gelu" \
            or config.get("position_embedding_type", "absolute") != "absolute" or st.get("do_lower_case"):
        return None
    settings = json_object(folder / "config_sentence_transformers.json")
    if settings.get("default_prompt_name"):
        return None
    pool = json_object(folder / str(modules[1].get("path", "")) / "config.json")
    modes = {k for k, v in pool.items() if k.startswith("pooling_mode") and v}
    if modes not in ({"pooling_mode_mean_tokens"}, {"pooling_mode_cls_token"}) and pool.get("pooling_mode") \
            not in ("mean", "cls"):
        return None
    mode = "cls" if "pooling_mode_cls_token" in modes or pool.get("pooling_mode") == "cls" else "mean"
    length = st.get("max_seq_length") or json_object(folder / "tokenizer_config.json").get("model_max_length")
    if not isinstance(length, int) or not 2 < length <= int(config.get("max_position_embeddings", 512)):
        return None
    if not (folder / "model.safetensors").is_file() or not (folder / "tokenizer.json").is_file():
        return None
    return length, mode, len(modules) == 3


class BertForward:
    """The model's forward pass in plain torch ops over its safetensors weights (CPU)."""

    def __init__(self, folder: Path, max_length: int, pooling: str, normalizes: bool) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self.torch = torch
        self.config = json_object(folder / "config.json")
        self.max_length, self.pooling, self.normalizes = max_length, pooling, normalizes
        self.w = {k.removeprefix("bert."): v for k, v in load_file(str(folder / "model.safetensors")).items()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.counter = Tokenizer.from_file(str(folder / "tokenizer.json"))  # no truncation: token counts
        self.counter.no_padding()
        self.counter.no_truncation()
        self.tokenizer.enable_truncation(max_length)
        self.positions = torch.arange(int(self.config["max_position_embeddings"])).expand((1, -1))

    @classmethod
    def open(cls, folder: str | Path) -> BertForward | None:
        path = Path(folder)
        layout = _layout(path) if path.is_dir() else None
        if layout is None:
            return None
        try:
            return cls(path, *layout)
        except Exception:  # unreadable weights or tokenizer: sentence-transformers loads it (or says why not)
            return None

    @property
    def window(self) -> int:
        return self.max_length - 2

    @property
    def dim(self) -> int:
        return int(self.config["hidden_size"])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self.counter.encode_batch(list(texts), add_special_tokens=False)]

    def _linear(self, x: Any, name: str) -> Any:
        return self.torch.nn.functional.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    def _norm(self, x: Any, name: str) -> Any:
        return self.torch.nn.functional.layer_norm(x, (x.shape[-1],), self.w[f"{name}.weight"], self.w[f"{name}.bias"],
                                                   float(self.config["layer_norm_eps"]))

    def _hidden(self, ids: Any, mask: Any) -> Any:
        """transformers' ``BertModel(...).last_hidden_state``, op for op."""
        F, torch = self.torch.nn.functional, self.torch
        batch, length = ids.shape
        pos = self.positions[:, :length]
        types = torch.gather(torch.zeros_like(self.positions), 1, pos).expand(batch, length)
        x = F.embedding(ids, self.w["embeddings.word_embeddings.weight"], int(self.config.get("pad_token_id") or 0))
        x = x + F.embedding(types, self.w["embeddings.token_type_embeddings.weight"])
        x = self._norm(x + F.embedding(pos, self.w["embeddings.position_embeddings.weight"]), "embeddings.LayerNorm")
        attend = None if bool(mask.all()) else mask.bool()[:, None, None, :].expand(batch, 1, length, length)
        head = x.shape[-1] // int(self.config["num_attention_heads"])
        for i in range(int(self.config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            q, k, v = (self._linear(x, p + f"attention.self.{n}").view(batch, length, -1, head).transpose(1, 2)
                       for n in ("query", "key", "value"))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=attend, dropout_p=0.0, scale=head ** -0.5,
                                               is_causal=False)
            a = a.transpose(1, 2).contiguous().reshape(batch, length, -1).contiguous()
            x = self._norm(self._linear(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            x = self._norm(self._linear(F.gelu(self._linear(x, p + "intermediate.dense")), p + "output.dense") + x,
                           p + "output.LayerNorm")
        return x

    def _pool(self, tokens: Any, mask: Any) -> Any:
        torch = self.torch
        if self.pooling == "cls":
            first = mask.to(torch.int).argmax(dim=1).unsqueeze(-1).unsqueeze(1).expand(-1, 1, tokens.shape[-1])
            return torch.gather(tokens, 1, first).squeeze(1)
        m = mask.unsqueeze(-1).to(tokens.dtype)
        summed = (tokens * m).sum(dim=1, dtype=torch.float32)
        return (summed / torch.clamp(m.sum(dim=1, dtype=torch.float32), min=1e-9)).to(tokens.dtype)

    def encode(self, texts: Sequence[str], *, batch_size: int, normalize: bool) -> np.ndarray:
        """float32 rows, as ``SentenceTransformer.encode(texts, batch_size, normalize_embeddings=normalize)``."""
        torch, F = self.torch, self.torch.nn.functional
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts])
        rows: list[Any] = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                encs = self.tokenizer.encode_batch([texts[i] for i in order[start : start + batch_size]])
                width = max(len(e.ids) for e in encs)
                ids = torch.tensor([e.ids + [0] * (width - len(e.ids)) for e in encs])
                mask = torch.tensor([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in encs])
                out = self._pool(self._hidden(ids, mask), mask)
                if self.normalizes:
                    out = F.normalize(out, p=2, dim=-1)
                if normalize:
                    out = F.normalize(out, p=2, dim=1)
                rows.extend(out)
            vecs = torch.stack([rows[i] for i in np.argsort(order)])
        return np.asarray(vecs.numpy(), dtype=np.float32)
