"""The typed config: defaults, YAML errors that name file/line/key, --set parsing, path resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.configs.load import DEFAULT_CONFIG, load_config, parse_override
from ragrig.configs.models import RagrigConfig
from ragrig.configs.yamlio import parse_yaml_text
from ragrig.retrieval.ingest.discover import corpus_kind

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "cfg.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_defaults_load():
    cfg = load_config()
    assert isinstance(cfg, RagrigConfig)
    assert cfg.chunking.max_header_level == 4
    assert cfg.chunking.max_tokens is None
    assert cfg.retrieval.fusion.rrf_k == 60.0
    assert cfg.index.keep_versions == 3
    assert cfg.embedding.model == "all-MiniLM-L6-v2"
    # relative paths in the embedded defaults resolve against configs/
    assert cfg.corpus.path == str(REPO / "datasets" / "sample")
    assert cfg.retrieval.synonyms == str(REPO / "configs" / "synonyms" / "sample.yaml")
    assert cfg.eval.testsets == [str(REPO / "datasets" / "testsets" / "sample.yaml")]


def test_home_defaults_to_env(ragrig_home):
    assert load_config().home_dir == ragrig_home.resolve()


def test_unknown_key_names_file_line_and_key(tmp_path):
    p = write(tmp_path, "chunking:\n  max_header_level: 2\n  max_tokenz: 100\n")
    with pytest.raises(InputError) as ei:
        load_config(p)
    msg = str(ei.value)
    assert f"{p}:3: chunking.max_tokenz: unknown key" in msg


def test_unknown_top_level_key(tmp_path):
    p = write(tmp_path, "corpus:\n  path: .\nretreival:\n  top_k: 5\n")
    with pytest.raises(InputError, match=r"cfg\.yaml:3: retreival: unknown key"):
        load_config(p)


def test_out_of_range_value_names_key_and_line(tmp_path):
    p = write(tmp_path, "# comment\nchunking:\n  max_header_level: 7\n")
    with pytest.raises(InputError) as ei:
        load_config(p)
    msg = str(ei.value)
    assert f"{p}:3: chunking.max_header_level:" in msg
    assert "less than or equal to 4" in msg and "(got 7)" in msg


def test_wrong_type_names_key(tmp_path):
    p = write(tmp_path, "retrieval:\n  top_k: lots\n")
    with pytest.raises(InputError) as ei:
        load_config(p)
    assert f"{p}:2: retrieval.top_k:" in str(ei.value) and "'lots'" in str(ei.value)


def test_a_value_a_union_refuses_is_one_line_at_its_own_key(tmp_path):
    """``shards`` is a whole number or 'auto': pydantic refuses 0 once per member of the union; the user reads
    one line naming the key (not a member's tag), its line and both accepted forms."""
    p = write(tmp_path, "index:\n  vector_search:\n    hnsw:\n      shards: 0\n  bm25: {shards: many}\n")
    with pytest.raises(InputError) as ei:
        load_config(p)
    lines = str(ei.value).splitlines()[1:]
    assert [line.strip() for line in lines] == [
        f"{p}:4: index.vector_search.hnsw.shards: Input should be greater than or equal to 1 or 'auto' (got 0)",
        f"{p}:5: index.bm25.shards: Input should be a valid integer, unable to parse string as an integer or "
        "'auto' (got 'many')",
    ]


def test_model_validator_errors_name_the_section(tmp_path):
    p = write(tmp_path, "retrieval:\n  adaptive: {enabled: true, min_results: 9, max_results: 3}\n")
    with pytest.raises(InputError, match=r"retrieval\.adaptive: .*min_results \(9\) > max_results \(3\)"):
        load_config(p)


def test_set_values_are_yaml_scalars_and_coerced():
    cfg = load_config(overrides=["retrieval.fusion.rrf_k=40", "retrieval.synonyms=null", "eval.testsets=[]"])
    assert cfg.retrieval.fusion.rrf_k == 40.0 and isinstance(cfg.retrieval.fusion.rrf_k, float)
    assert cfg.retrieval.synonyms is None
    assert cfg.eval.testsets == []
    cfg = load_config(overrides=["eval.k_values=[10, 1, 5, 5]", "retrieval.fusion.weights.header=0.5"])
    assert cfg.eval.k_values == [1, 5, 10]
    assert cfg.retrieval.fusion.weights == {"bm25": 1.0, "vector": 1.0, "vector2": 1.0, "header": 0.5}


def test_parse_override():
    assert parse_override("retrieval.fusion.rrf_k=40") == (["retrieval", "fusion", "rrf_k"], 40)
    assert parse_override("index.name=a=b") == (["index", "name"], "a=b")
    assert parse_override("index.name=") == (["index", "name"], "")
    assert parse_override("mlflow.enabled=false") == (["mlflow", "enabled"], False)
    with pytest.raises(InputError, match="expected KEY.PATH=VALUE"):
        parse_override("retrieval.top_k")
    with pytest.raises(InputError, match="empty key segment"):
        parse_override("retrieval..top_k=3")


def test_set_unknown_key_lists_known_keys():
    with pytest.raises(InputError) as ei:
        load_config(overrides=["retrieval.fusion.rrf=40"])
    msg = str(ei.value)
    assert "unknown key 'retrieval.fusion.rrf'" in msg
    assert "['method', 'normalization', 'rrf_k', 'weights']" in msg


def test_set_unknown_top_level_key():
    with pytest.raises(InputError, match=r"unknown key 'chunkin'; known here: \[.*'chunking'.*\]"):
        load_config(overrides=["chunkin.max_header_level=2"])


def test_set_out_of_range_names_the_set_item():
    with pytest.raises(InputError) as ei:
        load_config(overrides=["chunking.max_header_level=7"])
    assert "--set chunking.max_header_level=7: chunking.max_header_level:" in str(ei.value)


def test_set_overrides_file_overrides_defaults(tmp_path):
    p = write(tmp_path, "retrieval:\n  top_k: 5\n  candidates: 50\n")
    cfg = load_config(p, ["retrieval.top_k=7"])
    assert (cfg.retrieval.top_k, cfg.retrieval.candidates, cfg.retrieval.min_relevance) == (7, 50, 0.0)


def test_relative_paths_resolve_against_the_config_folder(tmp_path, monkeypatch):
    sub = tmp_path / "conf" / "deep"
    sub.mkdir(parents=True)
    p = write(sub, "corpus:\n  path: ../docs\nretrieval:\n  synonyms: syn.yaml\neval:\n  testsets: [t/a.yaml, /abs/b.yaml]\n")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = load_config(p)
    assert cfg.corpus.path == str(tmp_path / "conf" / "docs")
    assert cfg.retrieval.synonyms == str(sub / "syn.yaml")
    assert cfg.eval.testsets == [str(sub / "t" / "a.yaml"), "/abs/b.yaml"]
    # --set paths resolve against the current directory
    cfg = load_config(p, ["corpus.path=mine"])
    assert cfg.corpus.path == str(elsewhere / "mine")


def test_malformed_yaml_names_file_and_line(tmp_path):
    p = write(tmp_path, "corpus:\n  path: a\n  include: [unclosed\nchunking:\n  max_header_level: 2\n")
    with pytest.raises(InputError) as ei:
        load_config(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}:")
    assert "malformed YAML" in msg
    line = int(msg[len(str(p)) + 1 :].split(":", 1)[0])
    assert 3 <= line <= 5


def test_bad_indentation_line(tmp_path):
    p = write(tmp_path, "corpus:\n  path: a\n format: beir\n")
    with pytest.raises(InputError, match=rf"{p}:3: malformed YAML"):
        load_config(p)


def test_duplicate_keys_are_errors(tmp_path):
    p = write(tmp_path, "retrieval:\n  top_k: 5\n  candidates: 9\n  top_k: 6\n")
    with pytest.raises(InputError, match=rf"{p}:4: duplicate key 'top_k' \(first at line 2\)"):
        load_config(p)


def test_config_must_be_a_mapping(tmp_path):
    p = write(tmp_path, "- a\n- b\n")
    with pytest.raises(InputError, match="must be a YAML mapping, got list"):
        load_config(p)


def test_empty_config_file_is_the_defaults(tmp_path):
    p = write(tmp_path, "# nothing here\n")
    assert load_config(p).model_dump() == load_config().model_dump()


def test_missing_and_non_utf8_config_files(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"index:\n  name: caf\xe9\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_config(bad)


def test_yaml_line_map():
    located = parse_yaml_text("a:\n  b: 1\n  c:\n    - x\n    - y\n", Path("t.yaml"))
    assert located.lines[("a",)] == 1
    assert located.lines[("a", "b")] == 2
    assert located.lines[("a", "c", 1)] == 5
    assert located.where(("a", "c", 1, "zz")) == "t.yaml:5"


def test_missing_corpus_is_a_clear_input_error_at_ingest(make_config, tmp_path):
    cfg = make_config(tmp_path / "no-such-corpus")  # loading the config does not check the folder
    with pytest.raises(InputError, match=r"corpus\.path: .*no-such-corpus does not exist"):
        corpus_kind(cfg.corpus)


def test_missing_corpus_fails_the_pipeline_before_any_work(make_config, tmp_path):
    from ragrig.retrieval.ingest.pipeline import IngestPipeline

    cfg = make_config(tmp_path / "no-such-corpus")
    pipe = IngestPipeline(cfg)
    with pytest.raises(InputError, match="does not exist"):
        pipe.run()
    assert pipe.embedder._model is None  # failed before loading the model


def test_corpus_kind(make_config, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    assert corpus_kind(make_config(docs).corpus) == "directory"
    (docs / "corpus.jsonl").write_text("")
    assert corpus_kind(make_config(docs).corpus) == "beir"
    assert corpus_kind(make_config(docs / "corpus.jsonl").corpus) == "beir"
    assert corpus_kind(make_config(docs, corpus__format="directory").corpus) == "directory"
    other = tmp_path / "notes.txt"
    other.write_text("x")
    with pytest.raises(InputError, match="neither a folder nor a corpus.jsonl"):
        corpus_kind(make_config(other).corpus)


def test_ingest_hash_ignores_runtime_only_settings():
    base = load_config()
    assert load_config(overrides=["embedding.batch_size=8", "embedding.device=cuda"]).ingest_hash() == base.ingest_hash()
    assert load_config(overrides=["chunking.max_header_level=2"]).ingest_hash() != base.ingest_hash()
    assert base.index_key() == f"sample-{base.ingest_hash()}"


def test_default_yaml_matches_model_defaults():
    """default.yaml and the pydantic defaults agree (except paths, which the YAML sets relative to itself)."""
    from ragrig.configs.yamlio import load_yaml

    data = load_yaml(DEFAULT_CONFIG).data
    model = RagrigConfig().model_dump()
    for section in ("chunking", "embedding", "index", "mlflow", "flow"):
        assert data[section] == model[section], section


@pytest.mark.parametrize("item", ["retrieval.fusion.weights.bogus=1", "retrieval.fusion.weights.bm25=-1"])
def test_an_error_on_a_section_blames_the_set_that_changed_something_inside_it(item):
    """A validator of a whole mapping (fusion weights) reports the mapping's path; a --set under it was blamed on
    the embedded defaults file (`configs/default.yaml:72`), which the user never edited (probe, 2026-11-29)."""
    with pytest.raises(InputError) as err:
        load_config(overrides=[item])
    assert str(err.value).startswith(f"invalid config: --set {item}: retrieval.fusion.weights: ")
    assert "default.yaml" not in str(err.value)
