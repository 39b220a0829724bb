"""Where an adapted model goes: whole or not at all, reused only when it is the same training, and the recipe
kept out of the index identity."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.configs.errors import InputError
from ragrig.retrieval.adapt import output, run
from ragrig.retrieval.adapt.pairs import Pair


def test_an_interrupt_leaves_no_partial_folder(tmp_path: Path) -> None:
    target = tmp_path / "models" / "m"
    with pytest.raises(KeyboardInterrupt):
        with output.placed(target, replace=False) as tmp:
            tmp.mkdir()
            (tmp / "model.safetensors").write_bytes(b"half")
            raise KeyboardInterrupt
    assert not target.exists() and list((tmp_path / "models").iterdir()) == []


def test_a_complete_folder_is_renamed_into_place_and_replaces_only_when_asked(tmp_path: Path) -> None:
    target = tmp_path / "m"
    with output.placed(target, replace=False) as tmp:
        tmp.mkdir()
        (tmp / "a").write_text("1")
    assert (target / "a").read_text() == "1"
    with pytest.raises(InputError, match="exists; remove it, choose another folder, or pass --force"):
        with output.placed(target, replace=False):
            pass
    with output.placed(target, replace=True) as tmp:
        tmp.mkdir()
        (tmp / "b").write_text("2")
    assert sorted(p.name for p in target.iterdir()) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temp or old folder left beside it


def test_a_leftover_temp_folder_is_cleared(tmp_path: Path) -> None:
    """A run killed by SIGKILL or SIGTERM (no Python cleanup) leaves its temp model folder and the trainer's
    scratch folder; the next run for the same target clears both, and no other target's."""
    target = tmp_path / "m"
    stale = tmp_path / ".tmp-m-99999"
    stale.mkdir()
    scratch = tmp_path / (output.scratch_prefix(stale) + "abc123")
    scratch.mkdir()
    other = tmp_path / (output.scratch_prefix(tmp_path / ".tmp-n-99999") + "abc123")
    other.mkdir()
    with output.placed(target, replace=False) as tmp:
        tmp.mkdir()
    assert not stale.exists() and not scratch.exists() and target.is_dir() and other.is_dir()


def _prepared(cfg, target: Path, default: bool = True) -> run.Prepared:
    pairs = [Pair("header_body", "a", "b", ("d", ("a",))), Pair("cloze", "c", "d e f", ("d", ("a",)))]
    return run.Prepared(pairs, {"header_body": 1, "cloze": 1}, "k", "v000001", "abc", "base", "base-id", target,
                        default, output.recipe_hash(cfg, "base-id", "abc"))


def test_the_default_folder_is_reused_for_the_same_training(make_config, tmp_path: Path, monkeypatch) -> None:
    cfg = make_config()
    prep = _prepared(cfg, tmp_path / "m")
    calls = []

    def fake_train(pairs, base, out, recipe, device, progress=True, on_step=None):
        calls.append(out)
        out.mkdir()
        (out / "model.safetensors").write_bytes(b"w")
        from ragrig.retrieval.adapt.train import TrainStats

        return TrainStats(steps=1, losses=[0.5], seconds=1.0)

    monkeypatch.setattr(run, "train", fake_train)
    first = run.fit(cfg, prep, False, False, None)
    assert not first["reused"] and len(calls) == 1
    again = run.fit(cfg, prep, False, False, None)
    assert again["reused"] and again["steps"] == 1 and again["losses"] == [0.5] and len(calls) == 1
    assert run.fit(cfg, prep, True, False, None)["reused"] is False and len(calls) == 2  # --force trains again
    other = make_config(None, "embedding.adapt.lr=1e-4")  # another recipe: the record's hash differs
    assert run.fit(other, _prepared(other, tmp_path / "m"), False, False, None)["reused"] is False
    assert len(calls) == 3
    # the anchors carry a query prefix (bge's instruction): one changes the training, so the hash
    assert output.recipe_hash(cfg, "m", "c", "Represent: ") != output.recipe_hash(cfg, "m", "c")


def test_the_recipe_is_not_part_of_the_index_identity(make_config) -> None:
    a = make_config()
    b = make_config(None, "embedding.adapt.epochs=3", "embedding.adapt.pairs=[cloze]")
    assert a.index_key() == b.index_key()
    assert output.recipe_hash(a, "m", "c") != output.recipe_hash(b, "m", "c")
    assert output.recipe_hash(a, "m", "c") != output.recipe_hash(a, "m", "c2")  # the corpus version counts


def test_the_recipe_is_validated_like_every_section(make_config) -> None:
    for bad, key in [("embedding.adapt.pairs=[]", "embedding.adapt.pairs"),
                     ("embedding.adapt.pairs=[cloze, cloze]", "embedding.adapt.pairs"),
                     ("embedding.adapt.loss=triplet", "embedding.adapt.loss"),
                     ("embedding.adapt.batch_size=true", "embedding.adapt.batch_size"),
                     ("embedding.adapt.warmup_ratio=1", "embedding.adapt.warmup_ratio")]:
        with pytest.raises(InputError) as err:
            make_config(None, bad)
        assert key in str(err.value) and "\n" not in str(err.value), (bad, str(err.value))


def test_a_user_output_is_never_a_file_or_a_folder_adapt_did_not_write(tmp_path: Path) -> None:
    """--force replaced whatever --output named: a file (left as a hidden .old- copy) or a project folder (wiped).
    Now only a folder adapt wrote, or an empty one, is replaced; the rest is refused and untouched."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "notes.md").write_text("mine")
    for target, says in ((precious, "is not a folder"), (project, "holds files ragrig adapt did not write")):
        for replace in (False, True):
            with pytest.raises(InputError, match=says if replace or target is precious else "exists; remove it"):
                output.check_output(target, replace)
    assert precious.read_text() == "keep me" and (project / "notes.md").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt", "proj"]
    ours = tmp_path / "ours"
    ours.mkdir()
    output.write_record(ours, {"recipe_hash": "abc"})
    empty = tmp_path / "empty"
    empty.mkdir()
    for target in (ours, empty, tmp_path / "new" / "deeper"):
        output.check_output(target, replace=True)  # accepted
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_a_user_output_nowhere_writable_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file.yaml").write_text("x")
    with pytest.raises(InputError, match=r"^--output .*file.yaml/model: .*file.yaml is not a folder$"):
        output.check_output(tmp_path / "file.yaml" / "model", replace=False)
    with pytest.raises(InputError, match=r"^--output /proc/ragrig-model: folder /proc is not writable \("):
        output.check_output(Path("/proc/ragrig-model"), replace=False)


def test_the_cli_checks_output_before_any_work(published, tmp_path: Path, monkeypatch, capsys) -> None:
    from ragrig.flows.cli import main

    corpus = published({"a.md": "# A\n\n## One\n\nThe first section's body.\n\n## Two\n\nThe second body.\n"})
    monkeypatch.setattr(run, "prepare", lambda *a, **k: pytest.fail("work started before --output was checked"))
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    code = main(["adapt", "--no-prefect", "-q", "--no-compare", "--output", str(precious), "--force",
                 "--set", f"corpus.path={corpus}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "is not a folder" in err[0] and str(precious) in err[0]
    assert precious.read_text() == "keep me" and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
