"""Issue 36 defect 8: every output path is checked before any work (one check in ``main`` for every command's
--output-json / --write / --markdown / --junit / --output, and tune's default --write path): a folder or a parent
that is a file is one line, exit 2, before the first candidate runs. ``tune --write DIR`` used to fail with
IsADirectoryError after the whole tune, its table never printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragrig.flows.cli import main


def _space(tmp_path: Path) -> Path:
    (tmp_path / "ts.yaml").write_text("name: t\ncases:\n" + "".join(
        f"  - {{id: c{i}, query: q{i}, expect: [{{doc: a.md}}], tags: [single-hop]}}\n" for i in range(6)))
    p = tmp_path / "space.yaml"
    p.write_text(f"name: paths\nset: ['eval.testsets=[{tmp_path / 'ts.yaml'}]', 'corpus.path={tmp_path}']\n"
                 "configs: [{retrieval.top_k: 5}]\nfolds: 2\n")
    return p


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if any candidate evaluation or ingest starts."""
    import ragrig.eval.sweep.run as sweep_run
    import ragrig.eval.tune.run  # noqa: F401 - imported before the patch: a first import during it would bind the
    # stand-in as tune.run's own run_sweep, and the undo would restore that, failing later tests in this process

    def started(*args, **kwargs):
        raise AssertionError("work started before the output paths were checked")

    monkeypatch.setattr(sweep_run, "run_sweep", started)
    monkeypatch.setattr("ragrig.eval.tune.run.run_sweep", started)
    monkeypatch.setattr(sweep_run.IngestPipeline, "run", started)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


@pytest.mark.parametrize("flag", ["--write", "--output-json"])
def test_tune_to_a_directory_is_refused_before_any_candidate(tmp_path, capsys, no_work, flag):
    out = tmp_path / "out-dir"
    out.mkdir()
    assert main(["tune", str(_space(tmp_path)), flag, str(out), "-q"]) == 2
    assert _one_line(capsys) == f"error: {flag} {out}: is a directory; give a file path"
    assert not (tmp_path / "ragrig-home" / "mlflow").exists()  # not even the MLflow parent run was opened


def test_tunes_default_write_path_is_checked_too(tmp_path, capsys, no_work, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tuned-paths.yaml").mkdir()  # where the default --write would go
    assert main(["tune", str(_space(tmp_path)), "-q"]) == 2
    assert _one_line(capsys) == "error: --write tuned-paths.yaml: is a directory; give a file path"


@pytest.mark.parametrize("argv", [
    ["sweep", "S", "--no-prefect", "--output-json", "OUT"],
    ["eval", "--no-prefect", "--output-json", "OUT"],
    ["ingest", "--no-prefect", "--output-json", "OUT"],
    ["run", "--no-prefect", "--output-json", "OUT"],
    ["compare", "a.json", "b.json", "--markdown", "OUT"],
    ["health", "--output-json", "OUT"],
], ids=lambda a: a[0])
def test_every_command_checks_its_outputs_first(tmp_path, capsys, no_work, argv):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = blocker / "sub" / "report.json"  # its parent's parent is a file: nothing can be written there
    args = [str(out) if a == "OUT" else str(_space(tmp_path)) if a == "S" else a for a in argv]
    assert main(args) == 2
    assert _one_line(capsys) == f"error: {args[args.index(str(out)) - 1]} {out}: {blocker} is not a folder"


def test_gate_update_baseline_checks_the_baseline_path(tmp_path, capsys, no_work):
    (tmp_path / "base").mkdir()
    assert main(["gate", "--baseline", str(tmp_path / "base"), "--update-baseline", "--no-ingest"]) == 2
    assert _one_line(capsys) == f"error: --baseline {tmp_path / 'base'}: is a directory; give a file path"


def test_a_missing_folder_is_fine_it_is_created(tmp_path):
    from ragrig.retrieval.atomic import unwritable

    assert unwritable(tmp_path / "new" / "deeper" / "out.json") is None
    assert unwritable(tmp_path / "out.json") is None
    assert unwritable(tmp_path) == "is a directory; give a file path"


def test_testset_check_write_is_a_switch_not_a_path(tmp_path, capsys):
    # `testset check --write` takes no path: the check leaves it alone (the command fails later, for its own reason)
    code = main(["testset", "check", "--write", "--testset", str(tmp_path / "missing.yaml")])
    assert code == 2 and "--write" not in capsys.readouterr().err


@pytest.mark.parametrize("command", [["ingest", "--no-prefect", "-q"], ["query", "x"], ["eval"], ["health"]])
def test_a_home_that_is_a_file_is_one_line(tmp_path, capsys, command):
    """A probe's `home=` a file: NotADirectoryError (exit 1) from whichever command touched it first."""
    afile = tmp_path / "afile.bin"
    afile.write_bytes(b"x")
    for home in (afile, afile / "deeper"):
        assert main([*command, "--set", f"home={home}"]) == 2
        assert _one_line(capsys) == f"error: home {home}: {afile} is not a folder (set home: or $RAGRIG_HOME to a folder)"
    assert afile.read_bytes() == b"x"
