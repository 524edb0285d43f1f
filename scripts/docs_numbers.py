#!/usr/bin/env python3
"""The numbers the READMEs quote, from the outputs scripts/docs-figures.sh made.

    python3 scripts/docs_numbers.py RUNS_DIR [--carry docs/figures/numbers.json]
    python3 scripts/docs_numbers.py --learners   # the learners' table's numbers only

Writes docs/figures/numbers.json ({key: text}, plus "_machine") and rewrites every
<!--n:KEY-->TEXT<!--/n--> span of README.md and agents/README.md with numbers[KEY]; agents/tests
(docs.rs) checks the spans equal the file, so a change that moves a number fails until this
runs. Keys the runs did not produce (the clean-clone build, measured with --clean-build) are
carried from the previous file and listed under "_carried".
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))


def load(path: str):
    with open(path) as f:
        return json.load(f)


def pm(s: dict, d: int = 2, signed: bool = True) -> str:
    """mean +- ci95 as the READMEs print it (no CI: the mean alone)."""
    mean = s["mean"]
    if abs(mean) < 0.5 * 10 ** -d:
        mean = 0.0
    m = f"{mean:+.{d}f}" if signed else f"{mean:.{d}f}"
    ci = s.get("ci95")
    return m if ci is None else f"{m} +- {ci:.{d}f}"


def level(x: float) -> str:
    return f"{x:g}" if x != int(x) else f"{x:.1f}"


def iqm(r: dict, d: int = 2) -> str:
    lo, hi = r["iqm_ci"]
    return f"{r['iqm']:+.{d}f} [{lo:+.{d}f}, {hi:+.{d}f}]"


def span_text(pcts: list[float]) -> str:
    lo, hi = round(min(pcts)), round(max(pcts))
    return f"{lo:+d}%" if lo == hi else f"{lo:+d}% to {hi:+d}%"


def learner_numbers(n: dict) -> None:
    """The learners' table's numbers into `n`, from docs/reports/learners-*.json."""
    # The learners' table (scripts/learners-report.sh; not rerun here, it takes 1 h 40 min). A
    # report may hold some worlds only (WORLDS=...): each row is read from the newest report
    # that has it, and the report it came from is a number too.
    # Newest first by the date in the name (learners-w124-...-2026-11-28 is older than
    # learners-w124-2026-11-29, though it sorts after it by name).
    dated = lambda p: (re.search(r"\d{4}-\d{2}-\d{2}", os.path.basename(p)).group(0), p)
    reports = sorted(glob.glob(os.path.join(ROOT, "docs/reports/learners-*.json")), key=dated, reverse=True)
    loaded = [(os.path.relpath(r, ROOT), load(r)) for r in reports]
    draws = {"uniform random (no learning)", "Hedge", "actor-critic", "PPO (IPPO)", "PPO (MAPPO)"}

    def row(world: str, reward: str, learner: str) -> dict:
        for _, rows in loaded:
            for r in rows:
                if r.get("world") == world and r.get("reward") == reward and r.get("learner") == learner:
                    return r
        print(f"docs_numbers: no row {world}/{reward}/{learner} in {', '.join(p for p, _ in loaded)}", file=sys.stderr)
        raise KeyError(learner)

    def report_of(world: str) -> str:
        return next(p for p, rows in loaded if any(r.get("world") == world and "learner" in r for r in rows))

    # Each world's report: the newest that has its rows (file names sort by date within a world).
    n["learners.report"] = report_of("quickstart")
    n["learners.w124.report"] = report_of("w124-mmpp")

    def trained(r: dict) -> dict:
        # How the learner was trained: sampled for one that draws its actions (reports before
        # issue 41 have no as_trained).
        return r.get("as_trained") or (r["sampled"] if r["learner"] in draws else r["greedy"])

    for key, (world, reward, learner) in {
        "learners.q.own.ac": ("quickstart", "own", "actor-critic"),
        "learners.q.own.ippo": ("quickstart", "own", "PPO (IPPO)"),
        "learners.q.own.mappo": ("quickstart", "own", "PPO (MAPPO)"),
        "learners.q.own.es": ("quickstart", "own", "ES"),
        "learners.q.own.hedge": ("quickstart", "own", "Hedge"),
        "learners.q.welfare.es": ("quickstart", "welfare", "ES"),
        "learners.q.welfare.ac": ("quickstart", "welfare", "actor-critic"),
        "learners.q.welfare.ippo": ("quickstart", "welfare", "PPO (IPPO)"),
        "learners.q.welfare.mappo": ("quickstart", "welfare", "PPO (MAPPO)"),
        "learners.w124.welfare.es": ("w124-mmpp", "welfare", "ES"),
        "learners.w124.welfare.mappo": ("w124-mmpp", "welfare", "PPO (MAPPO)"),
        "learners.w124.welfare.ippo": ("w124-mmpp", "welfare", "PPO (IPPO)"),
    }.items():
        n[key] = iqm(trained(row(world, reward, learner)))
    n["learners.q.uniform"] = f"{row('quickstart', 'own', 'uniform random (no learning)')['sampled']['iqm']:+.2f}"
    n["learners.w124.uniform"] = f"{row('w124-mmpp', 'own', 'uniform random (no learning)')['sampled']['iqm']:+.2f}"
    n["learners.q.ppo.thresholds.own"] = row("quickstart", "own", "PPO (IPPO)")["thresholds"]
    n["learners.q.ppo.thresholds.welfare"] = row("quickstart", "welfare", "PPO (IPPO)")["thresholds"]
    n["learners.q.ac.thresholds.own"] = row("quickstart", "own", "actor-critic")["thresholds"]



def write(n: dict, out: str) -> None:
    """numbers.json, and every span of the READMEs from it."""
    with open(out + ".tmp", "w") as fh:
        json.dump(n, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(out + ".tmp", out)

    span = re.compile(r"<!--n:([A-Za-z0-9_.]+)-->(.*?)<!--/n-->", re.S)
    for doc in ["README.md", "agents/README.md"]:
        path = os.path.join(ROOT, doc)
        with open(path) as fh:
            text = fh.read()
        missing = [k for k in span.findall(text) if k[0] not in n]
        if missing:
            sys.exit(f"docs_numbers: {doc} quotes keys this script does not make: {[k[0] for k in missing]}")
        new = span.sub(lambda m: f"<!--n:{m.group(1)}-->{n[m.group(1)]}<!--/n-->", text)
        if new != text:
            with open(path + ".tmp", "w") as fh:
                fh.write(new)
            os.replace(path + ".tmp", path)


def main() -> None:
    runs = sys.argv[1]
    out = os.path.join(ROOT, "docs/figures/numbers.json")
    previous = load(out) if os.path.exists(out) else {}
    n: dict[str, str] = {}
    if runs == "--learners":
        # After a learners report (which docs-figures.sh does not rerun): its numbers anew,
        # every other number as the last full run left it.
        n = dict(previous)
        learner_numbers(n)
        write(n, out)
        return

    timings = load(os.path.join(runs, "timings.json"))
    n["quickstart.train_seconds"] = f"{timings['train']:.0f} s"
    n["analyze.q.seconds"] = f"{timings['analyze_quickstart']:.0f} s"
    n["analyze.w128.seconds"] = f"{timings['analyze_w128']:.0f} s"
    n["thesis.quick_seconds"] = f"{timings['thesis_quick']:.0f} s"
    # README's learning line: 3 replicates, sampled against the best fixed level.
    learns = load(os.path.join(runs, "learns/summary.json"))
    n["learns.sampled"] = iqm(learns["vs_baseline"]["sampled"])
    n["learns.seconds"] = f"{timings['learns']:.0f} s"

    # The quickstart comparison: the best fixed level, and the fixed level closest to it whose
    # paired difference is still significant (what unpaired intervals hide).
    cmp = load(os.path.join(runs, "compare/summary.json"))
    fixed = [r for r in cmp["rows"] if r["policy"].startswith("fixed:") and r["mechanism"] == "mtf"]
    fixed.sort(key=lambda r: -r["summary"]["welfare"]["mean"])
    best = fixed[0]
    shown = [r for r in fixed[1:] if r["paired"]["significant"]]
    close = min(shown, key=lambda r: abs(r["paired"]["welfare_diff"]["mean"]))
    n["compare.best_fixed"] = best["policy"].split(":", 1)[1]
    n["compare.close_fixed"] = close["policy"].split(":", 1)[1]
    d = close["paired"]["welfare_diff"]
    n["compare.close_diff"] = f"{abs(d['mean']):.2f} +- {d['ci95']:.2f}"
    n["compare.unpaired_ci"] = f"{best['summary']['welfare']['ci95']:.1f}"

    # The analyses.
    names = {"none": "none", "burst": "burst", "budget": "budget", "backlog": "backlog"}
    for tag, path in [("q", "analyze-quickstart"), ("w128", "analyze-w128")]:
        a = load(os.path.join(runs, path, "summary.json"))
        n[f"analyze.{tag}.best_fixed"] = level(a["best_fixed"])
        fixed_welfare = next(r for r in a["rows"] if r["policy"].startswith("fixed:"))["summary"]["welfare"]["mean"]
        n[f"analyze.{tag}.welfare"] = f"{fixed_welfare:.0f}"
        gains = {}
        for h in a["headroom"]:
            key = names[h["bit"]]
            gains[key] = h["held_out_gain"]
            n[f"analyze.{tag}.headroom.{key}"] = pm(h["held_out_gain"])
        top = max(gains, key=lambda k: gains[k]["mean"])
        n[f"analyze.{tag}.headroom.top"] = f"{pm(gains[top])} (x {top})" if top != "none" else f"{pm(gains[top])} (per class)"
        n[f"analyze.{tag}.headroom.pct"] = f"{100 * max(g['mean'] for g in gains.values()) / fixed_welfare:.1f}%"
        for b in a["best_responses"]:
            w = f"w{b['weight']:g}"
            n[f"analyze.{tag}.br.{w}.level"] = level(b["deviation"])
            n[f"analyze.{tag}.br.{w}.own"] = pm(b["own_throughput_gain"])
            n[f"analyze.{tag}.br.{w}.welfare"] = pm(b["welfare_change"])
        sig = [s for s in a["signals"] if s["gain"] > 0]
        if sig:
            pct = [100 * s["relative_gain"] for s in sig]
            ratio = [s["sd"] / s["gain"] for s in sig]
            between = lambda xs: f"{min(xs):.0f}" if round(min(xs)) == round(max(xs)) else f"{min(xs):.0f}-{max(xs):.0f}"
            n[f"analyze.{tag}.signal.gain_pct"] = between(pct) + "%"
            n[f"analyze.{tag}.signal.sd_ratio"] = between(ratio)
        e = a["equilibrium"]
        n[f"analyze.{tag}.eq.levels"] = ", ".join(f"w{w:g} {level(l)}" for w, l in e["levels"])
        n[f"analyze.{tag}.eq.vs_fixed"] = pm(e["vs_best_fixed"])
        if a["token_scale"]:
            diffs = [dict(p["diffs"]) for p in a["token_scale"]]
            n[f"analyze.{tag}.tokens.stride"] = " / ".join(pm(d["stride"]) for d in diffs)
            n[f"analyze.{tag}.tokens.bought"] = " / ".join(f"{p['paid_share']['mean']:.2f}" for p in a["token_scale"])

    # The thesis-code preset of `mtf reproduce thesis --quick`: MTF's gap over each baseline,
    # across the setups at the first deadline, and the thesis code's own stride at the last.
    f = load(os.path.join(runs, "thesis/findings.json"))
    first = min(r["deadline"] for r in f["thesis_code"])
    last = max(r["deadline"] for r in f["thesis_code"])
    for b in ["gandiva_fair", "stride", "themis", "round_robin"]:
        pcts = [r["gaps"][b]["pct"] for r in f["thesis_code"] if r["deadline"] == first and b in r["gaps"]]
        n[f"thesis.code.{b}"] = span_text(pcts)
    spa = [r["gaps"]["stride_per_accelerator"]["pct"] for r in f["thesis_code"] if r["deadline"] == last]
    n["thesis.code.deadline_first"] = str(first)
    n["thesis.code.deadline_last"] = str(last)
    n["thesis.code.spa_last"] = span_text(spa)

    learner_numbers(n)

    carried = []
    for k, v in previous.items():
        if not k.startswith("_") and k not in n and k.startswith("build."):
            n[k] = v
            carried.append(k)
    for k in ("build.main_seconds", "build.tests_seconds", "build.target_mb"):
        if os.path.exists(os.path.join(runs, "build.json")):
            b = load(os.path.join(runs, "build.json"))
            n.update({f"build.{k2}": v for k2, v in b.items()})
            carried = [c for c in carried if not c.startswith("build.")]
            break
    n["_machine"] = timings["machine"]
    n["_carried"] = ", ".join(carried) if carried else "none"
    write(n, out)
    print(f"docs_numbers: {len(n) - 2} numbers in {os.path.relpath(out, ROOT)}; carried: {n['_carried']}")


if __name__ == "__main__":
    main()
