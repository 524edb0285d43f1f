"""A policy trained in Python, saved as ONNX, and scored by `mtf compare` against the fixed levels.

One linear softmax policy shared by every agent (parameter sharing, as Stable-Baselines3 trains
one policy over supersuit's vector of agents) learns from each agent's per-round reward with
REINFORCE in NumPy on the batched API. It is written as an ONNX graph (clip, MatMul, Add: the
file `torch.onnx.export` would write for the same network), scored here on held-out seeds, and
then by `mtf compare --policies onnx:FILE,fixed:all` on the same seeds: mtf's welfare for the
ONNX policy is the one computed here, seed by seed.

    python python/examples/onnx_policy.py [--config FILE] [--episodes 20] [--out policy.onnx]

Any trainer works the same way: export a network mapping an agent's observation (the
`observation_space` of `mtf_env`, float32, with a free batch axis) to one logit per level, then
`mtf compare --policies onnx:policy.onnx,fixed:all` (greedy) or `sampled:onnx:policy.onnx`.
For Stable-Baselines3: `torch.onnx.export(OnnxableActor(model.policy), torch.zeros(1, dim),
"policy.onnx", input_names=["obs"], dynamic_axes={"obs": {0: "batch"}})`, where the wrapper's
forward returns `policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(obs)))`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import mtf_env

CLIP = 4.0


def features(obs: np.ndarray) -> np.ndarray:
    # Unbounded ratios (backlog over arrival rate) are clipped, in the graph too.
    return np.clip(obs, 0.0, CLIP).astype(np.float32)


def logits(obs: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return features(obs) @ w + b


def train(config, overrides, num_envs=8, episodes=20, lr=0.05, seed=0, log=print):
    """REINFORCE with a running-mean baseline per agent; returns the float32 weights (w, b)."""
    vec = mtf_env.VecEnv(config, num_envs, overrides=overrides)
    k = len(vec.levels)
    rng = np.random.default_rng(seed)
    obs = vec.reset(seed)
    w = np.zeros((obs.shape[-1], k), dtype=np.float32)
    b = np.zeros(k, dtype=np.float32)
    baseline = np.zeros(vec.n_agents)
    for episode in range(episodes):
        total = 0.0
        for _ in range(vec.rounds):
            z = logits(obs, w, b)
            p = np.exp(z - z.max(axis=-1, keepdims=True))
            p /= p.sum(axis=-1, keepdims=True)
            actions = np.minimum((p.cumsum(axis=-1) < rng.random(p.shape[:-1] + (1,))).sum(axis=-1), k - 1)
            x = features(obs)
            obs, r, _, _ = vec.step(actions)
            g = (np.eye(k)[actions] - p) * (r - baseline)[..., None]
            w += (lr * np.einsum("end,enk->dk", x, g) / (num_envs * vec.n_agents)).astype(np.float32)
            b += (lr * g.sum(axis=(0, 1)) / (num_envs * vec.n_agents)).astype(np.float32)
            baseline += 0.05 * (r.mean(axis=0) - baseline)
            total += r.mean()
        log(f"episode {episode + 1:3d}: reward per agent-round {total / vec.rounds:.4f}")
    return w, b


def save_onnx(w: np.ndarray, b: np.ndarray, path: str) -> None:
    """The policy as an ONNX graph: obs [batch, dim] -> clip -> MatMul w -> Add b -> logits [batch, K]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    dim, k = w.shape
    graph = helper.make_graph(
        [
            helper.make_node("Clip", ["obs", "lo", "hi"], ["x"]),
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["logits"]),
        ],
        "mtf_policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", dim])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", k])],
        initializer=[
            numpy_helper.from_array(np.float32(0.0), "lo"),
            numpy_helper.from_array(np.float32(CLIP), "hi"),
            numpy_helper.from_array(w.astype(np.float32), "w"),
            numpy_helper.from_array(b.astype(np.float32), "b"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def greedy_welfare(config, overrides, act, seeds) -> list[float]:
    """Each seed's welfare (jobs served per round, weighted, SPEC 5) when every agent plays
    `act(observations [n, dim]) -> levels [n]`, as `mtf simulate` computes it."""
    env = mtf_env.parallel_env(config, overrides=overrides)
    out = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        while env.agents:
            levels = act(np.stack([obs[a] for a in env.possible_agents]))
            obs, *_ = env.step({a: int(levels[i]) for i, a in enumerate(env.possible_agents)})
        out.append(env.metrics()["welfare"])
    return out


def greedy(w, b, played: set | None = None):
    """The linear policy's greedy levels; the levels chosen are added to `played`."""
    def act(x):
        levels = logits(x, w, b).argmax(axis=-1)
        if played is not None:
            played.update(levels.tolist())
        return levels
    return act


def mtf_compare(mtf, config, overrides, policy, seeds, out_dir) -> tuple[dict, dict]:
    """`mtf compare` of the ONNX policy against every fixed level on `seeds` episodes: its JSON
    summary, and the ONNX policy's welfare per episode seed (from the run's metrics.jsonl)."""
    cmd = [mtf, "compare", "--config", config, "--policies", f"onnx:{policy},fixed:all",
           "--seeds", str(seeds), "--json", "--quiet", "--out", out_dir]
    for o in overrides:
        cmd += ["--set", o]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr.strip())
    with open(os.path.join(out_dir, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    per_seed = {r["seed"]: r["welfare"] for r in rows if r["policy"] == f"onnx:{policy}"}
    return json.loads(done.stdout), per_seed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/quickstart.toml")
    p.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=8, help="held-out episodes mtf compare scores")
    p.add_argument("--out", default="policy.onnx")
    p.add_argument("--mtf", default=os.environ.get("MTF_BIN", "target/release/mtf"))
    args = p.parse_args()

    w, b = train(args.config, args.overrides, args.num_envs, args.episodes, seed=args.seed)
    save_onnx(w, b, args.out)
    with tempfile.TemporaryDirectory() as tmp:
        report, mtf_welfare = mtf_compare(args.mtf, args.config, args.overrides, args.out, args.seeds, tmp)
    python = greedy_welfare(args.config, args.overrides, greedy(w, b), report["seeds"])
    print(f"wrote {args.out}")
    print(summary(report, mtf_welfare, python, "Python"))


def summary(report, in_mtf, in_python, who) -> str:
    """Two lines: the welfare Python and mtf found on mtf's seeds, and the paired difference."""
    row = next(r for r in report["rows"] if r["policy"].startswith("onnx:"))
    d = row["paired"]
    largest = max(abs(x - in_mtf[s]) for s, x in zip(report["seeds"], in_python))
    return (
        f"welfare (jobs per round) on mtf's {len(in_python)} held-out seeds: {who} {np.mean(in_python):.4f}, "
        f"mtf compare {row['summary']['welfare']['mean']:.4f}, largest per-seed difference {largest:.2g}\n"
        f"against {d['baseline']}: {d['welfare_diff']['mean']:+.3f} +- {d['welfare_diff']['ci95']:.3f}"
        f"{' (significant)' if d['significant'] else ''}"
    )


if __name__ == "__main__":
    main()
