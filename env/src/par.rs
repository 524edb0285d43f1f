//! One parallel map for every evaluation over seeds, in any world: below the worlds and the
//! evaluation that both use it.

use rayon::prelude::*;

/// `f` on every item on `threads` workers (at least one), results in item order, so they do
/// not depend on `threads`; `init` makes each worker's own state (a copy of a world, forked
/// under a lock where the prototype is `Send` but not `Sync`). Every evaluation over seeds in
/// any world runs through it.
pub fn par_map<T: Sync, S, R: Send>(
    threads: usize,
    items: &[T],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &T) -> R + Sync + Send,
) -> Vec<R> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .expect("a thread pool");
    pool.install(|| items.par_iter().map_init(&init, |s, x| f(s, x)).collect())
}
