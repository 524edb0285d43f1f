//! The `[env]` section's checks, in the order [`super::ScenarioFile::resolve`] runs them: what
//! later checks rely on first, and sizes before anything of that size is allocated.

use super::{error_in, limits, normalised_weights, AgentSpec, Arrivals, ConfigError, EnvSection};

/// The catalog: applications, types, and a positive throughput table of the right shape.
pub(super) fn check_catalog(file: &str, e: &EnvSection) -> Result<(), ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    if cat.applications.is_empty() {
        return Err(err("env.catalog.applications", "needs at least one application".into()));
    }
    if cat.types.is_empty() {
        return Err(err("env.catalog.types", "needs at least one accelerator type".into()));
    }
    if cat.throughput.len() != cat.applications.len() {
        return Err(err(
            "env.catalog.throughput",
            format!(
                "has {} rows, expected one per application ({})",
                cat.throughput.len(),
                cat.applications.len()
            ),
        ));
    }
    for (a, row) in cat.throughput.iter().enumerate() {
        if row.len() != cat.types.len() {
            return Err(err(
                &format!("env.catalog.throughput[{a}]"),
                format!("has {} entries, expected one per type ({})", row.len(), cat.types.len()),
            ));
        }
        if let Some(t) = row.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(err(
                &format!("env.catalog.throughput[{a}][{t}]"),
                format!("must be a finite number > 0, got {}", row[t]),
            ));
        }
    }
    Ok(())
}

/// The world's numbers: rounds, rates, levels, the mmpp chain, the queue cap.
pub(super) fn check_world(file: &str, e: &EnvSection) -> Result<(), ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    if e.rounds == 0 || e.rounds > limits::MAX_ROUNDS {
        return Err(err(
            "env.rounds",
            format!("must be in [1, {}], got {}", limits::MAX_ROUNDS, e.rounds),
        ));
    }
    if !(e.base_rate > 0.0 && e.base_rate <= limits::MAX_RATE) {
        return Err(err("env.base_rate", format!("must be in (0, 1e9], got {}", e.base_rate)));
    }
    for (a, row) in cat.throughput.iter().enumerate() {
        for (t, v) in row.iter().enumerate() {
            let rate = e.base_rate * v / row[0];
            if !(limits::MIN_RATE..=limits::MAX_RATE).contains(&rate) {
                return Err(err(
                    &format!("env.catalog.throughput[{a}][{t}]"),
                    format!(
                        "gives a service rate of {rate:e} jobs per round (base_rate x {v} / {}), outside [1e-6, 1e9]",
                        row[0]
                    ),
                ));
            }
        }
    }
    if e.threshold_levels.is_empty() || e.threshold_levels.len() > limits::MAX_LEVELS {
        return Err(err(
            "env.threshold_levels",
            format!("needs 1 to {} levels, got {}", limits::MAX_LEVELS, e.threshold_levels.len()),
        ));
    }
    if let Some(k) = e.threshold_levels.iter().position(|t| !(0.0..=1.0).contains(t)) {
        return Err(err(
            &format!("env.threshold_levels[{k}]"),
            format!("must be in [0, 1], got {}", e.threshold_levels[k]),
        ));
    }
    if e.bid_levels.is_empty() || e.bid_levels.len() > limits::MAX_LEVELS {
        return Err(err(
            "env.bid_levels",
            format!("needs 1 to {} levels, got {}", limits::MAX_LEVELS, e.bid_levels.len()),
        ));
    }
    if let Some(k) = e.bid_levels.iter().position(|a| !(0.0..=limits::MAX_BID_FACTOR).contains(a)) {
        return Err(err(
            &format!("env.bid_levels[{k}]"),
            format!("must be in [0, {}], got {}", limits::MAX_BID_FACTOR, e.bid_levels[k]),
        ));
    }
    if !(e.value_scale > 0.0 && e.value_scale <= limits::MAX_TOKENS) {
        return Err(err("env.value_scale", format!("must be in (0, 1e12], got {}", e.value_scale)));
    }
    let m = &e.mmpp;
    for (key, p) in [
        ("env.mmpp.p_high_to_low", m.p_high_to_low),
        ("env.mmpp.p_low_to_high", m.p_low_to_high),
    ] {
        if !(p > 0.0 && p <= 1.0) {
            return Err(err(key, format!("must be a probability in (0, 1], got {p}")));
        }
    }
    for (key, x) in [("env.mmpp.high_mult", m.high_mult), ("env.mmpp.low_mult", m.low_mult)] {
        if !(0.0..=1e6).contains(&x) {
            return Err(err(key, format!("must be a number in [0, 1e6], got {x}")));
        }
    }
    if let Some(cap) = e.queue_cap {
        if cap == 0 || cap > limits::MAX_QUEUE_CAP {
            return Err(err("env.queue_cap", format!("must be in [1, 1e12], got {cap}")));
        }
    }
    if e.agents.is_empty() {
        return Err(err("env.agents", "needs at least one agent group".into()));
    }
    Ok(())
}

/// The agents, expanded from their groups after their total (and the accelerators' total, returned) are checked against the limits.
pub(super) fn expand_agents(file: &str, e: &EnvSection) -> Result<(Vec<AgentSpec>, usize), ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    // Sizes first, before anything of that size is allocated.
    let count = |groups: Vec<usize>, key: &str, max: usize| -> Result<usize, ConfigError> {
        let total = groups.iter().try_fold(0usize, |acc, &k| acc.checked_add(k)).unwrap_or(usize::MAX);
        if total > max {
            return Err(err(key, format!("{total} in all, more than the limit of {max}")));
        }
        Ok(total)
    };
    let n = count(e.agents.iter().map(|g| g.count).collect(), "env.agents[].count", limits::MAX_AGENTS)?;
    let m_total = count(
        e.cluster.iter().map(|g| g.count).collect(),
        "env.cluster[].count",
        limits::MAX_ACCELERATORS,
    )?;
    if n.saturating_mul(m_total) > limits::MAX_CELLS {
        return Err(err(
            "env.agents[].count",
            format!(
                "{n} agents x {m_total} accelerators is more than the limit of {} cells",
                limits::MAX_CELLS
            ),
        ));
    }
    let max_w = e.agents.iter().map(|g| g.weight).fold(0.0, f64::max);
    let mut agents = Vec::with_capacity(n);
    for (g, group) in e.agents.iter().enumerate() {
        let key = |f: &str| format!("env.agents[{g}].{f}");
        if group.count == 0 {
            return Err(err(&key("count"), "must be at least 1".into()));
        }
        if !(group.weight.is_finite() && group.weight > 0.0) {
            return Err(err(&key("weight"), format!("must be a finite number > 0, got {}", group.weight)));
        }
        if max_w / group.weight > limits::MAX_WEIGHT_RATIO {
            return Err(err(
                &key("weight"),
                format!(
                    "{:e} is more than 1e9 times smaller than the largest weight ({max_w:e})",
                    group.weight
                ),
            ));
        }
        if !(group.load > 0.0 && group.load <= 1.0) {
            return Err(err(&key("load"), format!("must be in (0, 1], got {}", group.load)));
        }
        let app = match &group.application {
            Some(name) => Some(cat.applications.iter().position(|a| a == name).ok_or_else(|| {
                err(
                    &key("application"),
                    format!("`{name}` is not in the catalog (known: {})", cat.applications.join(", ")),
                )
            })?),
            None => None,
        };
        for _ in 0..group.count {
            let idx = agents.len();
            agents.push(AgentSpec {
                weight: group.weight,
                app: app.unwrap_or(idx % cat.applications.len()),
                load: group.load,
            });
        }
    }
    Ok((agents, m_total))
}

/// The accelerators' types, expanded from the cluster groups.
pub(super) fn expand_cluster(file: &str, e: &EnvSection, m_total: usize) -> Result<Vec<usize>, ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    if e.cluster.is_empty() {
        return Err(err("env.cluster", "needs at least one accelerator group".into()));
    }
    let mut accelerators = Vec::with_capacity(m_total);
    for (g, group) in e.cluster.iter().enumerate() {
        let t = cat.types.iter().position(|t| *t == group.kind).ok_or_else(|| {
            err(
                &format!("env.cluster[{g}].type"),
                format!("`{}` is not in the catalog (known: {})", group.kind, cat.types.join(", ")),
            )
        })?;
        if group.count == 0 {
            return Err(err(&format!("env.cluster[{g}].count"), "must be at least 1".into()));
        }
        accelerators.extend(std::iter::repeat_n(t, group.count));
    }
    Ok(accelerators)
}
/// Every agent's largest mean arrival rate, in any burst state, within the limit.
pub(super) fn check_arrival_rates(file: &str, e: &EnvSection, agents: &[AgentSpec], m_total: usize) -> Result<(), ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    let m = &e.mmpp;
    // The largest mean arrival rate any agent can have in any burst state (SPEC 2.1).
    let weights = normalised_weights(&agents.iter().map(|a| a.weight).collect::<Vec<_>>());
    let total_w: f64 = weights.iter().sum();
    let mult = if e.arrivals == Arrivals::Mmpp {
        m.high_mult.max(m.low_mult)
    } else {
        1.0
    };
    for (i, a) in agents.iter().enumerate() {
        let best = cat.throughput[a.app].iter().copied().fold(0.0, f64::max) / cat.throughput[a.app][0];
        let lambda = a.load * weights[i] / total_w * e.base_rate * best * m_total as f64 * mult;
        if lambda > limits::MAX_ARRIVAL_RATE {
            let key = if mult > 1.0 { "env.mmpp.high_mult" } else { "env.base_rate" };
            return Err(err(
                key,
                format!("agent {i} would see {lambda:e} arrivals per round, more than the limit of 1e9"),
            ));
        }
    }
    Ok(())
}
