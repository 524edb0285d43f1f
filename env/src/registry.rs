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
    /// Whether `mtf`'s commands and Python drive it through the seam. The queue and valuation
    /// worlds and the market implement [`World`] (the conformance tests play every world
    /// through it) but their commands still run their own stacks, which carry the learners
    /// the seam's trainer lacks (Hedge, the actor-critic, PPO): issue 38's next step.
    pub seam_doors: bool,
}

/// Every world: its `env.world` name, constructor, and whether commands reach it through
/// the seam.
pub const REGISTRY: &[Entry] = &[
    Entry {
        name: "queues",
        build: crate::queue_world::build,
        seam_doors: false,
    },
    Entry {
        name: "valuations",
        build: crate::queue_world::build,
        seam_doors: false,
    },
    Entry {
        name: "market",
        build: crate::market::world::build,
        seam_doors: false,
    },
    Entry {
        name: "gavel",
        build: gavel::build,
        seam_doors: true,
    },
    Entry {
        name: "bandit",
        build: bandit::build,
        seam_doors: true,
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

/// The world the config file at `path` declares (`env.world`, `"queues"` when absent);
/// `None` when the file cannot be read or parsed (its reader then says why).
pub fn world_of(path: &Path) -> Option<String> {
    crate::config::read_table(path, &[]).ok().map(|t| world_name(&t))
}

/// Whether the config file at `path` is a market file (`env.world = "market"`); false when it
/// cannot be read or parsed.
pub fn is_market_file(path: &Path) -> bool {
    world_of(path).as_deref() == Some("market")
}

/// Whether `name` is a world whose commands go through the seam ([`Entry::seam_doors`]).
pub fn is_seam_world(name: &str) -> bool {
    REGISTRY.iter().any(|e| e.name == name && e.seam_doors)
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
