use super::*;
use rand::{rngs::SmallRng, RngExt, SeedableRng};
use std::path::Path;

fn example() -> MarketFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/laissezcloud-example.toml");
    MarketFile::load(&path, &[]).unwrap()
}

/// A one-job tenant arriving at round 0: `speeds` per type, everything else plain.
fn job(name: &str, speeds: Vec<f64>, work: f64, checkpoint: f64, value: f64) -> TenantSpec {
    TenantSpec {
        name: name.into(),
        arrival: 0,
        work,
        work_max: None,
        work_trace: None,
        trace_start: None,
        application: None,
        speed_scale: None,
        deadline: None,
        late_value: 0.0,
        speeds,
        checkpoint,
        restart_rounds: 0,
        value,
        budget: None,
        bid_factor: 1.0,
        weight: 1.0,
        threshold: 0.0,
        count: 1,
        arrival_spacing: 0,
        learn: false,
        group: 0,
    }
}

const A10: usize = 0;
const L4: usize = 1;
const TRAINIUM: usize = 2;
const A10_UNIT: usize = 0;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn the_papers_example_runs_as_the_paper_tells_it() {
    let (rounds, totals) = Market::run(example());
    let [c, a, b] = [0, 1, 2];
    let at = |r: usize, i: usize| &rounds[r].tenants[i];
    // Round 0: C alone takes the L4 at its base price.
    assert_eq!(
        (at(0, c).ty, at(0, a).place, at(0, b).place),
        (Some(L4), Place::Absent, Place::Absent)
    );
    assert!(close(at(0, c).price, 0.3912));
    // Round 1: A bids 0.687 for the A10, B 0.762; B wins at A's bid; A runs on the Trainium on demand.
    assert!(close(at(1, a).bids[A10], 0.687) && close(at(1, b).bids[A10], 0.762));
    assert_eq!((at(1, b).ty, at(1, a).ty), (Some(A10), Some(TRAINIUM)));
    assert!(close(at(1, b).price, 0.687) && close(at(1, a).price, 0.804));
    assert!(close(rounds[1].prices[A10], 0.687));
    // Round 2: C has finished (round 1); nothing changes for A and B.
    assert_eq!(at(2, c).place, Place::Done);
    assert_eq!((at(2, b).ty, at(2, a).ty), (Some(A10), Some(TRAINIUM)));
    // Round 3, B's checkpoint: it re-bids 0.652 (its break-even against the free L4), loses the
    // A10 to A's standing 0.687 and moves to the L4; the A10 waits for A's checkpoint.
    assert!(close(at(3, b).bids[A10], 0.652));
    assert_eq!(at(3, b).ty, Some(L4));
    assert!(close(at(3, b).price, 0.3912));
    assert_eq!((at(3, a).ty, at(3, a).reserved), (Some(TRAINIUM), Some(A10_UNIT)));
    assert!(close(rounds[3].prices[A10], 0.652));
    assert_eq!((at(4, a).ty, at(4, b).ty), (Some(TRAINIUM), Some(L4)));
    // Round 5, A's checkpoint: it moves to the A10 and pays B's standing bid, 0.652.
    for r in 5..=6 {
        assert_eq!(at(r, a).ty, Some(A10), "round {r}");
        assert!(close(at(r, a).price, 0.652), "round {r}: {}", at(r, a).price);
    }
    // B finishes in round 6; from round 7 the A10's price is its base, 0.606.
    assert_eq!(totals[b].finished, Some(6));
    for r in 7..rounds.len() {
        assert!(close(at(r, a).price, 0.606) && close(rounds[r].prices[A10], 0.606), "round {r}");
    }
    // Both moved once, at checkpoints: no work lost.
    assert_eq!((totals[a].migrations, totals[b].migrations, totals[c].migrations), (1, 1, 0));
    assert!(totals.iter().all(|t| t.lost.abs() < 1e-9));
    // What each paid: A 4 rounds on the Trainium, 2 at 0.652, 3 at 0.606.
    assert!(close(totals[a].spent, 4.0 * 0.804 + 2.0 * 0.652 + 3.0 * 0.606));
    assert!(close(totals[b].spent, 2.0 * 0.687 + 4.0 * 0.3912));
    assert!(close(totals[b].earned, 10.0 * 3.3528));
}

#[test]
fn first_price_winners_pay_their_own_bids() {
    let mut f = example();
    f.mechanism.kind = Pricing::FirstPrice;
    let (rounds, _) = Market::run(f);
    // Round 1: B wins the A10 at its own 0.762; from round 5 A pays its own 0.687.
    assert_eq!(rounds[1].tenants[2].ty, Some(A10));
    assert!(close(rounds[1].tenants[2].price, 0.762));
    assert!(close(rounds[5].tenants[1].price, 0.687));
}

#[test]
fn a_restart_delay_stops_progress_and_an_eviction_between_checkpoints_loses_work() {
    // B moves at its checkpoint with a 2-round restart: no progress in rounds 3 and 4.
    let mut f = example();
    f.market.tenants[2].restart_rounds = 2;
    let (rounds, _) = Market::run(f);
    let b = |r: usize| rounds[r].tenants[2].progress;
    assert!(close(b(3), b(2)) && close(b(4), b(2)) && b(5) > b(4) + 0.4);
    // X holds the only accelerator; Y arrives in round 2 and outbids it; X has done 2 units
    // since its last checkpoint (at 0), so it loses them and waits (there is no on-demand type).
    let mut f = example();
    f.market.types.truncate(1);
    let tenant = |name: &str, arrival, value| TenantSpec {
        arrival,
        ..job(name, vec![1.0], 100.0, 10.0, value)
    };
    f.market.tenants = vec![tenant("X", 0, 1.0), tenant("Y", 2, 2.0)];
    f.env.rounds = 4;
    let (rounds, totals) = Market::run(f);
    assert_eq!(rounds[1].tenants[0].ty, Some(A10));
    assert_eq!((rounds[2].tenants[0].place, rounds[2].tenants[1].ty), (Place::Waiting, Some(A10)));
    assert!(close(totals[0].lost, 2.0) && close(totals[0].progress, 0.0));
    // Second price: Y pays X's standing bid (its work's worth per hour, 1.0), not its own 2.0.
    assert!(close(rounds[2].tenants[1].price, 1.0));
}

/// Truthful bids (the work's worth per hour: no alternative to break even against) with no
/// migration cost give the value-maximising assignment: on random small instances with one
/// auctioned type of 1-3 accelerators, the winners' worth equals the best of every subset's.
#[test]
fn truthful_second_price_assigns_as_the_brute_force_optimum() {
    let mut rng = SmallRng::seed_from_u64(29);
    for case in 0..300 {
        let n = rng.random_range(1..=6usize);
        let count = rng.random_range(1..=3u32);
        let base = if rng.random_bool(0.5) { 0.0 } else { rng.random_range(0.0..1.0) };
        let mut f = example();
        f.market.types = vec![TypeSpec {
            name: "X".into(),
            base_price: base,
            count,
            on_demand: false,
        }];
        f.market.tenants = (0..n)
            .map(|i| {
                job(
                    &format!("t{i}"),
                    vec![rng.random_range(0.1..2.0)],
                    1e6,
                    1e6,
                    rng.random_range(0.1..2.0),
                )
            })
            .collect();
        f.env.rounds = 1;
        let worth: Vec<f64> = f.market.tenants.iter().map(|t| t.value * t.speeds[0]).collect();
        let (rounds, _) = Market::run(f);
        let got: f64 = (0..n).filter(|&i| rounds[0].tenants[i].ty.is_some()).map(|i| worth[i]).sum();
        let best = (0u32..1 << n)
            .filter(|s| s.count_ones() <= count)
            .map(|s| {
                (0..n)
                    .filter(|i| s >> i & 1 == 1)
                    .map(|i| worth[i])
                    .filter(|&w| w >= base)
                    .sum::<f64>()
            })
            .fold(0.0, f64::max);
        assert!((got - best).abs() < 1e-12, "case {case}: {got} vs {best}");
        // Every winner pays the highest losing bid (or the base price), at most its own worth.
        let mut losing: Vec<f64> = (0..n).filter(|&i| rounds[0].tenants[i].ty.is_none()).map(|i| worth[i]).collect();
        losing.push(base);
        let price = losing.iter().copied().fold(0.0, f64::max);
        for i in (0..n).filter(|&i| rounds[0].tenants[i].ty.is_some()) {
            assert!(close(rounds[0].tenants[i].price, price) && price <= worth[i] + 1e-12, "case {case}");
        }
    }
}

#[test]
fn a_bad_market_file_names_the_key() {
    let mut f = example();
    f.market.tenants[1].speeds.pop();
    let e = f.check("m.toml").unwrap_err();
    assert_eq!((e.file.as_str(), e.key.as_str()), ("m.toml", "market.tenants[1].speeds"));
    let mut f = example();
    f.market.types[0].base_price = f64::NAN;
    assert_eq!(f.check("m.toml").unwrap_err().key, "market.types[0].base_price");
    let mut f = example();
    f.env.world = "queues".into();
    assert_eq!(f.check("m.toml").unwrap_err().key, "env.world");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/laissezcloud-example.toml");
    let e = MarketFile::load(&path, &["market.tenants.0.work=-1".into()]).unwrap_err();
    assert_eq!(e.key, "market.tenants[0].work");
    let e = MarketFile::load(&path, &["market.round_hour=2".into()]).unwrap_err();
    assert!(e.problem.contains("round_hour"), "{e:?}");
}

#[test]
fn the_examples_figures_are_what_its_rounds_add_up_to() {
    let file = example();
    let (rounds, totals) = Market::run(file.clone());
    let m = MarketMetrics::compute(&file, &rounds, &totals);
    assert_eq!(m.rounds, 10);
    // A10: B in rounds 1-2, reserved and idle in 3-4, A from 5 to 9; L4: C 0-1, B 3-6.
    assert!(close(m.utilisation[A10].unwrap(), 0.7) && close(m.utilisation[L4].unwrap(), 0.6));
    assert_eq!((m.utilisation[TRAINIUM], m.job_rounds[TRAINIUM]), (None, 4));
    assert!(close(m.revenue, 2.0 * 0.687 + 6.0 * 0.3912 + 2.0 * 0.652 + 3.0 * 0.606));
    assert!(close(m.on_demand_spend, 4.0 * 0.804));
    // C and B finish (2 + 3.3528 units at 10 a unit); A does 4 x 0.804 + 5 x 0.687 of its 20.
    assert_eq!(m.finished, 2);
    assert!(close(m.welfare, 10.0 * (2.0 + 3.3528)));
    assert!(close(m.utility[1], -totals[1].spent));
    assert!(close(m.cost_per_work[1].unwrap(), totals[1].spent / (4.0 * 0.804 + 5.0 * 0.687)));
    assert_eq!((m.migrations, m.work_lost), (2, 0.0));
    assert_eq!(m.prices[A10][7], 0.606);
}

#[test]
fn market_files_are_told_from_scenarios() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    use crate::registry::{stack_of, Stack};
    assert_eq!(stack_of(&root.join("market/laissezcloud-example.toml"), &[]), Stack::Seam);
    assert_eq!(stack_of(&root.join("quickstart.toml"), &[]), Stack::Queue);
    assert_eq!(stack_of(&root.join("gavel/learn.toml"), &[]), Stack::Seam);
    assert_eq!(stack_of(&root.join("no-such-file.toml"), &[]), Stack::Queue);
    // A queue-world file goes to the seam's commands where it says so, by its text or a
    // `--set`; a world already there stays, and a value that is no stack is left to the
    // queue world's reader to name.
    let set = |v: &str| vec![format!("env.stack=\"{v}\"")];
    assert_eq!(stack_of(&root.join("quickstart.toml"), &set("seam")), Stack::Seam);
    assert_eq!(stack_of(&root.join("thesis/w124.toml"), &set("queue")), Stack::Queue);
    assert_eq!(stack_of(&root.join("gavel/learn.toml"), &set("queue")), Stack::Seam);
    assert_eq!(stack_of(&root.join("quickstart.toml"), &set("both")), Stack::Queue);
    let seam = crate::registry::load(&root.join("quickstart.toml"), &set("seam")).unwrap();
    assert_eq!(seam.config()["env"]["stack"].as_str(), Some("seam"), "a run's config.toml keeps it");
    assert!(crate::registry::load(&root.join("quickstart.toml"), &set("both")).is_err());
}

#[test]
fn a_tenant_group_is_its_tenants_arriving_in_turn() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/laissezcloud-example.toml");
    let f = MarketFile::load(
        &path,
        &["market.tenants.1.count=3".into(), "market.tenants.1.arrival_spacing=2".into()],
    )
    .unwrap();
    let names: Vec<(&str, u32)> = f.market.tenants.iter().map(|t| (t.name.as_str(), t.arrival)).collect();
    assert_eq!(names, [("C", 0), ("A#1", 1), ("A#2", 3), ("A#3", 5), ("B", 1)]);
    let zero: Vec<String> = (0..3).map(|i| format!("market.tenants.{i}.count=0")).collect();
    assert_eq!(MarketFile::load(&path, &zero).unwrap_err().key, "market.tenants");
}

/// Two tenants, one accelerator X (and Y on demand), weights 1 and 3 of 4 tokens: P starts with
/// 1, Q with 3. Each round the richer buys X for a token and the token comes back by weight
/// (P +0.25, Q +0.75), so Q keeps X while its budget falls 0.25 a round and P's rises: they tie
/// at 2 in round 4, when the turn (4 mod 2 = 0) puts P first and P takes X; in round 5 Q is
/// richer again. Checkpoints every round make each round a decision point.
#[test]
fn mtf_gives_the_accelerator_to_the_richest_and_tokens_come_back_by_weight() {
    let mut f = example();
    f.mechanism.kind = Pricing::Mtf;
    f.mechanism.total_tokens = 4.0;
    f.market.types = vec![
        TypeSpec {
            name: "X".into(),
            base_price: 1.0,
            count: 1,
            on_demand: false,
        },
        TypeSpec {
            name: "Y".into(),
            base_price: 2.0,
            count: 1,
            on_demand: true,
        },
    ];
    let tenant = |name: &str, weight| TenantSpec {
        weight,
        ..job(name, vec![1.0, 1.0], 1e6, 1.0, 10.0)
    };
    f.market.tenants = vec![tenant("P", 1.0), tenant("Q", 3.0)];
    f.env.rounds = 6;
    let (rounds, totals) = Market::run(f.clone());
    let on_x: Vec<usize> = rounds
        .iter()
        .map(|r| (0..2).find(|&i| r.tenants[i].ty == Some(0)).unwrap())
        .collect();
    assert_eq!(on_x, [1, 1, 1, 1, 0, 1]);
    for r in &rounds {
        assert!(
            (r.tenants[0].tokens + r.tenants[1].tokens - 4.0).abs() < 1e-12,
            "tokens are conserved"
        );
        assert_eq!(r.tenants.iter().filter(|t| t.ty == Some(1)).count(), 1, "the other runs on demand");
    }
    assert!(close(rounds[3].tenants[0].tokens, 2.0) && close(rounds[3].tenants[1].tokens, 2.0));
    assert!(
        close(rounds[0].tenants[1].price, 1.0) && close(rounds[0].tenants[0].price, 2.0),
        "base prices"
    );
    // Both moved twice: P to X and back, Q away and back.
    assert_eq!((totals[0].migrations, totals[1].migrations), (2, 2));
    // Without decision points (one checkpoint at the end) Q keeps X: MTF does not preempt.
    for t in &mut f.market.tenants {
        t.checkpoint = 1e6;
    }
    let (rounds, _) = Market::run(f);
    assert!(rounds.iter().all(|r| r.tenants[1].ty == Some(0)));
}

/// Random small markets under every mechanism and random bid factors (thresholds under MTF):
/// a tenant never holds or reserves more than one accelerator, a second-price payment never
/// exceeds the payer's bid, a budget is never overspent, tokens are conserved, work never
/// exceeds the job, and a tenant paying for an auctioned accelerator pays that type's price.
#[test]
fn random_markets_keep_the_invariants() {
    let mut rng = SmallRng::seed_from_u64(2929);
    for case in 0..400 {
        let mut f = example();
        f.mechanism.kind = [Pricing::SecondPrice, Pricing::FirstPrice, Pricing::Mtf][case % 3];
        f.mechanism.clearing = [Clearing::PerType, Clearing::Joint][(case / 3) % 2];
        let k = rng.random_range(1..=3usize);
        f.market.types = (0..k)
            .map(|t| TypeSpec {
                name: format!("t{t}"),
                base_price: rng.random_range(0.0..1.0),
                count: rng.random_range(1..=2),
                on_demand: false,
            })
            .collect();
        if rng.random_bool(0.5) {
            f.market.types.push(TypeSpec {
                name: "od".into(),
                base_price: rng.random_range(0.5..1.5),
                count: 1,
                on_demand: true,
            });
        }
        let types = f.market.types.len();
        let n = rng.random_range(1..=6usize);
        f.market.tenants = (0..n)
            .map(|i| TenantSpec {
                name: format!("x{i}"),
                arrival: rng.random_range(0..4),
                work: rng.random_range(0.5..8.0),
                work_max: None,
                work_trace: None,
                trace_start: None,
                application: None,
                speed_scale: None,
                deadline: None,
                late_value: 0.0,
                speeds: (0..types).map(|_| rng.random_range(0.1..1.5)).collect(),
                checkpoint: rng.random_range(0.3..3.0),
                restart_rounds: rng.random_range(0..2),
                value: rng.random_range(0.2..3.0),
                budget: rng.random_bool(0.3).then(|| rng.random_range(0.5..5.0)),
                bid_factor: 1.0,
                weight: rng.random_range(0.5..3.0),
                threshold: 0.0,
                count: 1,
                arrival_spacing: 0,
                learn: false,
                group: i,
            })
            .collect();
        f.env.rounds = 25;
        f.check("random").unwrap();
        let actions: Vec<f64> = (0..n)
            .map(|_| {
                if f.mechanism.kind == Pricing::Mtf {
                    rng.random_range(0.0..1.0)
                } else {
                    rng.random_range(0.0..1.6)
                }
            })
            .collect();
        let kind = f.mechanism.kind;
        let mut market = Market::new(f.clone());
        let mut obs = vec![0f32; Market::obs_dim(types)];
        while !market.done() {
            // What a learned bid policy sees: finite, bounded, and "in the market" exactly
            // for the tenants that are (or arrive this round).
            for i in 0..n {
                market.observe(i, &mut obs);
                assert!(
                    obs.iter().all(|x| x.is_finite() && (-1.0..=10.0).contains(x)),
                    "case {case}: {obs:?}"
                );
                let arriving = market.round() == f.market.tenants[i].arrival;
                assert_eq!(obs[0] == 1.0, market.active(i) || arriving, "case {case}");
                let t = &market.totals()[i];
                assert!(close(market.utility(i), t.earned - t.spent));
            }
            let r = market.step(&actions);
            assert!(market.claims().iter().all(|&c| c <= 1), "case {case}: {:?}", market.claims());
            for (i, t) in r.tenants.iter().enumerate() {
                let tn = &f.market.tenants[i];
                assert!(t.progress <= tn.work + 1e-9, "case {case}");
                if let (Place::Unit(_), Some(ty)) = (t.place, t.ty) {
                    match kind {
                        Pricing::SecondPrice => assert!(t.price <= t.bids[ty] + 1e-12 && t.price <= r.prices[ty] + 1e-12, "case {case}"),
                        Pricing::FirstPrice => assert!(close(t.price, t.bids[ty]), "case {case}"),
                        Pricing::Mtf => assert!(close(t.price, f.market.types[ty].base_price), "case {case}"),
                    }
                }
            }
            let tokens: f64 = r.tenants.iter().map(|t| t.tokens).sum();
            assert!((tokens - f.mechanism.total_tokens).abs() < 1e-9, "case {case}: tokens {tokens}");
        }
        for (t, tn) in market.totals().iter().zip(&f.market.tenants) {
            assert!(
                t.spent <= tn.budget.unwrap_or(f64::INFINITY) + 1e-9,
                "case {case}: spent {} of {:?}",
                t.spent,
                tn.budget
            );
        }
    }
}

#[test]
fn job_sizes_drawn_from_a_range_follow_the_seed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/laissezcloud-example.toml");
    let load = |seed: u64| {
        let o = vec![
            format!("seed={seed}"),
            "market.tenants.1.count=50".into(),
            "market.tenants.1.work_max=30.0".into(),
        ];
        MarketFile::load(&path, &o)
            .unwrap()
            .market
            .tenants
            .iter()
            .map(|t| t.work)
            .collect::<Vec<f64>>()
    };
    let (a, again, other) = (load(1), load(1), load(2));
    assert_eq!(a, again);
    assert_ne!(a, other);
    // C and B keep their sizes; the 50 copies of A are in [20, 30] and spread over it.
    assert_eq!((a[0], a[51]), (2.0, 3.3528));
    let drawn = &a[1..51];
    assert!(drawn.iter().all(|w| (20.0..=30.0).contains(w)));
    let mean = drawn.iter().sum::<f64>() / 50.0;
    assert!((mean - 25.0).abs() < 1.5, "mean {mean}: 3.5 standard errors is 1.43");
    let e = MarketFile::load(&path, &["market.tenants.1.work_max=10.0".into()]).unwrap_err();
    assert_eq!(e.key, "market.tenants[1].work_max");
}

#[test]
fn a_job_finished_after_its_deadline_earns_its_late_value() {
    // B arrives in round 1 and finishes in round 6: 6 - 1 = 5 rounds after its arrival.
    let value_of_b = |deadline: Option<u32>| {
        let mut f = example();
        f.market.tenants[2].deadline = deadline;
        f.market.tenants[2].late_value = 4.0;
        Market::run(f).1[2].earned
    };
    assert!(close(value_of_b(None), 10.0 * 3.3528));
    assert!(
        close(value_of_b(Some(6)), 10.0 * 3.3528),
        "on time: finished 5 rounds after arrival"
    );
    assert!(close(value_of_b(Some(5)), 4.0 * 3.3528), "late");
    let mut f = example();
    f.market.tenants[2].late_value = 11.0;
    assert_eq!(f.check("m.toml").unwrap_err().key, "market.tenants[2].late_value");
}

fn duel(overrides: &[&str]) -> MarketFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
    let set: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    MarketFile::load_unexpanded(&path, &set).unwrap()
}

#[test]
fn the_game_pays_the_duels_hand_computed_utilities() {
    // configs/market/duel.toml's header: first price, L worth $2/h bids f, E bids 0.8; L wins
    // at f > 0.8 paying 10 f for 10 hours of work worth 20, else runs on demand (20 - 10).
    let raw = duel(&[]);
    let levels = game::action_levels(&raw, "duel.toml").unwrap();
    assert_eq!(levels.len(), 11);
    let at = |x: f64| levels.iter().position(|l| close(*l, x)).unwrap();
    for (f, want) in [(0.5, 10.0), (0.8, 10.0), (0.9, 11.0), (1.2, 8.0), (1.5, 5.0)] {
        let mut g = game::MarketGame::new(raw.clone(), levels.clone());
        assert_eq!(g.agents(), ["E", "L"]);
        g.reset(7);
        let (mut total, mut ended) = ([0.0; 2], [0u32; 2]);
        while !g.over() {
            let steps = g.step(&[at(1.0), at(f)]).unwrap().to_vec();
            for (i, s) in steps.iter().enumerate() {
                total[i] += s.reward;
                ended[i] += u32::from(s.terminated || s.truncated);
            }
        }
        assert!(close(total[1], want), "f = {f}: L's rewards add to {}, want {want}", total[1]);
        // E, worth $0.8/h, bids 0.8: it wins the A10 (paying all its work is worth: utility
        // 0) only when L bids less; else it waits (on demand costs more than its work is worth).
        assert_eq!(g.rounds()[0].tenants[0].ty, (f <= 0.8).then_some(A10), "f = {f}");
        assert_eq!(g.rounds()[0].tenants[1].ty, Some(if f <= 0.8 { 1 } else { A10 }), "f = {f}");
        assert!(close(total[0], 0.0), "f = {f}: E's rewards add to {}", total[0]);
        // Each job ends once, and the rewards are the episode's utilities.
        assert_eq!(ended, [1, 1]);
        let m = g.metrics();
        assert!(close(m.utility[0], total[0]) && close(m.utility[1], total[1]));
        assert!(g.step(&[0, 0]).is_err(), "a step after the episode is refused");
    }
}

#[test]
fn the_game_at_the_tenants_own_factors_is_the_market_run() {
    let mut raw = duel(&["mechanism.kind=\"second_price\""]);
    raw.market.tenants[1].bid_factor = 1.3;
    let levels = game::action_levels(&raw, "duel.toml").unwrap();
    let at = |x: f64| levels.iter().position(|l| close(*l, x)).unwrap();
    let mut g = game::MarketGame::new(raw.clone(), levels.clone());
    g.reset(raw.seed);
    while !g.over() {
        g.step(&[at(1.0), at(1.3)]).unwrap();
    }
    let (rounds, totals) = Market::run(raw.at_seed(raw.seed));
    assert_eq!(g.rounds(), &rounds[..]);
    assert_eq!(g.metrics(), MarketMetrics::compute(g.file(), &rounds, &totals));
}

#[test]
fn the_game_refuses_bad_actions_without_playing() {
    let raw = duel(&[]);
    let mut g = game::MarketGame::new(raw, vec![0.5, 1.0]);
    use crate::worlds::StepError;
    assert_eq!(g.step(&[0]).unwrap_err(), StepError::Count { expected: 2, got: 1 });
    assert_eq!(
        g.step(&[0, 2]).unwrap_err(),
        StepError::OutOfSpace {
            agent: 1,
            action: 2,
            levels: 2
        }
    );
    assert!(g.rounds().is_empty());
    g.step(&[1, 1]).unwrap();
    assert_eq!(g.rounds().len(), 1);
    assert_eq!(g.factors(), [1.0, 1.0]);
}

#[test]
fn action_levels_are_checked() {
    let bad = |set: &str, want: &str| {
        let raw = duel(&[set]);
        let e = game::action_levels(&raw, "duel.toml").unwrap_err().to_string();
        assert!(e.contains("learner.levels") && e.contains(want), "{set}: {e}");
    };
    bad("learner.levels=[]", "needs 1 to 64 levels");
    bad("learner.levels=[0.5, 0.5]", "strictly increasing");
    bad("learner.levels=[11.0]", "not a bid factor in [0, 10]");
    bad("learner.levels=[\"x\"]", "is not a number");
    let mtf = duel(&["mechanism.kind=\"mtf\""]);
    assert_eq!(game::action_levels(&mtf, "d").unwrap().len(), 11);
    assert_eq!(game::action_levels(&mtf, "d").unwrap()[10], 1.0);
    let raw = duel(&["mechanism.kind=\"mtf\"", "learner.levels=[0.2, 1.5]"]);
    assert_eq!(game::action_levels(&raw, "d").unwrap(), [0.2]);
    let raw = duel(&["mechanism.kind=\"mtf\"", "learner.levels=[1.2, 1.5]"]);
    assert!(game::action_levels(&raw, "d")
        .unwrap_err()
        .to_string()
        .contains("not a threshold in [0, 1]"));
}

#[test]
fn job_sizes_from_a_trace_follow_its_order_from_a_start() {
    let dir = std::env::temp_dir().join(format!("mtf-market-trace-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    std::fs::write(dir.join("traces/jobs.csv"), "work,source\n3,a\n5,b\n\n8,c\n").unwrap();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml"))
        .unwrap()
        .replacen("work = 10.0\n", "work_trace = \"traces/jobs.csv\"\ncount = 4\n", 1);
    let path = dir.join("m.toml");
    std::fs::write(&path, &text).unwrap();
    let works = |f: &MarketFile| -> Vec<f64> { f.market.tenants.iter().take(4).map(|t| t.work).collect() };
    // trace_start 1: copies take 5, 8, 3, 5 whatever the seed.
    let set = ["market.tenants.0.trace_start=1".to_string()];
    let raw = MarketFile::load_unexpanded(&path, &set).unwrap();
    assert_eq!(
        raw.market.tenants[0].work_trace,
        Some(WorkTrace::Sizes(vec![3.0, 5.0, 8.0])),
        "read once, kept inline"
    );
    for seed in [1, 2, 3] {
        assert_eq!(works(&raw.at_seed(seed)), [5.0, 8.0, 3.0, 5.0]);
    }
    assert!(
        raw.at_seed(1).market.tenants.iter().all(|t| t.work_trace.is_none()),
        "copies carry sizes, not the trace"
    );
    // Without it the start follows the seed: consecutive entries from a drawn start.
    let raw = MarketFile::load_unexpanded(&path, &[]).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let w = works(&raw.at_seed(seed));
        assert_eq!(w, works(&raw.at_seed(seed)), "the same seed, the same sizes");
        let s0 = [3.0, 5.0, 8.0].iter().position(|&x| x == w[0]).unwrap();
        for (j, x) in w.iter().enumerate() {
            assert_eq!(*x, [3.0, 5.0, 8.0][(s0 + j) % 3]);
        }
        seen.insert(s0);
    }
    assert_eq!(seen.len(), 3, "every start is drawn for some seed");
    // The inline form round-trips (a run's config.toml).
    let again: MarketFile = toml::from_str(&toml::to_string(&raw).unwrap()).unwrap();
    assert_eq!(again.market.tenants[0].work_trace, raw.market.tenants[0].work_trace);
    // Bad traces name the file, the line or the entry.
    // A byte-order mark is not a header; a header needs letters.
    std::fs::write(dir.join("traces/jobs.csv"), "\u{feff}7\n5\n9\n").unwrap();
    let bom = MarketFile::load_unexpanded(&path, &[]).unwrap();
    assert_eq!(bom.market.tenants[0].work_trace, Some(WorkTrace::Sizes(vec![7.0, 5.0, 9.0])));
    for (body, want) in [
        ("-\n3\n", "line 1: `-` is not a job size"),
        ("3\nx\n", "line 2: `x` is not a job size"),
        ("3\n-1\n", "work_trace[1]"),
        ("", "needs 1 to"),
    ] {
        std::fs::write(dir.join("traces/jobs.csv"), body).unwrap();
        let e = MarketFile::load_unexpanded(&path, &[]).unwrap_err().to_string();
        assert!(e.contains("market.tenants[0].work_trace") && e.contains(want), "{e}");
    }
    std::fs::remove_file(dir.join("traces/jobs.csv")).unwrap();
    let e = MarketFile::load_unexpanded(&path, &[]).unwrap_err().to_string();
    assert!(e.contains("jobs.csv"), "{e}");
    let lone = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
    let e = MarketFile::load_unexpanded(&lone, &["market.tenants.0.trace_start=2".into()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("market.tenants[0].trace_start") && e.contains("needs a work_trace"),
        "{e}"
    );
    let both = text.replacen("count = 4\n", "count = 4\nwork = 2.0\n", 1);
    std::fs::write(dir.join("traces/jobs.csv"), "3\n").unwrap();
    std::fs::write(&path, both).unwrap();
    let e = MarketFile::load_unexpanded(&path, &[]).unwrap_err().to_string();
    assert!(e.contains("leave work and work_max out"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gemmini_applications_take_their_speeds_from_the_catalog() {
    // Thesis Table 5.1: resnet_conv runs 70.262 on gemmini_2ghz and 86.332 on gemmini_3ghz.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/gemmini.toml");
    let f = MarketFile::load(&path, &[]).unwrap();
    let conv = f.market.tenants.iter().find(|t| t.name.starts_with("conv")).unwrap();
    let scale = 0.01;
    assert!(
        close(conv.speeds[0], 70.262 * scale) && close(conv.speeds[1], 86.332 * scale),
        "{:?}",
        conv.speeds
    );
    assert!(
        conv.application.is_none(),
        "filled in at load time: a run's config.toml keeps the speeds"
    );
    let again: MarketFile = toml::from_str(&toml::to_string(&f).unwrap()).unwrap();
    assert_eq!(again.market.tenants[0].speeds, f.market.tenants[0].speeds);
    let (rounds, _) = Market::run(f);
    assert!(!rounds.is_empty());
    let bad = |set: &str, want: &str| {
        let e = MarketFile::load(&path, &[set.to_string()]).unwrap_err().to_string();
        assert!(e.contains(want), "{set}: {e}");
    };
    bad("market.tenants.0.application=\"vgg\"", "is not in the Gemmini catalog");
    bad("market.types.0.name=\"A10\"", "type `A10` is not a Gemmini catalog type");
    bad("market.tenants.0.speed_scale=0", "speed_scale");
    bad("market.tenants.0.speeds=[1.0, 2.0]", "leave speeds out");
}

/// The best total of `weights` with type capacities `caps`, by trying every assignment.
fn brute_assign(weights: &[Vec<Option<f64>>], caps: &[usize]) -> f64 {
    fn go(i: usize, w: &[Vec<Option<f64>>], left: &mut Vec<usize>) -> f64 {
        if i == w.len() {
            return 0.0;
        }
        let mut best = go(i + 1, w, left);
        for k in 0..left.len() {
            if let (Some(x), true) = (w[i][k], left[k] > 0) {
                left[k] -= 1;
                best = best.max(x + go(i + 1, w, left));
                left[k] += 1;
            }
        }
        best
    }
    go(0, weights, &mut caps.to_vec())
}

#[test]
fn joint_assignment_and_its_marginals_are_the_brute_force_optimum() {
    let mut rng = SmallRng::seed_from_u64(31);
    for case in 0..500 {
        let (n, t) = (rng.random_range(1..=6usize), rng.random_range(1..=3usize));
        let caps: Vec<usize> = (0..t).map(|_| rng.random_range(0..=2)).collect();
        let w: Vec<Vec<Option<f64>>> = (0..n)
            .map(|_| (0..t).map(|_| rng.random_bool(0.8).then(|| rng.random_range(0.0..3.0))).collect())
            .collect();
        let (of, marginal) = assign(&w, &caps);
        // A valid assignment: allowed pairs, capacities kept.
        for k in 0..t {
            assert!(of.iter().filter(|&&a| a == Some(k)).count() <= caps[k], "case {case}");
        }
        let got: f64 = of
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.map(|k| w[i][k].expect("allowed")))
            .sum();
        let best = brute_assign(&w, &caps);
        // Surpluses are rounded to 1e-9 units.
        assert!((got - best).abs() < 1e-8, "case {case}: {got} vs {best}");
        for k in 0..t {
            let mut more = caps.clone();
            more[k] += 1;
            let want = brute_assign(&w, &more) - best;
            assert!((marginal[k] - want).abs() < 1e-8, "case {case} type {k}: {} vs {want}", marginal[k]);
        }
    }
}

/// A market of `types` auctioned types (no on-demand) and tenants bidding their work's worth
/// per hour on every type (bid factor 1e9 over positive break-even prices, capped at worth),
/// one round, no checkpoint: what a type is worth to a tenant is what it bids.
fn value_bidding_market(rng: &mut SmallRng, clearing: Clearing) -> MarketFile {
    let mut f = example();
    let t = rng.random_range(2..=3usize);
    f.market.types = (0..t)
        .map(|k| TypeSpec {
            name: format!("T{k}"),
            base_price: rng.random_range(0.05..0.5),
            count: rng.random_range(1..=2),
            on_demand: false,
        })
        .collect();
    let n = rng.random_range(1..=6usize);
    f.market.tenants = (0..n)
        .map(|i| TenantSpec {
            bid_factor: 1e9,
            ..job(
                &format!("t{i}"),
                (0..t).map(|_| rng.random_range(0.1..2.0)).collect(),
                1e6,
                1e6,
                rng.random_range(0.1..2.0),
            )
        })
        .collect();
    f.mechanism.clearing = clearing;
    f.env.rounds = 1;
    f
}

#[test]
fn joint_clearing_of_value_bids_is_efficient_and_its_prices_are_walrasian() {
    // Truthful bids on several types: joint second price picks the assignment maximising the
    // worth over base prices (brute force), charges each type's least Walrasian price (every
    // winner prefers its type at these prices, no loser wants any), and per-type clearing in
    // config order misses the optimum on some instances.
    let mut rng = SmallRng::seed_from_u64(37);
    let mut per_type_short = 0;
    for case in 0..300 {
        let seed = rng.random::<u64>();
        let f = value_bidding_market(&mut SmallRng::seed_from_u64(seed), Clearing::Joint);
        let (n, t) = (f.market.tenants.len(), f.market.types.len());
        let base: Vec<f64> = f.market.types.iter().map(|x| x.base_price).collect();
        let worth: Vec<Vec<f64>> = f
            .market
            .tenants
            .iter()
            .map(|x| x.speeds.iter().map(|s| x.value * s).collect())
            .collect();
        let w: Vec<Vec<Option<f64>>> = (0..n)
            .map(|i| (0..t).map(|k| (worth[i][k] >= base[k]).then(|| worth[i][k] - base[k])).collect())
            .collect();
        let caps: Vec<usize> = f.market.types.iter().map(|x| x.count as usize).collect();
        let best = brute_assign(&w, &caps);
        let (rounds, _) = Market::run(f);
        let r = &rounds[0];
        let got: f64 = (0..n).filter_map(|i| r.tenants[i].ty.map(|k| worth[i][k] - base[k])).sum();
        assert!((got - best).abs() < 1e-6, "case {case}: {got} vs {best}");
        for i in 0..n {
            assert_eq!(
                r.tenants[i].bids.iter().zip(&worth[i]).filter(|(b, w)| !close(**b, **w)).count(),
                0,
                "value bids"
            );
            let mine = r.tenants[i].ty.map_or(0.0, |k| worth[i][k] - r.prices[k]);
            if let Some(k) = r.tenants[i].ty {
                assert!(
                    close(r.tenants[i].price, r.prices[k]) && r.prices[k] <= worth[i][k] + 1e-6,
                    "case {case}"
                );
            }
            for k in 0..t {
                assert!(worth[i][k] - r.prices[k] <= mine + 1e-6, "case {case}: tenant {i} envies type {k}");
            }
        }
        // The least Walrasian prices: each type's base plus one more accelerator's surplus.
        for k in 0..t {
            let mut more = caps.clone();
            more[k] += 1;
            let want = base[k] + brute_assign(&w, &more) - best;
            assert!((r.prices[k] - want).abs() < 1e-6, "case {case} type {k}: {} vs {want}", r.prices[k]);
        }
        let (per, _) = Market::run(value_bidding_market(&mut SmallRng::seed_from_u64(seed), Clearing::PerType));
        let per_got: f64 = (0..n).filter_map(|i| per[0].tenants[i].ty.map(|k| worth[i][k] - base[k])).sum();
        assert!(per_got <= best + 1e-6);
        per_type_short += usize::from(per_got < best - 1e-6);
    }
    assert!(per_type_short > 0, "per-type clearing was optimal on every instance");
}

#[test]
fn a_bid_at_the_base_price_wins_under_joint_clearing_as_per_type() {
    // The duel under second price with the A10's base at E's bid (0.8) and L's value cut so it
    // bids 0.8 as well: both bid exactly the base price; E (first in file order) wins either way.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
    for clearing in ["per_type", "joint"] {
        let set = [
            "mechanism.kind=\"second_price\"".to_string(),
            format!("mechanism.clearing=\"{clearing}\""),
            "market.types.0.base_price=0.8".into(),
            "market.tenants.1.value=0.8".into(),
        ];
        let (rounds, _) = Market::run(MarketFile::load(&path, &set).unwrap());
        assert_eq!(rounds[0].tenants[0].ty, Some(A10), "{clearing}");
        assert!(close(rounds[0].tenants[0].price, 0.8), "{clearing}");
    }
}

#[test]
fn joint_clearing_of_one_type_is_per_type_clearing() {
    let mut rng = SmallRng::seed_from_u64(41);
    for case in 0..200 {
        let seed = rng.random::<u64>();
        let mut a = value_bidding_market(&mut SmallRng::seed_from_u64(seed), Clearing::Joint);
        a.market.types.truncate(1);
        for x in &mut a.market.tenants {
            x.speeds.truncate(1);
        }
        let mut b = a.clone();
        b.mechanism.clearing = Clearing::PerType;
        let (ra, _) = Market::run(a);
        let (rb, _) = Market::run(b);
        for (x, y) in ra[0].tenants.iter().zip(&rb[0].tenants) {
            assert_eq!(x.ty, y.ty, "case {case}");
            assert!((x.price - y.price).abs() < 1e-6, "case {case}: {} vs {}", x.price, y.price);
        }
    }
}

#[test]
fn duplicate_tenant_names_made_two_tenants_one_agent() {
    // Python's ParallelEnv keys its dicts by name: two tenants of one name were one agent.
    let mut f = example();
    let first = f.market.tenants[0].name.clone();
    f.market.tenants[1].name = first.clone();
    let e = f.check("m.toml").unwrap_err();
    assert_eq!(e.key, "market.tenants[1].name");
    assert!(e.problem.contains(&format!("`{first}` is also a tenant of entry 0")), "{e}");
    // A group's copies are name#1, name#2: another entry may not take one of those names.
    let mut f = example();
    f.market.tenants[0].count = 2;
    f.market.tenants[1].name = format!("{}#2", f.market.tenants[0].name);
    assert_eq!(f.check("m.toml").unwrap_err().key, "market.tenants[1].name");
}

#[test]
fn the_named_action_own_plays_each_tenants_own_factor_off_the_grid() {
    // L's own factor 0.85 is off the grid (0.5, 0.6, ..., 1.5): at `own` it bids 0.85 against
    // E's 0.8 (E's own factor 1), wins and pays 8.5 for work worth 20: utility 11.5; E loses
    // and never buys on demand. One past `own` is outside the action space.
    use crate::worlds::{StepError, World};
    let raw = duel(&["market.tenants.1.bid_factor=0.85"]);
    let levels = game::action_levels(&raw, "duel.toml").unwrap();
    let k = levels.len();
    let mut w = world::MarketWorld::new(raw.clone(), levels.clone(), toml::Table::new());
    assert_eq!(w.named_actions(), ["own"]);
    w.reset(3);
    assert_eq!(
        w.step(&[k, k + 1]).unwrap_err(),
        StepError::OutOfSpace {
            agent: 1,
            action: k + 1,
            levels: k + 1
        }
    );
    while !w.done() {
        let n = w.live().len();
        w.step(&vec![k; n]).unwrap();
    }
    let u = &w.game().metrics().utility;
    assert!(close(u[0], 0.0) && close(u[1], 11.5), "{u:?}");
    // What `mtf simulate` plays on the file (every tenant its own factor), to the bit.
    let (rounds, _) = Market::run(raw.at_seed(3));
    assert_eq!(w.game().rounds(), &rounds[..]);
    // In the learners' market, L at `own` is the same episode.
    let mut l = world::MarketWorld::learners(raw, levels, toml::Table::new());
    l.reset(3);
    while !l.done() {
        l.step(&[k]).unwrap();
    }
    assert_eq!(l.game().rounds(), &rounds[..]);
}

#[test]
fn a_boxed_market_is_the_market_in_every_provided_method() {
    // `impl World for Box<dyn World>` forwards each method by hand: a provided one it missed
    // gave the trait's default (what generic code over `W: World` then saw).
    use crate::worlds::World;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
    let boxed: Box<dyn World> = crate::registry::load(&path, &[]).unwrap();
    type Provided = (
        Vec<&'static str>,
        bool,
        Option<f64>,
        Result<String, String>,
        Option<u32>,
        bool,
        bool,
    );
    fn through<W: World>(w: &W) -> Provided {
        (
            w.named_actions().to_vec(),
            w.run_defaults().is_empty(),
            w.return_unit(),
            w.select_mechanism("mtf"),
            w.max_rounds(),
            w.memory().is_empty(),
            w.round_record().is_some(),
        )
    }
    let mut boxed = boxed;
    boxed.reset(1);
    boxed.step(&[0]).unwrap();
    assert_eq!(
        through(&boxed),
        (
            vec!["own"],
            false,
            Some(1.0),
            Ok("mechanism.kind=\"mtf\"".to_string()),
            Some(30),
            false,
            true
        )
    );
}

#[test]
fn a_market_varies_with_the_seed_only_where_its_file_draws() {
    // The duel and the paper's example give every size and arrival; three-types draws sizes
    // in a range, traced.toml a trace's starting entry.
    use crate::worlds::World;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market");
    let varies = |f: &str, sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        crate::registry::load(&root.join(f), &sets).unwrap().varies_with_seed()
    };
    assert!(!varies("duel.toml", &[]));
    assert!(!varies("laissezcloud-example.toml", &[]));
    assert!(varies("three-types.toml", &[]));
    assert!(varies("traced.toml", &[]));
    // Where the file draws nothing, two seeds play the same episode.
    let mut w = crate::registry::load(&root.join("laissezcloud-example.toml"), &[]).unwrap();
    let mut play = |seed: u64| {
        w.reset(seed);
        while !w.done() {
            let own = vec![w.levels().len(); w.live().len()];
            w.step(&own).unwrap();
        }
        w.figures()
    };
    assert_eq!(play(1), play(2));
}
