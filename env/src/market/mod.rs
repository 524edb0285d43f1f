//! The LaissezCloud market as a world (Harith and Kaufmann, "It's the People, Not the
//! Placement"; issue 29): tenants run long jobs on heterogeneous accelerators, submit a launch
//! table (a maximum price per hour for each auctioned accelerator type), the exchange clears a
//! price per type from its base price and the outstanding bids, running jobs keep their
//! accelerator while their bid stands, and a job moves only at its checkpoints (losing the work
//! since its last checkpoint plus a restart delay when it moves at any other time).
//!
//! This module is the world's core, one concern per file: the round here (arrivals, the
//! decision points, on-demand placement, service, payments, the episode's records); the
//! exchange (`exchange.rs`: launch tables, the per-type auctions at second and first price,
//! their joint clearing, and MTF with tokens on the same arrivals, allocated by
//! `scheduler::mtf` itself in the demand form); the scenario file (`file.rs`); what a learned
//! bid policy observes (`observe.rs`); the episode's figures ([`MarketMetrics`],
//! `metrics.rs`); the joint clearing's assignment ([`assign`]); [`game`], the market as a
//! parallel multi-agent environment; and [`world`], the market behind the world seam
//! (`crate::worlds::World`: what Python's `parallel_env` steps). The paper's economic agent is
//! the fixed policy, a bid factor per tenant, 1 = break-even. `mtf simulate` runs a market
//! file, `mtf compare` its mechanisms under fixed policies, `mtf train` learns bids in it. By
//! default the exchange clears the auctioned types one by one; `mechanism.clearing = "joint"`
//! clears them in one assignment ([`Clearing::Joint`], [`assign`]).
//!
//! # The round (one round = `market.round_hours` hours)
//! 1. Jobs arriving this round wait for an accelerator.
//! 2. Tenants at a decision point (waiting, or their job wrote a checkpoint last round) refresh
//!    their launch table: for each auctioned type t, `factor x break-even(t)`, capped at what the
//!    work is worth per hour there (`value x speed(t)`) and at the budget left for one round.
//!    `break-even(t)` is the cheapest alternative's cost per unit of work times the speed on t:
//!    `min over a != t of price(a) x speed(t) / speed(a)`, over the alternatives the tenant can
//!    have now — on-demand types at their base price, auctioned types with a free accelerator
//!    at their base price, and the type it runs on at the price it pays. With no alternative
//!    it bids what the work is worth. Other tenants' tables stand as they were.
//! 3. The exchange clears the auctioned types in config order (with `mechanism.clearing =
//!    "joint"`, all at once: [`Clearing::Joint`]; the rest of this step is the same). Type t's candidates are the
//!    tenants bidding at least its base price that hold or reserve one of its accelerators, or
//!    have not won an accelerator this round and hold or reserve none of another type (unless
//!    at a decision point, where they may move): one accelerator per tenant. The `count`
//!    highest bids win (ties: holders first, then the lower tenant index). Second price: the
//!    type's price is `max(base, the highest bid on t of a tenant not winning it)` —
//!    outstanding bids of tenants running elsewhere count, so a tenant that moved away still
//!    sets the price of the type it left — and a holder pays it, or its own bid if lower;
//!    first price: its own bid. A loser holding one of t's accelerators is evicted (the
//!    work since its last checkpoint is lost). A winner at a decision point moves now; one
//!    running elsewhere keeps running there and the accelerator is reserved for it (idle,
//!    unpaid) until its next checkpoint.
//! 4. Tenants with no accelerator run on the on-demand type with the lowest cost per unit of
//!    work they can afford and that their work is worth, or wait.
//! 5. Jobs run at their type's speed (none during a restart delay, paid all the same), pay the
//!    round's price (a tenant whose budget cannot pay it stops, back to its checkpoint), write a checkpoint each time their progress passes a multiple of
//!    `checkpoint`, and finish when it reaches `work`: the tenant earns `value x work` then
//!    (`late_value x work` when it finishes `deadline` or more rounds after its arrival).
//!
//! Decision taken here where the paper's example is silent: it never says why B first bids
//! against the Trainium rather than the L4 and later against the L4; here the L4 is held by a
//! third tenant C at first and becomes free when C finishes (the example config).

mod assign;
mod exchange;
mod file;
pub mod game;
mod metrics;
mod observe;
pub mod story;
pub mod world;

pub use assign::assign;
use assign::ASSIGN_UNIT;
use file::EPS;
pub use file::*;
pub use metrics::MarketMetrics;

use serde::Serialize;

/// Where a tenant's job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// Not arrived yet.
    Absent,
    /// Arrived, no accelerator.
    Waiting,
    /// On an on-demand type.
    OnDemand(usize),
    /// On an auctioned accelerator (its index).
    Unit(usize),
    /// Finished.
    Done,
}

impl Place {
    /// Its name in records: `absent`, `waiting`, `on_demand`, `auctioned` or `done`.
    pub fn name(self) -> &'static str {
        match self {
            Place::Absent => "absent",
            Place::Waiting => "waiting",
            Place::OnDemand(_) => "on_demand",
            Place::Unit(_) => "auctioned",
            Place::Done => "done",
        }
    }
}

/// One tenant's state.
#[derive(Clone, Debug)]
struct Tenant {
    place: Place,
    progress: f64,
    last_checkpoint: f64,
    decide: bool,
    restart_left: u32,
    bids: Vec<f64>,
    reserved: Option<usize>,
    spent: f64,
    earned: f64,
    lost: f64,
    migrations: u32,
    finished: Option<u32>,
    ran_before: bool,
    /// Price per hour it paid last round (its current type's price in its launch table).
    paying: f64,
}

/// An auctioned accelerator.
#[derive(Clone, Copy, Debug)]
struct Unit {
    ty: usize,
    holder: Option<usize>,
    reserved: Option<usize>,
}

/// What one tenant did in one round.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TenantRound {
    /// Where it ran (or waited) this round.
    pub place: Place,
    /// The type it ran on (`None`: waiting, absent or done).
    pub ty: Option<usize>,
    /// The accelerator reserved for it, if any.
    pub reserved: Option<usize>,
    /// Price per hour it paid this round.
    pub price: f64,
    /// Work done at the round's end.
    pub progress: f64,
    /// Its MTF tokens at the round's end (under MTF).
    pub tokens: f64,
    /// Its launch table after this round's refresh.
    pub bids: Vec<f64>,
}

/// One round of the market.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MarketRound {
    /// Per type: the exchange price (auctioned: what its holders pay under second price, or
    /// the base price with no competing bid; on demand: the base price).
    pub prices: Vec<f64>,
    /// Per tenant.
    pub tenants: Vec<TenantRound>,
}

/// Totals of an episode per tenant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TenantTotals {
    /// Money paid.
    pub spent: f64,
    /// Value of its finished work.
    pub earned: f64,
    /// Work units lost to evictions and moves.
    pub lost: f64,
    /// Moves of a running job to another accelerator.
    pub migrations: u32,
    /// Work done.
    pub progress: f64,
    /// Round its job finished.
    pub finished: Option<u32>,
}

/// The market world: the exchange and the tenants' jobs, round by round.
pub struct Market {
    file: MarketFile,
    units: Vec<Unit>,
    tenants: Vec<Tenant>,
    round: u32,
    prices: Vec<f64>,
    /// MTF's token budgets and its round-robin turn.
    tokens: Vec<f64>,
    turn: usize,
    /// MTF's round, kept to be refilled.
    mtf: MtfRound,
}

/// Under MTF: the mechanism and its round's input and allocation, refilled every round.
struct MtfRound {
    mechanism: scheduler::mtf::Mtf,
    input: scheduler::RoundInput,
    out: scheduler::Allocation,
}

impl Market {
    /// A fresh market for a checked file.
    pub fn new(file: MarketFile) -> Self {
        let m = &file.market;
        let units = m
            .types
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.on_demand)
            .flat_map(|(ty, t)| {
                (0..t.count).map(move |_| Unit {
                    ty,
                    holder: None,
                    reserved: None,
                })
            })
            .collect();
        let tenants = m
            .tenants
            .iter()
            .map(|_| Tenant {
                place: Place::Absent,
                progress: 0.0,
                last_checkpoint: 0.0,
                decide: false,
                restart_left: 0,
                bids: vec![0.0; m.types.len()],
                reserved: None,
                spent: 0.0,
                earned: 0.0,
                lost: 0.0,
                migrations: 0,
                finished: None,
                ran_before: false,
                paying: 0.0,
            })
            .collect();
        let prices = m.types.iter().map(|t| t.base_price).collect();
        let total_w: f64 = m.tenants.iter().map(|t| t.weight).sum();
        let tokens = m.tenants.iter().map(|t| t.weight * file.mechanism.total_tokens / total_w).collect();
        Self {
            file,
            units,
            tenants,
            round: 0,
            prices,
            tokens,
            turn: 0,
            mtf: MtfRound {
                mechanism: scheduler::mtf::Mtf::new(),
                input: scheduler::RoundInput::from_demands(&[0.0], &[vec![1.0]]),
                out: scheduler::Allocation::default(),
            },
        }
    }

    /// Tenants.
    pub fn n(&self) -> usize {
        self.tenants.len()
    }

    /// Whether the episode is over (its rounds played, or every job finished).
    pub fn done(&self) -> bool {
        self.round >= self.file.env.rounds || self.tenants.iter().all(|t| t.place == Place::Done)
    }

    /// The round about to be played.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// Each tenant's totals so far.
    pub fn totals(&self) -> Vec<TenantTotals> {
        self.tenants
            .iter()
            .map(|t| TenantTotals {
                spent: t.spent,
                earned: t.earned,
                lost: t.lost,
                migrations: t.migrations,
                progress: t.progress,
                finished: t.finished,
            })
            .collect()
    }

    /// Whether tenant i's job is in the market now (arrived, not finished).
    pub fn active(&self, i: usize) -> bool {
        !matches!(self.tenants[i].place, Place::Absent | Place::Done)
    }

    /// Where tenant i's job is.
    pub fn place(&self, i: usize) -> Place {
        self.tenants[i].place
    }

    /// Tenant i's quasi-linear utility so far: the value of its finished work minus what it
    /// paid.
    pub fn utility(&self, i: usize) -> f64 {
        self.tenants[i].earned - self.tenants[i].spent
    }

    /// The episode under the file's bid factors (the economic agent at 1).
    pub fn run(file: MarketFile) -> (Vec<MarketRound>, Vec<TenantTotals>) {
        let start = file.actions();
        let (market, rounds) = Self::play(file, &start, true, |_, _| {});
        (rounds, market.totals())
    }

    /// A market episode at factors that need not be levels (every tenant's own, `fixed:X` in
    /// `mtf simulate` and `compare`, a unilateral deviation); policies over levels play through
    /// the world seam ([`world::MarketWorld`]). Play `file` to the end, every
    /// tenant's factor (under MTF its threshold) starting at `start`; before each round
    /// `choose` may change them, seeing the market as it stands (what it leaves stands for the
    /// next round). Returns the market at the end and, when `record`, its rounds.
    pub fn play(file: MarketFile, start: &[f64], record: bool, mut choose: impl FnMut(&Market, &mut [f64])) -> (Market, Vec<MarketRound>) {
        let mut market = Self::new(file);
        let mut factors = start.to_vec();
        let mut rounds = Vec::new();
        while !market.done() {
            choose(&market, &mut factors);
            let round = market.step(&factors);
            if record {
                rounds.push(round);
            }
        }
        (market, rounds)
    }

    /// The type of what tenant i runs on, and the price it pays there (`pay`: this round's
    /// price on an auctioned accelerator; without it, last round's).
    fn running(&self, i: usize, pay: Option<f64>) -> Option<(usize, f64)> {
        match self.tenants[i].place {
            Place::OnDemand(t) => Some((t, self.file.market.types[t].base_price)),
            Place::Unit(c) => Some((self.units[c].ty, pay.unwrap_or(self.tenants[i].paying))),
            _ => None,
        }
    }

    /// Play one round with each tenant's bid factor; returns the round's record.
    pub fn step(&mut self, factors: &[f64]) -> MarketRound {
        assert_eq!(factors.len(), self.n(), "one bid factor per tenant");
        let r = self.round;
        let n = self.n();
        // One copy of the section per round, lent to the phases (they change self).
        let spec = self.file.market.clone();
        // 1. Arrivals.
        for (i, t) in self.tenants.iter_mut().enumerate() {
            if t.place == Place::Absent && spec.tenants[i].arrival == r {
                t.place = Place::Waiting;
                t.decide = true;
            }
            if t.place == Place::Waiting {
                t.decide = true;
            }
        }
        // 2. Launch tables at decision points (auctions).
        let mtf = self.file.mechanism.kind == Pricing::Mtf;
        for i in 0..n {
            if self.tenants[i].decide && !mtf {
                self.tenants[i].bids = self.launch_table(i, factors[i]);
            }
        }
        // 3. The exchange.
        let mut pay: Vec<Option<f64>> = vec![None; n];
        if mtf {
            self.mtf_round(factors, &mut pay);
        } else {
            self.auction_round(&spec, &mut pay);
        }
        // 4. On demand for those left without an accelerator.
        self.on_demand(&spec);
        // 5. Service, payment, checkpoints, completion.
        let record = self.serve(&spec, &pay);
        self.round += 1;
        record
    }

    /// Step 4: tenants left without an accelerator run on the on-demand type with the lowest
    /// cost per unit of work they can afford and their work is worth, or wait.
    fn on_demand(&mut self, spec: &MarketSection) {
        let n = self.n();
        for i in 0..n {
            if self.tenants[i].place != Place::Waiting {
                continue;
            }
            let tn = &spec.tenants[i];
            let left = tn.budget.map_or(f64::INFINITY, |b| b - self.tenants[i].spent);
            let best = (0..spec.types.len())
                .filter(|&t| spec.types[t].on_demand)
                .filter(|&t| {
                    let p = spec.types[t].base_price;
                    p <= tn.value * tn.speeds[t] && p * spec.round_hours <= left + EPS
                })
                .min_by(|&a, &b| (spec.types[a].base_price / tn.speeds[a]).total_cmp(&(spec.types[b].base_price / tn.speeds[b])));
            if let Some(t) = best {
                self.start(i, Place::OnDemand(t));
            }
        }
    }

    /// Step 5: jobs run, pay `pay` (or on demand their type's base price), write checkpoints
    /// and finish; the round's record.
    fn serve(&mut self, spec: &MarketSection, pay: &[Option<f64>]) -> MarketRound {
        let (r, n) = (self.round, self.n());
        let mut record = MarketRound {
            prices: self.prices.clone(),
            tenants: Vec::with_capacity(n),
        };
        for (ty, p) in record.prices.iter_mut().enumerate() {
            if spec.types[ty].on_demand {
                *p = spec.types[ty].base_price;
            }
        }
        for i in 0..n {
            let mut running = self.running(i, pay[i]);
            // A tenant that cannot pay for the round stops (its job waits, rolled back to its
            // checkpoint): budgets bind.
            if let (Some((_, price)), Some(budget)) = (running, spec.tenants[i].budget) {
                if self.tenants[i].spent + price * spec.round_hours > budget + EPS {
                    if let Place::Unit(c) = self.tenants[i].place {
                        self.units[c].holder = None;
                    }
                    let t = &mut self.tenants[i];
                    t.lost += t.progress - t.last_checkpoint;
                    t.progress = t.last_checkpoint;
                    t.place = Place::Waiting;
                    running = None;
                }
            }
            let t = &mut self.tenants[i];
            t.decide = false;
            let mut paid = 0.0;
            if let Some((ty, price)) = running {
                paid = price;
                t.paying = price;
                t.spent += price * spec.round_hours;
                if t.restart_left > 0 {
                    t.restart_left -= 1;
                } else {
                    let tn = &spec.tenants[i];
                    let before = t.progress;
                    t.progress = (t.progress + tn.speeds[ty] * spec.round_hours).min(tn.work);
                    let k = tn.checkpoint;
                    let passed = ((t.progress + EPS) / k).floor();
                    if passed > ((before + EPS) / k).floor() {
                        t.last_checkpoint = (passed * k).min(t.progress);
                        t.decide = true;
                    }
                    if t.progress >= tn.work - EPS {
                        // Finished in round r: on time if r - arrival < deadline.
                        let late = tn.deadline.is_some_and(|d| r - tn.arrival >= d);
                        t.earned += if late { tn.late_value } else { tn.value } * tn.work;
                        t.finished = Some(r);
                    }
                }
            }
            record.tenants.push(TenantRound {
                place: t.place,
                ty: running.map(|(ty, _)| ty),
                reserved: t.reserved,
                price: paid,
                progress: t.progress,
                tokens: self.tokens[i],
                bids: t.bids.clone(),
            });
        }
        for i in 0..n {
            if self.tenants[i].finished == Some(r) {
                if let Place::Unit(c) = self.tenants[i].place {
                    self.units[c].holder = None;
                }
                if let Some(c) = self.tenants[i].reserved.take() {
                    self.units[c].reserved = None;
                }
                self.tenants[i].place = Place::Done;
                self.tenants[i].bids.fill(0.0);
            }
        }
        record
    }

    /// Per tenant, the accelerators it holds or has reserved (for invariant checks).
    pub fn claims(&self) -> Vec<usize> {
        let mut k = vec![0; self.n()];
        for u in &self.units {
            for i in [u.holder, u.reserved].into_iter().flatten() {
                k[i] += 1;
            }
        }
        k
    }

    /// Tenant i takes accelerator c (reserved for it): a move when its job ran elsewhere.
    fn move_to(&mut self, i: usize, c: usize) {
        if let Place::Unit(old) = self.tenants[i].place {
            self.units[old].holder = None;
        }
        self.units[c].reserved = None;
        self.units[c].holder = Some(i);
        self.tenants[i].reserved = None;
        self.start(i, Place::Unit(c));
    }

    /// Tenant i's job starts at `place`: a move (the work since its checkpoint lost, a restart
    /// delay) if it ran before, here or after an eviction.
    fn start(&mut self, i: usize, place: Place) {
        let restart = self.file.market.tenants[i].restart_rounds;
        let t = &mut self.tenants[i];
        if t.ran_before {
            t.migrations += 1;
            t.lost += t.progress - t.last_checkpoint;
            t.progress = t.last_checkpoint;
            t.restart_left = restart;
        }
        t.ran_before = true;
        t.place = place;
    }
}

#[cfg(test)]
mod tests;
