//! The joint clearing's assignment ([`super::Clearing::Joint`]): tenants to accelerator types,
//! unit demand, type capacities, and each type's marginal value.

/// Money units [`assign`] computes in: 1e-9. Its arithmetic is on whole units so that
/// successive shortest paths stay exact (near-ties in floating point could leave a negative
/// cycle behind and its path search running around it).
pub(super) const ASSIGN_UNIT: f64 = 1e-9;

/// A maximum-weight assignment of tenants to types with unit demand: `weights[i][t]` the
/// surplus of tenant i on type t (`None`: it may not take t; surpluses are rounded to 1e-9),
/// `caps[t]` the accelerators of t. Returns each tenant's type (a pair of surplus 0 is never
/// needed, so never taken) and, per type, what one more accelerator of it would add to the best
/// total (>= 0: the least Walrasian price over the base, Leonard 1983). Successive shortest
/// paths (Bellman-Ford on the residual graph, in whole units), an augmentation per accelerator
/// assigned while one gains; ties go to lower tenant and type indices (the search's order).
pub fn assign(weights: &[Vec<Option<f64>>], caps: &[usize]) -> (Vec<Option<usize>>, Vec<f64>) {
    let (n, t) = (weights.len(), caps.len());
    let w: Vec<Vec<Option<i128>>> = weights
        .iter()
        .map(|row| row.iter().map(|x| x.map(|x| (x / ASSIGN_UNIT).round() as i128)).collect())
        .collect();
    // Nodes: 0 source, 1..=n tenants, n+1..=n+t types.
    let nodes = 1 + n + t;
    let mut of: Vec<Option<usize>> = vec![None; n];
    let mut used = vec![0usize; t];
    // Shortest distances in the residual graph (costs: minus surplus) from the source, and with
    // `release` also from every type in use (a unit it gives up: the sink's reverse edge).
    let distances = |of: &[Option<usize>], used: &[usize], release: bool| -> (Vec<Option<i128>>, Vec<usize>) {
        let mut d: Vec<Option<i128>> = vec![None; nodes];
        let mut prev = vec![usize::MAX; nodes];
        d[0] = Some(0);
        if release {
            for k in (0..t).filter(|&k| used[k] > 0) {
                d[1 + n + k] = Some(0);
            }
        }
        let better = |new: i128, old: Option<i128>| old.is_none_or(|o| new < o);
        for _ in 0..nodes {
            let mut changed = false;
            for i in 0..n {
                // source -> free tenant
                if of[i].is_none() && better(0, d[1 + i]) {
                    d[1 + i] = Some(0);
                    prev[1 + i] = 0;
                    changed = true;
                }
                for k in 0..t {
                    let Some(x) = w[i][k] else { continue };
                    let (a, b) = (1 + i, 1 + n + k);
                    if of[i] == Some(k) {
                        // type -> its tenant (undo), cost +x
                        if let Some(db) = d[b].filter(|&db| better(db + x, d[a])) {
                            d[a] = Some(db + x);
                            prev[a] = b;
                            changed = true;
                        }
                    } else if let Some(da) = d[a].filter(|&da| better(da - x, d[b])) {
                        d[b] = Some(da - x);
                        prev[b] = a;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        (d, prev)
    };
    loop {
        let (d, prev) = distances(&of, &used, false);
        // The best type with room to end a path at, if the path gains.
        let end = (0..t)
            .filter_map(|k| d[1 + n + k].filter(|&x| used[k] < caps[k] && x < 0).map(|x| (x, k)))
            .min();
        let Some((_, k)) = end else { break };
        used[k] += 1;
        // Walk back: type <- tenant (assign), tenant <- type (reassign), ..., tenant <- source.
        // A simple path has at most `nodes` steps.
        let mut node = 1 + n + k;
        for _ in 0..=nodes {
            if node == 0 {
                break;
            }
            let p = prev[node];
            if node > n {
                // p is a tenant taking type node.
                of[p - 1] = Some(node - 1 - n);
            }
            node = p;
        }
        assert_eq!(node, 0, "assign: the shortest path does not lead back to the source");
    }
    // One more unit of type k: a path into k from the source (one more tenant served) or from
    // a type in use (a tenant moves to k, the others shift, a unit elsewhere goes idle).
    let (d, _) = distances(&of, &used, true);
    let marginal = (0..t)
        .map(|k| d[1 + n + k].map_or(0.0, |x| (-x).max(0) as f64 * ASSIGN_UNIT))
        .collect();
    (of, marginal)
}
