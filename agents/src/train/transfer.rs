//! Whether a trained queue-world policy can act in another scenario: the same agents,
//! accelerators and levels ([`check_fits`]), or agents whose weights map onto the trained
//! ones ([`check_transfer`]).

/// A policy trained on `trained` can act in `scenario`: the same agents, accelerators and
/// levels (`spec` names the policy in the error). Here, below `eval`, because run groups
/// check their replicates with it too.
pub fn check_fits(spec: &str, trained: &env::config::Scenario, scenario: &env::config::Scenario) -> crate::error::Result<()> {
    let levels = scenario.action_levels();
    if (trained.n(), trained.m(), trained.action_levels()) != (scenario.n(), scenario.m(), levels) {
        return Err(crate::error::policy(
            spec,
            format!(
                "the run was trained for {} agents, {} accelerators and levels {:?}; this scenario has {}, {} and {:?}",
                trained.n(),
                trained.m(),
                trained.action_levels(),
                scenario.n(),
                scenario.m(),
                levels
            ),
        ));
    }
    Ok(())
}

/// Which trained agent each of another scenario's agents acts as, for policies that move
/// between clusters (`by_type`): agent j of weight w is the r-th agent of weight w there (r
/// counted from 0 in index order) and acts as the (r mod c)-th of the c trained agents of
/// weight w. With the same agents this is the identity. The error names a weight no trained
/// agent had.
pub fn transfer_map(trained: &[f64], target: &[f64]) -> Result<Vec<usize>, String> {
    let mut seen: Vec<(f64, usize)> = Vec::new();
    target
        .iter()
        .map(|&w| {
            let of_w: Vec<usize> = (0..trained.len()).filter(|&i| trained[i] == w).collect();
            if of_w.is_empty() {
                let mut have = trained.to_vec();
                have.sort_by(f64::total_cmp);
                have.dedup();
                return Err(format!("no trained agent has weight {w} (the trained weights are {have:?})"));
            }
            let r = match seen.iter_mut().find(|(x, _)| *x == w) {
                Some((_, r)) => {
                    *r += 1;
                    *r
                }
                None => {
                    seen.push((w, 0));
                    0
                }
            };
            Ok(of_w[r % of_w.len()])
        })
        .collect()
}

/// Check that a `by_type` run trained on `trained` can act in `scenario`: the same levels and
/// the same catalog types (names and order); n and m may differ.
pub fn check_transfer(spec: &str, trained: &env::config::Scenario, scenario: &env::config::Scenario) -> crate::error::Result<Vec<usize>> {
    let (a, b) = (&trained.file.env.catalog.types, &scenario.file.env.catalog.types);
    if trained.action_kind() != scenario.action_kind() || trained.action_levels() != scenario.action_levels() || a != b {
        return Err(crate::error::policy(
            spec,
            format!(
                "a by_type policy moves between clusters with the same levels and accelerator types; it was trained with {} levels {:?} and types {a:?}, this scenario has {} levels {:?} and {b:?}",
                trained.action_kind().as_str(),
                trained.action_levels(),
                scenario.action_kind().as_str(),
                scenario.action_levels()
            ),
        ));
    }
    let weights = |sc: &env::config::Scenario| sc.agents.iter().map(|x| x.weight).collect::<Vec<f64>>();
    transfer_map(&weights(trained), &weights(scenario)).map_err(|e| crate::error::policy(spec, e))
}
