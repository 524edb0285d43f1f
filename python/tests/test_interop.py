"""mtf's outputs read by the tools researchers use: a study exported with `mtf sweep export`
loads in Optuna, and a training run's hparams read back through TensorBoard's own reader."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import ROOT, run_json

SWEEP = """base = "{base}"
sampler = "random"
seed = 2
trials = 5
workers = 1

[budget]
episodes = 3
eval_seeds = 1
set = ["env.rounds=10"]

[pruner]
kind = "none"

[params]
"learner.actor_critic.actor_lr" = {{ type = "float", low = 1e-4, high = 1e-2, log = true }}
"learner.actor_critic.actor_hidden" = {{ type = "int", low = 8, high = 32, step = 8 }}
"learner.actor_critic.features" = {{ type = "categorical", choices = ["spec", "all"] }}
"""


@pytest.fixture(scope="module")
def study(mtf_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("study")
    (d / "sweep.toml").write_text(SWEEP.format(base=ROOT / "configs/quickstart.toml"))
    storage = f"sqlite:{d / 'study.db'}"
    swept = run_json([mtf_bin, "sweep", "--config", str(d / "sweep.toml"), "--storage", storage,
                      "--study", "interop", "--out", str(d / "out"), "--quiet", "--json"])
    return d, storage, swept


def test_an_exported_study_loads_in_optuna(mtf_bin, study):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    d, storage, swept = study
    journal = d / "study.journal"
    out = subprocess.run([mtf_bin, "sweep", "export", "--study", "interop", "--storage", storage, "--out", str(journal)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = optuna.load_study(study_name="interop", storage=JournalStorage(JournalFileBackend(str(journal))))
    assert loaded.direction == optuna.study.StudyDirection.MAXIMIZE
    ours = swept["trials"]
    assert [t.number for t in loaded.trials] == [t["number"] for t in ours] == list(range(5))
    for t, o in zip(loaded.trials, ours):
        assert t.state == optuna.trial.TrialState.COMPLETE and o["state"] == "complete"
        assert t.value == o["value"]
        assert t.params == o["params"], (t.params, o["params"])
        assert t.user_attrs["run_dir"] == o["run_dir"]
        assert sorted(t.intermediate_values) == [1, 2, 3]
        assert t.datetime_start <= t.datetime_complete
    assert loaded.best_trial.number == swept["best"]
    assert isinstance(loaded.trials[0].distributions["learner.actor_critic.features"],
                      optuna.distributions.CategoricalDistribution)
    # Optuna's own samplers continue from it: the exported history is a valid study.
    loaded.sampler = optuna.samplers.TPESampler(seed=0)
    trial = loaded.ask()
    assert trial.number == 5


def test_export_errors_are_one_line(mtf_bin, study, tmp_path):
    d, storage, _ = study
    for args, want in [
        (["--study", "nope", "--storage", storage], "no study named `nope`"),
        (["--study", "interop", "--storage", f"sqlite:{tmp_path / 'missing.db'}"], "no such study database"),
    ]:
        out = subprocess.run([mtf_bin, "sweep", "export", *args, "--out", str(tmp_path / "j")], capture_output=True, text=True)
        assert out.returncode == 2 and want in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (tmp_path / "missing.db").exists()


def test_a_training_run_writes_hparams_tensorboard_reads(mtf_bin, study):
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.plugins.hparams import api_pb2

    d, _, swept = study
    # Every trial of the sweep is a training run: TensorBoard at <out>/trials compares them.
    run = swept["trials"][1]
    acc = event_accumulator.EventAccumulator(
        str(d / "out/trials/trial-0001/tb"), size_guidance={event_accumulator.TENSORS: 0}
    )
    acc.Reload()
    content = acc.PluginTagToContent("hparams")
    assert set(content) == {"_hparams_/session_start_info", "_hparams_/session_end_info"}
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hp = start.session_start_info.hparams
    assert hp["learner.kind"].string_value == "actor_critic"
    assert hp["env.rounds"].number_value == 10
    assert hp["learner.actor_critic.actor_lr"].number_value == run["params"]["learner.actor_critic.actor_lr"]
    assert hp["learner.actor_critic.features"].string_value == run["params"]["learner.actor_critic.features"]
    assert hp["env.agents[0].count"].number_value == 4
    end = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_end_info"])
    assert end.session_end_info.status == api_pb2.STATUS_SUCCESS
    # The metrics: the summary's figures as scalars, equal to the objective mtf recorded.
    scalars = acc.Tags()["scalars"]
    assert "summary/eval_welfare" in scalars
    assert acc.Scalars("summary/eval_welfare")[-1].value == pytest.approx(run["value"], rel=1e-6)


def test_optuna_opening_mtfs_database_is_refused_before_it_writes(mtf_bin, study):
    # optuna-dashboard pointed at a study database crashed and left 11 Optuna tables in it
    # (issue 40.6). Optuna now fails at its first table, and the database is as it was.
    import sqlite3

    import optuna

    d, storage, swept = study
    db = d / "study.db"

    def schema():
        with sqlite3.connect(db) as c:
            return sorted(c.execute("SELECT type, name FROM sqlite_master").fetchall())

    before = schema()
    with pytest.raises(Exception, match="already an index named"):
        optuna.load_study(study_name="interop", storage=f"sqlite:///{db}")
    assert schema() == before
    # mtf still reads and continues the study.
    out = subprocess.run([mtf_bin, "sweep", "status", "--study", "interop", "--storage", storage],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "study `interop`" in out.stdout and "complete 5" in out.stdout, out.stdout


def test_a_comparison_figure_is_a_pdf_whose_text_reads(mtf_bin, tmp_path):
    # Figures come as PDF beside PNG and SVG (for a paper): vectors with the text set in the
    # embedded font, so a PDF reader extracts the axis label and the row names.
    from pypdf import PdfReader

    out = tmp_path / "cmp"
    done = subprocess.run(
        [mtf_bin, "compare", "--config", "configs/quickstart.toml", "--policies", "fixed:0.2,fixed:0.7",
         "--seeds", "3", "--set", "env.rounds=40", "--quiet", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    reader = PdfReader(str(out / "welfare_paired.pdf"))
    assert len(reader.pages) == 1
    text = reader.pages[0].extract_text()
    assert "welfare difference" in text and "fixed:0.7" in text, text
    listed = "- [welfare_paired.png](welfare_paired.png) (welfare_paired.svg, welfare_paired.pdf, welfare_paired.column.pdf)"
    assert listed in (out / "comparison.md").read_text()
    # The single-column version: a 3.3-inch page (237.6 pt) whose text reads too.
    column = PdfReader(str(out / "welfare_paired.column.pdf")).pages[0]
    assert abs(float(column.mediabox.width) - 237.6) < 0.1, column.mediabox
    assert "fixed:0.7" in column.extract_text()
