"""How a changed value's before and after are cut for one terminal line (``output.lines``)."""

from __future__ import annotations

from statesnap.output.lines import VALUE_WIDTH, short_pair


def test_a_short_pair_is_shown_whole_wherever_it_differs() -> None:
    b, a = "{'alpha': 1, 'beta': 2, 'gamma': 3}", "{'alpha': 1, 'beta': 2, 'gamma': 4}"
    assert short_pair(b, a) == (b, a)


def test_a_long_pair_differing_near_the_cut_is_cut_around_the_difference() -> None:
    head = "{'Schema': [class marshmallow.schema.Schema], 'marshm"
    b = head + "allow.StringSchema': [class x]} #d39ec0 len=67"
    a = head + "allow.ExampleSchema': [class y]} #d39ec0 len=68"
    cut_b, cut_a = short_pair(b, a)
    assert "StringSchema" in cut_b and "ExampleSchema" in cut_a, (cut_b, cut_a)
    assert len(cut_b) <= VALUE_WIDTH and len(cut_a) <= VALUE_WIDTH


def test_a_long_pair_differing_early_keeps_its_start() -> None:
    b, a = "[1, " + "x" * 80 + "]", "[2, " + "x" * 80 + "]"
    cut_b, cut_a = short_pair(b, a)
    assert cut_b.startswith("[1, ") and cut_a.startswith("[2, ")
