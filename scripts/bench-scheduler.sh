#!/usr/bin/env bash
# Time every mechanism per round at n x m in {20,40,60}^2 (criterion) and print the median
# table (microseconds) that scheduler/README.md shows; then the scaling table (n = m from 20 to
# 2000, and 1 x 100,000; milliseconds).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p scheduler --bench mechanisms -- "$@" >&2
python3 - <<'PY'
import json, os
root = "target/criterion/round"
sizes = ["20x20", "20x40", "20x60", "40x20", "40x40", "40x60", "60x20", "60x40", "60x60"]
mechs = ["mtf-utilities", "mtf", "round_robin", "static_partition", "stride", "stride_per_accelerator", "gandiva_fair", "themis", "max_throughput", "second_price", "first_price"]
print("| mechanism (n x m) | " + " | ".join(sizes) + " |")
print("|---|" + "---:|" * len(sizes))
for mech in mechs:
    row = []
    for s in sizes:
        p = os.path.join(root, mech, s, "new", "estimates.json")
        if os.path.exists(p):
            row.append("%.2f" % (json.load(open(p))["median"]["point_estimate"] / 1000.0))
        else:
            row.append("-")
    print("| %s | %s |" % (mech, " | ".join(row)))
PY
cargo bench -p scheduler --bench scaling
