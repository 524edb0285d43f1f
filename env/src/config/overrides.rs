//! Reading TOML with `--set key.path=value` overrides, and deserialising it with the key path of
//! the first problem in the error.

use super::ConfigError;
use std::path::Path;

/// Apply `--set key.path=value`: the value is read as TOML (number, bool, array, inline table,
/// string) and otherwise taken as a bare string. A numeric segment indexes an array of tables
/// (`env.agents.1.load=0.8`) or of values (`market.tenants.0.speeds.1=0.5`), and `*` means every
/// element (`env.agents.*.load=0.8`).
pub fn apply_override(table: &mut toml::Table, spec: &str) -> Result<(), String> {
    let (path, raw) = spec
        .split_once('=')
        .ok_or_else(|| format!("--set {spec}: expected key.path=value"))?;
    if let Some(bad) = spec.chars().find(|c| c.is_control()) {
        return Err(format!(
            "--set {}: the value contains the control character {bad:?}; give one value per --set",
            spec.escape_debug()
        ));
    }
    let value: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) if t.len() == 1 => t.remove("v").expect("parsed v"),
        Ok(_) => return Err(format!("--set {spec}: the value must be one TOML value")),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let keys: Vec<&str> = path.trim().split('.').collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(format!("empty key in `{path}`"));
    }
    set_path(table, &keys, &value, path.trim())
}

/// `path` without its last `rest.len()` segments (`rest`: those segments): the key of the array
/// or element an error names.
fn head<'a>(path: &'a str, rest: &[&str]) -> &'a str {
    &path[..path.len() - rest.iter().map(|a| a.len() + 1).sum::<usize>()]
}

fn set_path(table: &mut toml::Table, keys: &[&str], value: &toml::Value, path: &str) -> Result<(), String> {
    let (first, rest) = (keys[0], &keys[1..]);
    if rest.is_empty() {
        table.insert(first.to_string(), value.clone());
        return Ok(());
    }
    let indexed = rest[0] == "*" || rest[0].parse::<usize>().is_ok();
    if indexed && !table.contains_key(first) {
        // An element of an array the file leaves at its default: nothing to index (it became a
        // table keyed "0", refused later as "invalid type: map, expected a sequence").
        let array = head(path, rest);
        return Err(format!(
            "`{path}`: `{array}` is not in the file (its default applies), so it has no elements to set: give the whole array, e.g. `{array}=[...]`"
        ));
    }
    let entry = table
        .entry(first.to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    match entry {
        toml::Value::Table(t) => set_path(t, rest, value, path),
        toml::Value::Array(items) => {
            let (index, after) = (rest[0], &rest[1..]);
            let targets: Vec<usize> = if index == "*" {
                (0..items.len()).collect()
            } else {
                let k: usize = index
                    .parse()
                    .map_err(|_| format!("`{path}`: `{first}` is an array; index it with a number or `*`, not `{index}`"))?;
                if k >= items.len() {
                    return Err(format!("`{path}`: `{first}` has {} elements, no index {k}", items.len()));
                }
                vec![k]
            };
            for k in targets {
                match &mut items[k] {
                    toml::Value::Table(t) if after.is_empty() => {
                        // The element's own keys make the hint (a queue world's `load` meant
                        // nothing in a market's tenants: issue 42.7).
                        let field = t.keys().next().map_or("KEY", String::as_str);
                        let array = head(path, rest);
                        return Err(format!(
                            "`{path}` is a table; set one of its fields (e.g. `{path}.{field}`) or the whole array (`{array}=[...]`)"
                        ));
                    }
                    toml::Value::Table(t) => set_path(t, after, value, path)?,
                    // An element of an array of values (`speeds.1=2`) is replaced whole.
                    item if after.is_empty() => *item = value.clone(),
                    _ => {
                        let element = head(path, after);
                        return Err(format!("`{path}`: `{element}` is a value, not a table: set it as `{element}=...`"));
                    }
                }
            }
            Ok(())
        }
        _ => Err(format!("`{path}`: `{first}` is not a table")),
    }
}

/// An error about a key an override set is blamed on the flag, not on the file: its `file`
/// becomes `--set KEY=VALUE (over FILE)`. Keys match segment by segment (`env.agents[1].load`
/// is `env.agents.1.load`; `*` matches any index), either one a prefix of the other.
pub fn blame_override(mut e: ConfigError, overrides: &[String]) -> ConfigError {
    let key = e.key.replace('[', ".").replace(']', "");
    let key: Vec<&str> = key.split('.').filter(|s| !s.is_empty()).collect();
    let hit = overrides.iter().rev().find(|o| {
        let path: Vec<&str> = o.split('=').next().unwrap_or("").trim().split('.').collect();
        !key.is_empty() && path.iter().zip(&key).all(|(p, k)| p == k || *p == "*")
    });
    if let Some(o) = hit {
        e.file = format!("--set {o} (over {})", e.file);
    }
    e
}

/// Read a regular UTF-8 file of at most `max` bytes. FIFOs, devices and directories are
/// refused before reading (`/dev/zero` would never end), and a file that grows while read is
/// read only up to the limit. The error is the problem alone (callers name the file).
pub fn read_text(path: &Path, max: u64) -> Result<String, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO or device?)"
        };
        return Err(format!("is {kind}; expected a file"));
    }
    if meta.len() > max {
        return Err(format!("{} bytes, more than the {max} a file of this kind may have", meta.len()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("grew past the {max} bytes a file of this kind may have while read"));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text ({e})"))
}

/// Keys holding a file path: relative to the config's folder in the file, to the current
/// directory when given with `--set` (`*` stands for any index of an array of tables; the market's
/// `work_trace` was resolved against the file's folder when set: issue 42.7).
pub const PATH_KEYS: &[&str] = &["env.trace", "env.throughputs", "market.tenants.*.work_trace"];

/// Whether the override path `key` (indices as numbers or `*`) names a [`PATH_KEYS`] entry.
fn is_path_key(key: &[&str]) -> bool {
    PATH_KEYS.iter().any(|p| {
        let p: Vec<&str> = p.split('.').collect();
        p.len() == key.len()
            && p.iter()
                .zip(key)
                .all(|(a, b)| a == b || (*a == "*" && (*b == "*" || b.parse::<usize>().is_ok())))
    })
}

/// Make the relative path strings at `key` (indices or `*`) absolute against `cwd`.
fn absolutize(v: &mut toml::Value, key: &[&str], cwd: &Path) {
    match (v, key.split_first()) {
        (toml::Value::String(p), None) => {
            if Path::new(p.as_str()).is_relative() {
                *p = cwd.join(&*p).display().to_string();
            }
        }
        (toml::Value::Table(t), Some((k, rest))) => {
            if let Some(v) = t.get_mut(*k) {
                absolutize(v, rest, cwd);
            }
        }
        (toml::Value::Array(items), Some((k, rest))) => {
            for (i, item) in items.iter_mut().enumerate() {
                if *k == "*" || k.parse() == Ok(i) {
                    absolutize(item, rest, cwd);
                }
            }
        }
        _ => {}
    }
}

/// Read a TOML file and apply overrides, naming the file in errors.
pub fn read_table(path: &Path, overrides: &[String]) -> Result<toml::Table, ConfigError> {
    let file = path.display().to_string();
    let text = read_text(path, super::limits::MAX_CONFIG_BYTES).map_err(|problem| ConfigError {
        file: file.clone(),
        key: "(file)".into(),
        problem,
    })?;
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError {
        file: file.clone(),
        key: "(syntax)".into(),
        problem: e.message().to_string() + &line_of(&text, e.span()),
    })?;
    for o in overrides {
        apply_override(&mut table, o).map_err(|p| ConfigError {
            file: file.clone(),
            key: o.split('=').next().unwrap_or("").to_string(),
            problem: p,
        })?;
        // A path given on the command line is relative to the current directory (a path in
        // the file, to the file's folder).
        let key: Vec<&str> = o.split('=').next().map(str::trim).unwrap_or("").split('.').collect();
        if is_path_key(&key) {
            if let Ok(cwd) = std::env::current_dir() {
                if let Some((first, rest)) = key.split_first() {
                    if let Some(v) = table.get_mut(*first) {
                        absolutize(v, rest, &cwd);
                    }
                }
            }
        }
    }
    Ok(table)
}

fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    span.map(|s| format!(" (line {})", text[..s.start.min(text.len())].lines().count().max(1)))
        .unwrap_or_default()
}

/// Deserialize a table into `T`, naming the key path of the first problem.
pub fn from_table<T: serde::de::DeserializeOwned>(file: &str, table: toml::Table) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let key = e.path().to_string();
        let problem = e.into_inner().message().to_string();
        ConfigError {
            file: file.to_string(),
            key: if key == "." { "(top level)".into() } else { key },
            problem,
        }
    })
}

/// `table` over `defaults`: every key of `table` kept, every key of `defaults` it lacks added,
/// tables merged key by key (a world's run defaults under a file's own sections).
pub fn merge_under(defaults: &toml::Table, table: &mut toml::Table) {
    for (k, d) in defaults {
        match (table.get_mut(k), d) {
            (Some(toml::Value::Table(t)), toml::Value::Table(dt)) => merge_under(dt, t),
            (Some(_), _) => {}
            (None, d) => {
                table.insert(k.clone(), d.clone());
            }
        }
    }
}

#[cfg(test)]
mod merge_tests {
    #[test]
    fn a_files_keys_win_and_tables_merge_key_by_key() {
        let defaults: toml::Table = "[learner]\nkind = \"hedge\"\n[learner.ppo]\nlr = 0.005\ngamma = 1.0\n[train]\nepisodes = 100"
            .parse()
            .unwrap();
        let mut file: toml::Table = "[learner]\nkind = \"ppo\"\n[learner.ppo]\nlr = 0.01\n".parse().unwrap();
        super::merge_under(&defaults, &mut file);
        let want: toml::Table = "[learner]\nkind = \"ppo\"\n[learner.ppo]\nlr = 0.01\ngamma = 1.0\n[train]\nepisodes = 100"
            .parse()
            .unwrap();
        assert_eq!(file, want);
    }
}
