"""Sweep files: validation (errors name file, line and key), expansion of the grid and the explicit list, and
every config validated before any work."""

from __future__ import annotations

import pytest
from ragrig.configs.errors import InputError
from ragrig.eval.sweep.spec import expand, fmt_value, load_sweep, resolve


def write_sweep(tmp_path, body: str):
    p = tmp_path / "sweep.yaml"
    p.write_text(body)
    return p


def test_expand_grid_then_explicit_configs_without_duplicates(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, """name: s
grid:
  retrieval.fusion.rrf_k: [10, 60]
  retrieval.fusion.method: [rrf]
configs:
  - {retrieval.fusion.method: weighted}
  - {retrieval.fusion.rrf_k: 10, retrieval.fusion.method: rrf}
"""))
    got = expand(spec)
    assert [ov for _, ov in got] == [
        {"retrieval.fusion.rrf_k": 10, "retrieval.fusion.method": "rrf"},
        {"retrieval.fusion.rrf_k": 60, "retrieval.fusion.method": "rrf"},
        {"retrieval.fusion.method": "weighted"},
    ]
    assert got[0][0] == "rrf_k=10, method=rrf"


@pytest.mark.parametrize(
    "body, message",
    [
        ("name: s\n", "needs a 'grid' and/or a list of 'configs'"),
        ("name: s\ngrid: {retrieval.top_k: []}\n", "non-empty list"),
        ("name: s\ngrid: {retrieval.top_k: [5]}\nbogus: 1\n", "sweep.yaml:3: bogus: unknown key"),
        ("name: bad name\ngrid: {retrieval.top_k: [5]}\n", "name"),
    ],
)
def test_bad_sweep_files_name_file_line_and_key(tmp_path, body, message):
    with pytest.raises(InputError, match=message):
        load_sweep(write_sweep(tmp_path, body))


def test_a_bad_value_fails_before_any_work_naming_the_config(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, "name: s\ngrid: {chunking.max_header_level: [3, 9]}\n"))
    with pytest.raises(InputError, match=r"(?s)sweep config 'max_header_level=9'.*chunking.max_header_level"):
        resolve(spec)


@pytest.mark.parametrize("value, text", [(10, "10"), (0.5, "0.5"), ("rrf", "rrf"), (True, "true"), (None, "null"),
                                         ([1, 2], "[1, 2]"), ({"bm25": 1}, "{bm25: 1}")])
def test_values_render_as_set_right_hand_sides(value, text):
    assert fmt_value(value) == text


def test_resolve_layers_spec_sets_then_extra_then_the_config_overrides(tmp_path):
    spec = load_sweep(write_sweep(tmp_path, """name: s
set: ["retrieval.top_k=7", "retrieval.fusion.rrf_k=5"]
grid: {retrieval.fusion.rrf_k: [10, 20]}
"""))
    got = resolve(spec, ["retrieval.top_k=9"])
    assert [(label, cfg.retrieval.top_k, cfg.retrieval.fusion.rrf_k) for label, _, cfg in got] == [
        ("rrf_k=10", 9, 10), ("rrf_k=20", 9, 20)]


def test_describe_writes_overrides_as_set_flags_in_yaml_spelling():
    from ragrig.eval.sweep.spec import describe

    assert describe({"retrieval.views.adapt": True, "embedding.adapt.pairs": ["cloze"], "retrieval.top_k": 5}) == (
        "--set retrieval.views.adapt=true --set embedding.adapt.pairs=[cloze] --set retrieval.top_k=5")
    assert describe({}) == "(the default)"


def test_labels_name_what_a_generic_key_switches(tmp_path):
    """A key's last segment labels it, unless it says nothing alone: `enabled=true, weight=0.5` read as nothing a
    user could find in their config; the rerank stage's keys keep their section."""
    spec = load_sweep(write_sweep(tmp_path, """name: s
configs:
  - {retrieval.rerank.enabled: true}
  - {retrieval.rerank.enabled: true, retrieval.rerank.weight: 0.5, retrieval.fusion.weights.vector: 1.5}
  - {retrieval.views.adapt: true, retrieval.views.second_model: all-MiniLM-L6-v2, embedding.adapt: true}
"""))
    assert [label for label, _ in expand(spec)] == [
        "rerank.enabled=true", "rerank.enabled=true, rerank.weight=0.5, vector=1.5",
        "views.adapt=true, second_model=all-MiniLM-L6-v2, adapt=true"]
