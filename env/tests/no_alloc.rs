//! A round allocates nothing once the queues have warmed up: episode memory is bounded by the
//! buffers reserved at reset, whatever the number of jobs.

use env::config::ScenarioFile;
use env::world::ClusterEnv;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    // Only this thread's allocations count: the test harness's other threads allocate too.
    static ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn armed() -> bool {
    ARMED.with(|a| a.get())
}
static SEEN: AtomicUsize = AtomicUsize::new(0);
static SIZES: [AtomicUsize; 32] = [const { AtomicUsize::new(0) }; 32];

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if armed() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            let k = SEEN.fetch_add(1, Ordering::Relaxed);
            if k < 32 {
                SIZES[k].store(layout.size(), Ordering::Relaxed);
            }
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if armed() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            let k = SEEN.fetch_add(1, Ordering::Relaxed);
            if k < 32 {
                SIZES[k].store(new_size, Ordering::Relaxed);
            }
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steps_allocate_nothing_after_warm_up() {
    for queues in ["central", "per_accelerator"] {
        for recording in [true, false] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/thesis/w124-mmpp.toml");
            let scenario = ScenarioFile::load(&path, &[format!("env.queues=\"{queues}\""), "env.agents.*.load=0.9".into()]).unwrap();
            let mut world = ClusterEnv::new(scenario);
            world.set_recording(recording);
            world.reset(3);
            let actions = vec![4; world.n()];
            for _ in 0..30 {
                world.step(&actions).unwrap();
            }
            let before = ALLOCS.load(Ordering::Relaxed);
            ARMED.with(|a| a.set(true));
            let mut served = 0;
            while !world.agents().is_empty() {
                served += world.step(&actions).unwrap().infos[0].served;
            }
            ARMED.with(|a| a.set(false));
            let after = ALLOCS.load(Ordering::Relaxed);
            assert!(served > 0);
            let sizes: Vec<usize> = SIZES.iter().map(|s| s.load(Ordering::Relaxed)).filter(|&s| s > 0).collect();
            assert_eq!(
                after - before,
                0,
                "{queues}, recording {recording}: {} allocations in 270 rounds, sizes {sizes:?}",
                after - before
            );
        }
    }
}
