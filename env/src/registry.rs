//! Every world, by its `env.world` name, and the one reader of `env.world`: a config file
//! becomes a `Box<dyn World>` here, whichever world it declares. It sits above every world
//! (each implements [`World`] in its own module) so that no world imports it.

use crate::config::ConfigError;
use crate::worlds::{bandit, gavel, World};
use std::path::Path;

/// A world's constructor from its config file's text (already parsed to TOML, overrides
/// applied) and the file's path (for relative paths and messages).
pub type Build = fn(toml::Table, &Path) -> Result<Box<dyn World>, ConfigError>;

/// A world of the registry.
pub struct Entry {
    /// Its `env.world` name.
    pub name: &'static str,
    /// Its constructor.
    pub build: Build,
    /// Which commands drive it ([`Stack`]).
    pub stack: Stack,
}

/// Which implementation of `mtf`'s commands (train, simulate, compare, analyze, curves,
/// export, sweep) and Python's adapter drives a world. Every world implements [`World`] (the
/// conformance tests play each through it), and [`Stack::Seam`]'s commands are written once
/// over the trait; the queue and valuation worlds still run commands of their own by default,
/// which carry what the seam's do not yet (the queue world's per-agent learners and SPEC 4's
/// round record), and run the seam's where their file says `env.stack = "seam"` (since
/// 2026-12-02). Moving a world onto the seam is its entry's field (issue 38; the market moved
/// on 2026-11-29). Read through [`stack_of`] only: the one place a command asks which
/// commands drive a file.
pub use crate::config::Stack;

/// Every world: its `env.world` name, constructor, and the commands that drive it.
pub const REGISTRY: &[Entry] = &[
    Entry {
        name: "queues",
        build: crate::queue_world::build,
        stack: Stack::Queue,
    },
    Entry {
        name: "valuations",
        build: crate::queue_world::build,
        stack: Stack::Queue,
    },
    Entry {
        name: "market",
        build: crate::market::world::build,
        stack: Stack::Seam,
    },
    Entry {
        name: "gavel",
        build: gavel::build,
        stack: Stack::Seam,
    },
    Entry {
        name: "bandit",
        build: bandit::build,
        stack: Stack::Seam,
    },
];

/// The name of the world a config text declares (`env.world`), `"queues"` when absent.
pub fn world_name(table: &toml::Table) -> String {
    table
        .get("env")
        .and_then(|e| e.get("world"))
        .and_then(|w| w.as_str())
        .unwrap_or("queues")
        .to_string()
}

/// The commands that drive the world `name` by default ([`Stack::Queue`] for a name no entry
/// has: the queue world's loader then names the problem).
pub fn stack(name: &str) -> Stack {
    REGISTRY.iter().find(|e| e.name == name).map_or(Stack::Queue, |e| e.stack)
}

/// The commands that drive a config text: its world's entry's, or the seam's where a queue
/// or valuation world's file says `env.stack = "seam"` (a value that is not a stack is left to
/// the queue world's reader, which names it; a world already on the seam stays there).
pub fn stack_of_table(table: &toml::Table) -> Stack {
    let chosen = table
        .get("env")
        .and_then(|e| e.get("stack"))
        .and_then(|s| s.clone().try_into::<Stack>().ok());
    match (stack(&world_name(table)), chosen) {
        (Stack::Queue, Some(Stack::Seam)) => Stack::Seam,
        (entry, _) => entry,
    }
}

/// The commands that drive the config file at `path` with `--set` overrides: the one
/// question a command asks of a file's `env.world` and `env.stack` ([`Stack::Queue`] when the
/// file cannot be read or parsed, or names no world: the queue world's reader then says why).
pub fn stack_of(path: &Path, overrides: &[String]) -> Stack {
    crate::config::read_table(path, overrides).map_or(Stack::Queue, |t| stack_of_table(&t))
}

/// Load a world from a config file with `--set` overrides: the one reader of `env.world`
/// (every world of [`REGISTRY`]).
pub fn load(path: &Path, overrides: &[String]) -> Result<Box<dyn World>, ConfigError> {
    let table = crate::config::read_table(path, overrides)?;
    build(table, path)
}

/// Build a world from a config table.
pub fn build(table: toml::Table, path: &Path) -> Result<Box<dyn World>, ConfigError> {
    let name = world_name(&table);
    match REGISTRY.iter().find(|e| e.name == name) {
        Some(e) => (e.build)(table, path),
        None => Err(ConfigError {
            file: path.display().to_string(),
            key: "env.world".into(),
            problem: format!(
                "`{name}` is not a world (known: {})",
                REGISTRY.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}
