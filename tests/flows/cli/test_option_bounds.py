"""Command-line numbers and addresses are checked like the config's: `ragrig eval`'s are bounded as the config's (hostile probes, 2026-11-29: `-n -1` was an IndexError,
`-n 0` ran once, `-n 100000000` ran until killed; `eval.k_values=[100000]` failed inside the search, after work,
naming top_k)."""

from __future__ import annotations

import pytest
from ragrig.configs.errors import InputError
from ragrig.configs.load import load_config
from ragrig.flows.cli import main


@pytest.mark.parametrize("n", ["-1", "0", "101", "100000000"])
def test_repeats_out_of_range_is_one_line_before_any_work(n, capsys):
    assert main(["eval", "-n", n, "--set", "eval.testsets=[]"]) == 2  # no index: the bound is checked first
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: -n/--repeats {n}: between 1 and 100 (as eval.repeats)"]


def test_k_values_beyond_the_retrieval_depth_name_the_setting():
    with pytest.raises(InputError, match=r"eval\.k_values.*from 1 to 1000"):
        load_config(overrides=["eval.k_values=[10, 100000]"])
    assert load_config(overrides=["eval.k_values=[1000]"]).eval.k_values == [1000]


@pytest.mark.parametrize("url, says", [
    ("notaurl", "is not an http:// or https:// URL with a host"),
    ("ftp://x", "is not an http:// or https:// URL with a host"),
    ("http://127.0.0.1:99999", "Port out of range"),
    ("http://127.0.0.1:1/\x1b[31m", "has spaces or control characters"),
])
def test_a_malformed_server_url_is_one_line_naming_the_variable(monkeypatch, capsys, url, says):
    """`RAGRIG_SERVER_URL=notaurl ragrig query x` was `ValueError: unknown url type`, exit 1 (probe, 2026-11-29)."""
    monkeypatch.setenv("RAGRIG_SERVER_URL", url)
    assert main(["query", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: $RAGRIG_SERVER_URL ") and says in err[0], err
    assert "\x1b" not in err[0]


def test_validate_refuses_what_ingest_refuses(tmp_path, capsys):
    """`validate EMPTY` said "0 files: 0 errors" (exit 0) where ingest says "nothing to index" (exit 2), and
    `validate ""` validated the configured corpus instead (probe, 2026-11-29)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["validate", "--no-tokens", str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: corpus.path: no documents in ") and "nothing to index" in err[0]
    assert main(["validate", "--no-tokens", ""]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: validate: FOLDER is empty; name a corpus folder, or leave it out to validate corpus.path"]


@pytest.mark.parametrize("argv, says", [
    (["query", "x", "-k", "1.5"], "error: ragrig query: argument --top-k/-k: invalid int value: '1.5'"),
    (["testset", "draft"], "error: ragrig testset draft: the following arguments are required: --output/-o"),
    (["bogus"], "error: ragrig: argument command: invalid choice: 'bogus'"),
])
def test_a_usage_error_is_one_line(capsys, argv, says):
    """argparse printed its usage block first (5-6 lines for `-k 1.5`, probe 2026-11-29)."""
    with pytest.raises(SystemExit) as ended:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert ended.value.code == 2 and len(err) == 1 and err[0].startswith(says) and err[0].endswith("--help)"), err


def test_the_served_url_writes_an_ipv6_host_in_brackets():
    from ragrig.flows.cli.serve import url_host

    assert [url_host(h) for h in ("::1", "127.0.0.1", "localhost", "[::1]")] == ["[::1]", "127.0.0.1", "localhost",
                                                                                 "[::1]"]
