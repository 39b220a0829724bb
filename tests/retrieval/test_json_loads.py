"""``retrieval/json_loads.loads``: orjson's speed, the standard library's values and errors."""

from __future__ import annotations

import json
import math

import pytest
from ragrig.retrieval.json_loads import loads

CASES = [
    b'{"a": [1, 2.5, -0.0, "\\u00e9", null, true], "b": {"c": "x"}}',
    '{"t": "Ünïcode ✓", "n": 0.1}',
    b'[0.30000000000000004, 1e-320, 1.7976931348623157e308]',
    b'{"k": 1, "k": 2}',  # the last of a repeated key, as json.loads
    b'[NaN, Infinity, -Infinity]',  # json.dumps writes these; orjson refuses them
    b'[1e400]',  # past a double: inf, as json.loads gives
    b'["\\ud800"]',  # an escaped lone surrogate
]


@pytest.mark.parametrize("raw", CASES)
def test_every_input_parses_to_what_json_loads_gives(raw):
    got, want = loads(raw), json.loads(raw)
    assert repr(got) == repr(want)  # repr: NaN == NaN, -0.0 vs 0.0 and int vs float told apart
    assert type(got) is type(want)


def test_an_integer_past_64_bits_is_the_nearest_float_the_one_documented_difference():
    assert loads(b"[18446744073709551615]") == [18446744073709551615]  # the largest orjson keeps an int
    got = loads(b"[123456789012345678901234567890]")[0]
    assert type(got) is float and got == float(123456789012345678901234567890)


def test_nan_comes_back_a_float_nan():
    assert math.isnan(loads(b"[NaN]")[0])


@pytest.mark.parametrize("raw", [b"", b"{", b"[1,]", b"\xff\xfe", "not json", b'{"a": 1} x'])
def test_what_json_loads_refuses_is_a_value_error(raw):
    with pytest.raises(ValueError):
        json.loads(raw)
    with pytest.raises(ValueError):
        loads(raw)
