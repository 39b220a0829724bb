"""benchmarks/merge_weights.py (experiment E14): the weighted average of two weight files, hand-checked."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file


@pytest.fixture(scope="module")
def merge_weights(load_benchmark):
    return load_benchmark("merge_weights")


def folder(root: Path, weights: dict[str, torch.Tensor], extra: bool = False) -> Path:
    root.mkdir()
    save_file(weights, root / "model.safetensors")
    (root / "config.json").write_text("{}")
    if extra:
        (root / "ragrig_adapt.json").write_text("{}")
    return root


def test_each_weight_is_the_weighted_average_and_the_rest_is_the_adapted_folders(merge_weights, tmp_path):
    base = folder(tmp_path / "base", {"w": torch.tensor([0.0, 2.0, -4.0]), "ids": torch.tensor([1, 2])})
    adapted = folder(tmp_path / "adapted", {"w": torch.tensor([4.0, 2.0, 0.0]), "ids": torch.tensor([1, 2])},
                     extra=True)
    assert merge_weights.main([str(base), str(adapted), str(tmp_path / "q"), "--alpha", "0.25"]) == 0
    got = load_file(tmp_path / "q" / "model.safetensors")
    assert got["w"].tolist() == [1.0, 2.0, -3.0] and got["w"].dtype == torch.float32
    assert got["ids"].tolist() == [1, 2]  # integer buffers are copied, never averaged
    assert sorted(p.name for p in (tmp_path / "q").iterdir()) == ["config.json", "model.safetensors"]
    merge_weights.main([str(base), str(adapted), str(tmp_path / "one"), "--alpha", "1"])
    assert load_file(tmp_path / "one" / "model.safetensors")["w"].tolist() == [4.0, 2.0, 0.0]


def test_a_foreign_base_an_existing_output_and_a_bad_share_are_refused(merge_weights, tmp_path):
    base = folder(tmp_path / "base", {"v": torch.zeros(2)})
    adapted = folder(tmp_path / "adapted", {"w": torch.zeros(2)})
    with pytest.raises(SystemExit, match="has no weight w"):
        merge_weights.main([str(base), str(adapted), str(tmp_path / "out")])
    with pytest.raises(SystemExit, match="exists"):
        merge_weights.main([str(adapted), str(adapted), str(base)])
    with pytest.raises(SystemExit, match="--alpha 1.5"):
        merge_weights.main([str(adapted), str(adapted), str(tmp_path / "x"), "--alpha", "1.5"])
