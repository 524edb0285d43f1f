//! Documented limits of a scenario, checked before anything of that size is allocated (a typo
//! of 1e9 agents is an error naming the key, not an allocation failure).

/// Agents in a scenario.
pub const MAX_AGENTS: usize = 10_000;
/// Accelerators in a scenario.
pub const MAX_ACCELERATORS: usize = 100_000;
/// Agents x accelerators (the per-round matrices hold this many f64s): 5,000 tenants on 20,000
/// accelerators, a neocloud, about 4.5 GB of state (`scripts/bench-scale.sh` measures it).
pub const MAX_CELLS: usize = 100_000_000;
/// Rounds per episode.
pub const MAX_ROUNDS: u32 = 10_000_000;
/// Largest service rate (jobs per round) of any (agent, accelerator).
pub const MAX_RATE: f64 = 1e9;
/// Smallest service rate.
pub const MIN_RATE: f64 = 1e-6;
/// Largest mean arrival rate (jobs per round) in any burst state.
pub const MAX_ARRIVAL_RATE: f64 = 1e9;
/// Largest ratio between two agents' weights (the scheduler's weight bounds, SPEC 3).
pub const MAX_WEIGHT_RATIO: f64 = 1e9;
/// Largest token total T (SPEC 8's valuation world uses 1e9).
pub const MAX_TOKENS: f64 = 1e12;
/// Largest arrival count in one trace cell.
pub const MAX_TRACE_ARRIVALS: u64 = 1_000_000_000;
/// Threshold levels.
pub const MAX_LEVELS: usize = 1_000;
/// Largest bid factor (bids stay below the scheduler's 1e15 with `value_scale` <= 1e12).
pub const MAX_BID_FACTOR: f64 = 1e3;
/// Queue cap per queue.
pub const MAX_QUEUE_CAP: u64 = 1_000_000_000_000;

/// Largest config or sweep file read, in bytes (the thesis configs are under 4 KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 24;
/// Largest arrival trace read, in bytes (10 million rounds of a few agents).
pub const MAX_TRACE_BYTES: u64 = 1 << 28;
