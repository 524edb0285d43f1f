#!/usr/bin/env bash
# Do the main job's build (`cargo run --release -p agents --bin mtf`) and the test build
# (`cargo test --release --workspace`) enable the same features on every shared crate? If not,
# the tests rebuild those crates and everything above them. Prints the differences; exits 1
# when there are any (fix them in agents/Cargo.toml's feature-unification block).
set -euo pipefail
cd "$(dirname "$0")/.."
main=$(mktemp) test=$(mktemp)
cargo tree -p agents -e normal,build -f "{p}|{f}" --prefix none | sort -u > "$main"
cargo tree --workspace -e normal,build,dev -f "{p}|{f}" --prefix none | sort -u > "$test"
python3 - "$main" "$test" <<'PY'
import sys
def load(p):
    d = {}
    for line in open(p):
        if "|" not in line:
            continue
        pkg, feats = line.strip().split("|", 1)
        pkg = pkg.replace(" (*)", "").strip()
        d.setdefault(pkg, set()).update(f.replace(" (*)", "").strip() for f in feats.split(",") if f.replace(" (*)", "").strip())
    return d
main, test = load(sys.argv[1]), load(sys.argv[2])
diff = [(k, sorted(test[k] - main[k])) for k in sorted(main) if k in test and test[k] - main[k]]
for k, extra in diff:
    print(f"{k}: the test build adds {extra}")
print("feature sets agree" if not diff else f"{len(diff)} crates differ")
sys.exit(1 if diff else 0)
PY
