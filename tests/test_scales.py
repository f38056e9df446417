"""Scales: bounds, labels, lookup, reward mapping, template variables."""

from __future__ import annotations

import pytest

from rewardjudge import Scale
from rewardjudge.errors import ConfigError

# (name, min, max, first label, last label)
SCALES = [
    ("binary", 0, 1, "Fail", "Pass"),          # pass/fail
    ("graded", 0, 4, "Very poor", "Excellent"),  # five grades
    ("detailed", 0, 9, "Unusable", "Excellent"),  # ten grades, still one digit each
]


@pytest.mark.parametrize("name,lo,hi,first,last", SCALES)
def test_builtin_scales(name, lo, hi, first, last):
    s = Scale.get(name)
    assert (s.name, s.min, s.max) == (name, lo, hi)
    assert s.grades == list(range(lo, hi + 1)) and s.size == hi - lo + 1
    assert s.labels[0] == (lo, first) and s.labels[-1] == (hi, last)
    assert all(len(str(g)) == 1 for g in s.grades)  # one digit: one token
    assert s.to_reward(lo) == 0.0 and s.to_reward(hi) == 1.0
    assert Scale.get(name.upper()) is s and Scale.get(s) is s


def test_class_attributes_are_the_named_scales():
    assert Scale.BINARY is Scale.get("binary")
    assert Scale.GRADED is Scale.get("graded")
    assert Scale.DETAILED is Scale.get("detailed")
    assert len(Scale.DETAILED.labels) == 10


def test_to_reward_is_linear():
    assert Scale.GRADED.to_reward(3) == 0.75
    assert Scale.DETAILED.to_reward(3) == pytest.approx(1 / 3)
    assert Scale.GRADED.to_reward(2.5) == 0.625  # an expected grade maps too


# (value, on graded: contained?)
CONTAINS = [
    (0, True),      # lower bound
    (4, True),      # upper bound
    (5, False),     # above
    (-1, False),    # below
    (2.0, False),   # a float is not a grade
    (True, False),  # nor is a bool
    ("3", False),   # nor a string
]


@pytest.mark.parametrize("value,expected", CONTAINS)
def test_contains(value, expected):
    assert Scale.GRADED.contains(value) is expected


def test_template_vars():
    v = Scale.BINARY.template_vars()
    assert v == {"scale": "binary", "scale_min": 0, "scale_max": 1,
                 "scale_labels": [{"grade": 0, "label": "Fail"}, {"grade": 1, "label": "Pass"}]}
    assert Scale.GRADED.label(2) == "Acceptable"


def test_unknown_scale_names_the_choices():
    with pytest.raises(ConfigError, match=r"unknown scale 'stars'.*binary.*detailed.*graded"):
        Scale.get("stars")


def test_custom_scale_is_checked():
    s = Scale("stars", 1, 5, tuple((g, f"{g} stars") for g in range(1, 6)))
    assert s.to_reward(1) == 0.0 and s.to_reward(5) == 1.0 and Scale.get(s) is s
    with pytest.raises(ConfigError, match="max must exceed min"):
        Scale("flat", 1, 1, ((1, "one"),))
    with pytest.raises(ConfigError, match="labels must cover 1..3"):
        Scale("gappy", 1, 3, ((1, "a"), (3, "c")))


def test_every_grade_is_one_token_for_the_embedded_tokenizer():
    # the documented reason for 0-9 bounds, checked with SmolLM2's real vocabulary
    import llama_cpp  # the judge extra; installed by `make install`
    from rewardjudge.models import embedded_model_path

    llm = llama_cpp.Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)
    for g in Scale.DETAILED.grades:
        assert len(llm.tokenize(str(g).encode(), add_bos=False)) == 1
        assert len(llm.tokenize(f"<grade>{g}</grade>".encode(), add_bos=False)) == len(
            llm.tokenize(b"<grade>0</grade>", add_bos=False))
