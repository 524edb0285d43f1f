# Shared by the report scripts (source it after `cd` to the repository root).

# The mtf binary to run: MTF when set (a copy keeps a long report apart from later builds),
# else target/release/mtf, built first.
mtf_binary() {
  if [ -z "${MTF:-}" ]; then
    cargo build --release -q -p agents --bin mtf >&2
  fi
  echo "${MTF:-target/release/mtf}"
}

# The CPU, its cores and the load now: the line a report's machine.txt holds.
machine() {
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at the start"
}
