"""The runner setting (flow.runner/workers/address): the keys it replaced are refused naming the new ones, the CLI
shortcuts --runner/--workers/--address become config overrides on ingest, eval, run, sweep and tune, and a
scheduler address where nothing answers is one line and a non-zero exit before any work."""

from __future__ import annotations

import socket

import pytest
from ragrig.configs.errors import InputError
from ragrig.configs.load import load_config
from ragrig.flows.cli import build_parser, main
from ragrig.flows.cli.common import runner_overrides


def test_defaults_are_the_local_runner():
    f = load_config().flow
    assert (f.runner, f.workers, f.address) == ("local", 2, None)


@pytest.mark.parametrize("old, new", [("task_runner: dask", "flow.runner"), ("max_workers: 4", "flow.workers"),
                                      ("dask_address: tcp://h:8786", "flow.address")])
def test_old_keys_in_a_file_are_refused_with_the_new_name(tmp_path, old, new):
    (tmp_path / "c.yaml").write_text(f"flow:\n  {old}\n")
    with pytest.raises(InputError) as exc:
        load_config(tmp_path / "c.yaml")
    line = str(exc.value)
    assert "\n" not in line and f"flow.{old.split(':')[0]} is now {new}" in line and "c.yaml" in line


def test_old_key_in_a_set_is_refused_with_the_new_name():
    with pytest.raises(InputError, match=r"flow.task_runner was renamed: it is now flow.runner"):
        load_config(overrides=["flow.task_runner=dask"])


def test_an_address_needs_the_dask_runner_and_a_scheme():
    with pytest.raises(InputError, match="an address needs flow.runner: dask"):
        load_config(overrides=["flow.address=tcp://h:8786"])
    with pytest.raises(InputError, match="flow.address"):
        load_config(overrides=["flow.runner=dask", "flow.address=h:8786"])
    assert load_config(overrides=["flow.runner=dask", "flow.address=tcp://h:8786"]).flow.address == "tcp://h:8786"


@pytest.mark.parametrize("command", [["ingest"], ["eval"], ["run"], ["sweep", "s.yaml"], ["tune", "t.yaml"]])
def test_runner_flags_become_overrides(command):
    parse = build_parser().parse_args
    assert runner_overrides(parse([*command, "--runner", "dask", "--workers", "3"])) == [
        "flow.runner=dask", "flow.workers=3"]
    assert runner_overrides(parse([*command, "--address", "tcp://10.0.0.5:8786"])) == [
        "flow.runner=dask", "flow.address=tcp://10.0.0.5:8786"]
    assert runner_overrides(parse([*command, "--runner", "local"])) == ["flow.runner=local"]
    assert runner_overrides(parse(command)) == []
    with pytest.raises(SystemExit):
        parse([*command, "--runner", "threads"])


def test_commands_without_the_flags_have_none():
    assert runner_overrides(build_parser().parse_args(["health"])) == []


def _dead_address() -> str:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def test_a_dead_scheduler_is_one_line_and_a_failed_run(tmp_path, capsys):
    (tmp_path / "ts.yaml").write_text("name: t\ncases:\n  - id: a\n    query: q\n    expect: [{doc: a.md}]\n")
    (tmp_path / "s.yaml").write_text(f"name: s\nset: ['eval.testsets=[{tmp_path / 'ts.yaml'}]']\n"
                                     "grid:\n  retrieval.top_k: [5, 10]\n")
    address = _dead_address()
    code = main(["sweep", str(tmp_path / "s.yaml"), "--no-prefect", "-q", "--address", address,
                 "--set", "flow.connect_timeout_s=2"])
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert err.count("\n") == 0 and err.startswith(f"error: flow.address {address}: no Dask scheduler answers")
    assert not (tmp_path / "ragrig-home" / "indexes").exists()  # nothing ingested


def test_a_dead_scheduler_fails_the_prefect_task_runner_too():
    from ragrig.flows.runners import SchedulerUnreachable, task_runner_for

    with pytest.raises(SchedulerUnreachable, match="no Dask scheduler answers"):
        task_runner_for(load_config(overrides=["flow.runner=dask", f"flow.address={_dead_address()}",
                                               "flow.connect_timeout_s=2"]))


@pytest.mark.parametrize("key", ["embedding.adapt", "retrieval.views.adapt"])
def test_a_candidate_flag_given_as_a_setting_says_what_it_is(key):
    """tune printed `--set embedding.adapt=true` for an adapted winner until 2026-11-28; a user who copies such a
    flag gets told what it is and what to do, not a pydantic type error or an unknown key."""
    with pytest.raises(InputError) as exc:
        load_config(overrides=[f"{key}=true"])
    line = str(exc.value)
    assert "\n" not in line and f"{key}: true/false is a candidate flag in a tune space or sweep file" in line
    assert "by hand: run `ragrig adapt" in line
    assert ("retrieval.views.second_model=<the folder" in line) == (key == "retrieval.views.adapt")
    with pytest.raises(InputError, match=f"{key}: true/false is a candidate flag"):
        load_config(overrides=[f"{key}=yes please"])


def test_the_adapt_recipe_is_still_set_key_by_key_or_whole():
    assert load_config(overrides=["embedding.adapt.epochs=2"]).embedding.adapt.epochs == 2.0
    assert load_config(overrides=["embedding.adapt={epochs: 3}"]).embedding.adapt.epochs == 3.0
