"""The space file: the default always first, duplicates of it dropped, and bad input as one line naming the file,
the candidate and the key or value."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.tune.space import load_space, resolve_space


def space(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "space.yaml"
    p.write_text(body)
    return p


def test_default_first_and_duplicates_of_it_dropped(tmp_path):
    spec = load_space(space(tmp_path, """name: s
set: ["retrieval.synonyms=null"]
grid: {retrieval.fusion.weights.vector: [0.5, 1.0]}
configs: [{retrieval.candidates: 50}]
"""))
    items = resolve_space(spec)
    assert [label for label, _, _ in items] == ["default", "vector=0.5", "candidates=50"]  # vector=1.0 is the default
    assert items[0][1] == {} and spec.folds == 5 and spec.seed == 0 and spec.alpha == 0.05


def test_unknown_space_key_names_file_candidate_and_key(tmp_path):
    p = space(tmp_path, "name: s\ngrid: {retrieval.fusion.bogus: [1, 2]}\n")
    with pytest.raises(InputError) as err:
        resolve_space(load_space(p))
    msg = str(err.value)
    assert msg.startswith(f"{p}: candidate 'bogus=1': ") and "unknown key 'retrieval.fusion.bogus'" in msg
    assert "\n" not in msg


def test_bad_value_names_the_key(tmp_path):
    p = space(tmp_path, "name: s\ngrid: {retrieval.fusion.method: [rrf, borda]}\n")
    with pytest.raises(InputError, match=r"candidate 'method=borda'.*retrieval.fusion.method"):
        resolve_space(load_space(p))


def test_unknown_top_level_field_and_bad_metric(tmp_path):
    with pytest.raises(InputError, match=r"invalid space file.*fold: unknown key"):
        load_space(space(tmp_path, "name: s\nfold: 3\ngrid: {retrieval.top_k: [5]}\n"))
    with pytest.raises(InputError, match=r"metric: .*unknown metric 'ndgc@10'"):
        load_space(space(tmp_path, "name: s\nmetric: ndgc@10\ngrid: {retrieval.top_k: [5]}\n"))
    with pytest.raises(InputError, match=r"folds: Input should be greater than or equal to 2"):
        load_space(space(tmp_path, "name: s\nfolds: 1\ngrid: {retrieval.top_k: [5]}\n"))


def test_colliding_short_labels_use_whole_keys(tmp_path):
    # both would be labelled 'normalization=minmax' (the last key segment)
    spec = load_space(space(tmp_path, """name: s
configs: [{retrieval.fusion.normalization: minmax}, {retrieval.rerank.normalization: minmax}]
"""))
    assert [label for label, _, _ in resolve_space(spec)] == [
        "default", "retrieval.fusion.normalization=minmax", "retrieval.rerank.normalization=minmax"]


def test_a_missing_encoder_or_cross_encoder_fails_before_any_work(tmp_path):
    p = space(tmp_path, f"name: s\nconfigs: [{{embedding.model: {tmp_path / 'no-such-model'}, embedding.backend: onnx}}]\n")
    with pytest.raises(InputError, match=r"candidate 'model=.*backend=onnx': embedding.model: no model folder at "):
        resolve_space(load_space(p))
    p = space(tmp_path, "name: s\nconfigs: [{retrieval.rerank.enabled: true, retrieval.rerank.model: nope}]\n")
    with pytest.raises(InputError, match=r"candidate 'rerank.enabled=true, model=nope': retrieval.rerank.model: 'nope'"):
        resolve_space(load_space(p))
