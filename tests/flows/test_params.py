"""A flow's config: the caller's when given (loaded once, by the CLI), else from deployment/event parameters."""

from __future__ import annotations

import pytest
from ragrig.flows.params import flow_config


def test_a_loaded_config_is_used_as_it_is(make_config, tmp_path, monkeypatch):
    import ragrig.flows.params as params

    (tmp_path / "corpus").mkdir()
    cfg = make_config()
    monkeypatch.setattr(params, "load_config", lambda *a: pytest.fail("loaded the config again"))
    assert flow_config(cfg, "configs/other.yaml", ["retrieval.top_k=3"]) is cfg


@pytest.mark.parametrize(
    "config_path, overrides, want_path, want_overrides",
    [
        ("", '["retrieval.top_k=3"]', None, ["retrieval.top_k=3"]),  # an event payload: templated text
        ("None", "  ", None, []),
        ("configs/default.yaml", ["retrieval.top_k=4"], "configs/default.yaml", ["retrieval.top_k=4"]),
        (None, None, None, None),
    ],
)
def test_deployment_and_event_parameters(config_path, overrides, want_path, want_overrides, monkeypatch):
    import ragrig.flows.params as params

    seen = []
    monkeypatch.setattr(params, "load_config", lambda path, over: seen.append((path, over)) or "cfg")
    assert flow_config(None, config_path, overrides) == "cfg"
    assert seen == [(want_path, want_overrides)]
