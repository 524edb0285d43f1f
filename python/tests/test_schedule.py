"""mtf_env.schedule is `mtf schedule`: the same output for the same round, the same errors."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from conftest import ROOT, run_json

import mtf_env

ROUNDS = ROOT / "configs/rounds"


@pytest.mark.parametrize(
    "mechanism,file",
    [
        ("mtf", "spec-example.json"),
        ("mtf", "demand-example.json"),
        ("themis", "spec-example.json"),
        ("stride", "demand-example.json"),
        ("second_price", "auction-example.json"),
        ("first_price", "auction-example.json"),
    ],
)
def test_schedule_matches_the_cli(mtf_bin, mechanism, file):
    text = (ROUNDS / file).read_text()
    cli = run_json([mtf_bin, "schedule", "--mechanism", mechanism, "--input", str(ROUNDS / file)])
    assert mtf_env.schedule(mechanism, json.loads(text)) == cli
    assert mtf_env.schedule(mechanism, text) == cli


def test_mtf_round_by_hand():
    # SPEC 3's example: agent 1 is richer and buys its favourite accelerators first.
    out = mtf_env.schedule(
        "mtf",
        {
            "utilities": np.array([[0.1, 0.9, 0.1, 0.2], [0.5, 0.6, 0.5, 0.7]]),
            "thresholds": [0.5, 0.5],
            "budgets": [50.0, 50.0],
            "weights": [1.0, 1.0],
            "turn": 0,
        },
    )
    assert out["owners"] == [1, 0, 1, 1]
    assert out["budgets"] == [51.0, 49.0]


def test_bad_rounds_raise_the_cli_message(mtf_bin):
    for mechanism, text in [("nope", '{"utilities": [[0.5]]}'), ("mtf", '{"utilities": [[1.5]]}'), ("mtf", "{")]:
        cli = subprocess.run([mtf_bin, "schedule", "-m", mechanism], input=text, capture_output=True, text=True)
        assert cli.returncode == 2
        with pytest.raises(ValueError) as err:
            mtf_env.schedule(mechanism, text)
        assert str(err.value) in cli.stderr, (str(err.value), cli.stderr)
    with pytest.raises(ValueError, match="fairness is 3"):
        mtf_env.schedule("themis", {"utilities": [[0.5]]}, fairness=3.0)
    with pytest.raises(TypeError, match="not a JSON value"):
        mtf_env.schedule("mtf", {"utilities": object()})


def test_a_deeply_nested_round_raised_recursion_error():
    deep = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nests too deeply"):
        mtf_env.schedule("mtf", {"utilities": deep})
    # As JSON text, the parser's depth limit names the problem.
    with pytest.raises(ValueError):
        mtf_env.schedule("mtf", "[" * 100_000 + "]" * 100_000)
