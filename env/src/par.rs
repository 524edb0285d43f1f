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

/// `f(worker, index, item)` on every item, `workers` plain threads (at least one) each taking
/// the next item in order when it is free; results in item order. For jobs that run pools of
/// their own (a run group's replicates): a rayon worker blocked in another pool's `install`
/// takes up queued jobs of its own pool inside it (work stealing), so more jobs would be live
/// at once than there are workers and the first one would wait for a nested one to end. A
/// panic in a job is resumed here once every worker has stopped.
pub fn on_workers<T: Send, R: Send>(workers: usize, items: Vec<T>, f: impl Fn(usize, usize, T) -> R + Sync) -> Vec<R> {
    let n = items.len();
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let results = std::sync::Mutex::new((0..n).map(|_| None).collect::<Vec<Option<R>>>());
    let (queue, results, f) = (&queue, &results, &f);
    let panics: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.max(1).min(n.max(1)))
            .map(|worker| {
                scope.spawn(move || loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some((k, item)) = next else { break };
                    let r = f(worker, k, item);
                    results.lock().unwrap_or_else(|p| p.into_inner())[k] = Some(r);
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().err()).collect()
    });
    if let Some(payload) = panics.into_iter().next() {
        std::panic::resume_unwind(payload);
    }
    let results = std::mem::take(&mut *results.lock().unwrap_or_else(|p| p.into_inner()));
    results.into_iter().map(|r| r.expect("every item ran")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_workers_runs_every_item_once_in_order_and_no_more_at_once_than_workers() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (live, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let out = on_workers(2, (0..7).collect(), |w, k, x: usize| {
            let now = live.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
            live.fetch_sub(1, Ordering::SeqCst);
            assert!(w < 2);
            (k, x * 10)
        });
        assert_eq!(out, (0..7).map(|k| (k, k * 10)).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 2);
        assert_eq!(on_workers(3, Vec::<u8>::new(), |_, _, x| x), Vec::<u8>::new());
        // A job's panic reaches the caller.
        let caught = std::panic::catch_unwind(|| on_workers(2, vec![1, 2, 3], |_, _, x: i32| if x == 2 { panic!("two") } else { x }));
        assert!(caught.is_err());
    }
}
