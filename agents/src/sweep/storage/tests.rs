//! The study storage's tests: concurrent claims, stale trials, schema versions.

use super::*;

/// A fresh SQLite study in a temporary directory, and a guard removing that directory when
/// the test ends (kept when it fails).
fn db(name: &str) -> (Location, Scratch) {
    let d = std::env::temp_dir().join(format!("mtf-storage-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    (Location::Sqlite(d.join("study.db")), Scratch(d))
}

struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn one(x: f64) -> BTreeMap<String, Value> {
    BTreeMap::from([("x".to_string(), Value::Float(x))])
}

fn sql(loc: &Location, stmt: &str) {
    let Location::Sqlite(p) = loc else { unreachable!() };
    rusqlite::Connection::open(p).unwrap().execute_batch(stmt).unwrap();
}

const LIVE: Liveness = Liveness {
    interval: 60.0,
    grace: 120.0,
    reconnect: 120.0,
};

#[test]
fn concurrent_claims_get_unique_numbers_and_stop_at_the_target() {
    let (loc, _dir) = db("claims");
    Storage::open(&loc, "s", "fp", LIVE).unwrap();
    let claimed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for w in 0..4 {
            let (loc, claimed) = (&loc, &claimed);
            s.spawn(move || {
                let mut st = Storage::open(loc, "s", "fp", LIVE).unwrap();
                while let Some(Claimed { number: n, .. }) = st.claim(25, |n| format!("t{n}"), |c| Some(one(c.index as f64))).unwrap() {
                    st.report(n, 1, w as f64).unwrap();
                    assert!(st.finish(n, TrialState::Complete, Some(n as f64), None).unwrap());
                    claimed.lock().unwrap().push(n);
                }
            });
        }
    });
    let mut got = claimed.into_inner().unwrap();
    got.sort_unstable();
    assert_eq!(got, (0..25).collect::<Vec<u64>>());
    let mut st = Storage::open(&loc, "s", "fp", LIVE).unwrap();
    let trials = st.trials().unwrap();
    assert_eq!(trials.len(), 25);
    assert!(trials.iter().all(|t| t.state == TrialState::Complete && t.last_step.is_some()));
    assert!(trials.iter().all(|t| t.seconds.is_some_and(|s| (0.0..60.0).contains(&s))));
    assert_eq!(st.values_at(1, Some(TrialState::Complete)).unwrap().len(), 25);
    assert_eq!(st.values_at(1, None).unwrap().len(), 25);
    // Another search space under the same name is refused.
    assert_eq!(Storage::open(&loc, "s", "other", LIVE).err().unwrap().exit_code(), 2);
}

#[test]
fn a_stale_trial_is_interrupted_and_re_queued_once() {
    let (loc, _dir) = db("stale");
    let mut st = Storage::open(&loc, "s", "fp", LIVE).unwrap();
    let n = st.claim(3, |n| format!("t{n}"), |_| Some(one(0.0))).unwrap().unwrap().number;
    // Its worker went silent three minutes ago (grace: two).
    sql(&loc, &format!("UPDATE trials SET heartbeat = heartbeat - 180 WHERE number = {n}"));
    let c = st
        .claim(3, |n| format!("t{n}"), |_| panic!("a re-queued trial is run again, not proposed"))
        .unwrap()
        .unwrap();
    assert_eq!((c.number, &c.params), (n + 1, &one(0.0)), "the stale trial's parameters run again");
    assert_eq!(c.retry_of, Some((n, format!("t{n}"))));
    let m = c.number;
    let trials = st.trials().unwrap();
    assert_eq!(trials[0].state, TrialState::Interrupted);
    assert!(trials[0].error.as_deref().unwrap().starts_with("stale"));
    assert_eq!(trials[1].retry_of, Some(n));
    // The stale worker's late result is not recorded; its heartbeat says so.
    assert!(!st.heartbeat(n).unwrap());
    assert!(!st.finish(n, TrialState::Complete, Some(1.0), None).unwrap());
    assert!(st.heartbeat(m).unwrap());
    // The retry goes stale too: it is not retried again, the sampler proposes.
    sql(&loc, &format!("UPDATE trials SET heartbeat = heartbeat - 180 WHERE number = {m}"));
    let c = st
        .claim(
            3,
            |n| format!("t{n}"),
            |c| {
                assert_eq!(c.index, 0, "interrupted trials do not count");
                Some(one(2.0))
            },
        )
        .unwrap()
        .unwrap();
    assert_eq!((c.number, c.params, c.retry_of), (m + 1, one(2.0), None));
    // A live trial (fresh heartbeat) is never touched.
    assert!(st.claim(3, |n| format!("t{n}"), |_| Some(one(3.0))).unwrap().is_some());
    assert_eq!(st.trials().unwrap()[2].state, TrialState::Running);
}

#[test]
fn other_schema_versions_are_refused_and_version_1_is_upgraded() {
    let (loc, _dir) = db("version");
    Storage::open(&loc, "s", "fp", LIVE).unwrap();
    sql(&loc, "UPDATE mtf_meta SET value = '9' WHERE key = 'schema_version'");
    let e = Storage::open(&loc, "s", "fp", LIVE).err().unwrap();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("schema version 9"), "{e}");
    // A study of the first version: no mtf_meta, no retry_of.
    let (old, _old_dir) = db("version1");
    let Location::Sqlite(p) = &old else { unreachable!() };
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    sql(
        &old,
        "CREATE TABLE studies (name TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, created REAL NOT NULL);
         CREATE TABLE trials (study TEXT NOT NULL, number INTEGER NOT NULL, state TEXT NOT NULL, params TEXT NOT NULL,
           value REAL, error TEXT, run_dir TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, started REAL NOT NULL,
           heartbeat REAL NOT NULL, finished REAL, PRIMARY KEY (study, number));
         CREATE TABLE steps (study TEXT NOT NULL, number INTEGER NOT NULL, step INTEGER NOT NULL, value REAL NOT NULL,
           PRIMARY KEY (study, number, step));
         INSERT INTO studies VALUES ('s', 'fp', 0);
         INSERT INTO trials VALUES ('s', 0, 'complete', '{\"x\":1.0}', 2.5, NULL, 't0', 'h', 1, 0, 0, 1);",
    );
    let mut st = Storage::open(&old, "s", "fp", LIVE).unwrap();
    let t = st.trials().unwrap();
    assert_eq!((t.len(), t[0].value, t[0].retry_of), (1, Some(2.5), None));
    // Not a study database at all.
    let (junk, _junk_dir) = db("junk");
    let Location::Sqlite(p) = &junk else { unreachable!() };
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, b"not sqlite at all, just text that is long enough to be a header").unwrap();
    assert_eq!(Storage::open(&junk, "s", "fp", LIVE).err().unwrap().exit_code(), 2);
}
