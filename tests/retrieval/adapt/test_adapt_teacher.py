"""``embedding.adapt.loss: margin_mse`` (retrieval/adapt/teacher.py): a teacher cross-encoder's scores attached to
each pair in order, the trainer's label column, the loss on the scaled cosine, the recipe's refusals, and a real
two-step fine-tune on the packaged teacher's labels that changes the encoder and is the same bytes twice."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from ragrig.configs.errors import InputError
from ragrig.configs.models import AdaptConfig
from ragrig.retrieval.adapt.pairs import Pair
from ragrig.retrieval.adapt.teacher import consistent, denoise, label
from ragrig.retrieval.adapt.train import ScaledCosine, columns, make_loss, train
from ragrig.retrieval.embedding import resolve_model
from ragrig.retrieval.encoders.cross_encoder import load_cross_encoder


class Lengths:
    """A fake teacher: a pair's score is its passage's length in characters, minus its anchor's."""

    id = "lengths"

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def score(self, pairs: Sequence[tuple[str, str]], max_tokens: int | None = None) -> np.ndarray:
        self.calls.append(list(pairs))
        return np.array([len(p) - len(q) for q, p in pairs], dtype=np.float64)


def pair(anchor: str, positive: str, *negatives: str) -> Pair:
    return Pair("header_body", anchor, positive, ("a.md", (anchor,)), tuple(negatives))


def test_every_pair_gets_its_positive_then_its_negatives_scores_in_one_call() -> None:
    teacher = Lengths()
    got = label([pair("ab", "abcdef", "abc", "a"), pair("x", "xyz", "xyzzy", "")], teacher)
    assert [p.scores for p in got] == [(4.0, 1.0, -1.0), (2.0, 4.0, -1.0)]
    assert teacher.calls == [[("ab", "abcdef"), ("ab", "abc"), ("ab", "a"), ("x", "xyz"), ("x", "xyzzy"), ("x", "")]]
    assert [(p.anchor, p.positive, p.negatives) for p in got] == [
        ("ab", "abcdef", ("abc", "a")), ("x", "xyz", ("xyzzy", ""))]
    assert label([], teacher) == [] and len(teacher.calls) == 1  # nothing to score: the teacher is not asked


def test_denoise_keeps_the_best_mined_candidates_the_teacher_scores_below_the_positive() -> None:
    # the Lengths teacher: positive "abcd" scores 4 - 1 = 3; candidates in BM25's order score 5, 1, 6, 0, 2
    p = pair("a", "abcd", "abcdef", "ab", "abcdefg", "a", "abc")
    [one] = denoise([p], Lengths(), 1)
    assert one.negatives == ("ab",) and one.scores == (3.0, 1.0)  # "abcdef" (5 > 3) is a false negative
    [two] = denoise([p], Lengths(), 2)
    assert two.negatives == ("ab", "a") and two.scores == (3.0, 1.0, 0.0)  # BM25's order among those kept
    # fewer candidates below the positive than wanted: topped up with the others the teacher scores lowest
    q = pair("a", "ab", "abcdef", "abc", "abcde", "")
    [short] = denoise([q], Lengths(), 3)
    assert short.negatives == ("", "abc", "abcde") and short.scores == (1.0, -1.0, 2.0, 4.0)


def test_consistency_keeps_the_pairs_whose_positive_beats_every_competitor_and_drops_the_competitors() -> None:
    # Lengths: "abcd" for anchor "a" scores 3; a competitor of 5 beats it, one of 3 ties it (not above: dropped)
    pairs = [pair("a", "abcd", "ab"), pair("a", "abcd", "abcdef"), pair("a", "abcd", "wxyz"),
             pair("b", "bcdefg", "bc", "b")]
    kept = consistent(pairs, Lengths())
    assert [(p.anchor, p.positive, p.negatives, p.scores) for p in kept] == [
        ("a", "abcd", (), ()), ("b", "bcdefg", (), ())]


def test_a_teacher_that_gives_non_finite_or_too_few_scores_is_refused() -> None:
    class Broken(Lengths):
        def __init__(self, values: list[float]) -> None:
            super().__init__()
            self.values = values

        def score(self, pairs, max_tokens=None):
            return np.array(self.values)

    with pytest.raises(InputError, match=r"^embedding\.adapt\.teacher: lengths gave 1 non-finite score\(s\) for 2"):
        label([pair("a", "b", "c")], Broken([1.0, float("nan")]))
    with pytest.raises(ValueError, match="gave 1 scores for 2 pairs"):
        label([pair("a", "b", "c")], Broken([1.0]))


def test_the_label_column_and_the_margin_loss_on_the_scaled_cosine() -> None:
    labelled = label([pair("ab", "abcdef", "abc"), pair("x", "xyz", "xyzzy")], Lengths())
    cols = columns(labelled)
    assert cols == {"anchor": ["ab", "x"], "positive": ["abcdef", "xyz"], "negative_1": ["abc", "xyzzy"],
                    "label": [[4.0, 1.0], [2.0, 4.0]]}
    assert "label" not in columns([pair("a", "b", "c")])  # no teacher: no label

    a, b = torch.tensor([[3.0, 4.0], [1.0, 0.0]]), torch.tensor([[3.0, 4.0], [0.0, 2.0]])
    assert ScaledCosine(20.0)(a, b).tolist() == [20.0, 0.0]  # cos 1 and cos 0, times the scale

    from sentence_transformers.sentence_transformer import losses

    loss = make_loss(object(), AdaptConfig(loss="margin_mse", hard_negatives=1, scale=5.0))
    assert isinstance(loss, losses.MarginMSELoss) and loss.similarity_fct.scale == 5.0


def test_the_recipe_refuses_margins_without_negatives_and_names_the_teacher_field() -> None:
    with pytest.raises(ValueError, match="margin_mse .* set hard_negatives to 1 or more"):
        AdaptConfig(loss="margin_mse")
    with pytest.raises(ValueError, match="denoise vets mined negatives: set hard_negatives to 1 or more"):
        AdaptConfig(denoise=True)
    assert AdaptConfig(loss="margin_mse", hard_negatives=2).teacher == "ms-marco-MiniLM-L-12-v2"
    with pytest.raises(InputError, match=r"^embedding\.adapt\.teacher: 'nope' is neither the packaged"):
        load_cross_encoder("nope", field="embedding.adapt.teacher")
    with pytest.raises(InputError, match=r"^retrieval\.rerank\.model: 'nope'"):  # the rerank's own field as before
        load_cross_encoder("nope")


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_fine_tune_on_the_packaged_teachers_margins_changes_the_encoder_the_same_way_twice(tmp_path: Path) -> None:
    base = resolve_model("all-MiniLM-L6-v2")
    texts = [("Grappling", "A grappled creature cannot move until it escapes.", "Lethal hits crit on a 5+."),
             ("Cover", "Cover gives a save against shooting.", "Smoke blocks line of sight."),
             ("Charge", "A charge moves the operative into combat.", "Rending upgrades one hit."),
             ("Lethal", "Lethal 5+ means a roll of five or more is a critical hit.", "Cover gives a save.")]
    pairs = label([pair(a, p, n) for a, p, n in texts],
                  load_cross_encoder("ms-marco-MiniLM-L-12-v2", field="embedding.adapt.teacher"), 64)
    assert all(len(p.scores) == 2 and p.scores[0] > p.scores[1] for p in pairs)  # the teacher knows which answers
    recipe = AdaptConfig(loss="margin_mse", hard_negatives=1, batch_size=2, max_tokens=32)
    first, second = tmp_path / "a", tmp_path / "b"
    stats = train(pairs, base, first, recipe, progress=False)
    assert stats.steps == 2 and len(stats.losses) == 2 and all(np.isfinite(stats.losses))
    train(pairs, base, second, recipe, progress=False)
    assert _digests(first) == _digests(second)
    base_weights = hashlib.sha256((Path(base) / "model.safetensors").read_bytes()).hexdigest()
    assert _digests(first)["model.safetensors"] != base_weights  # it learnt something
