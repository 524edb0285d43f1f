//! The LaissezCloud market as a world (Harith and Kaufmann, "It's the People, Not the
//! Placement"; issue 29): tenants run long jobs on heterogeneous accelerators, submit a launch
//! table (a maximum price per hour for each auctioned accelerator type), the exchange clears a
//! price per type from its base price and the outstanding bids, running jobs keep their
//! accelerator while their bid stands, and a job moves only at its checkpoints (losing the work
//! since its last checkpoint plus a restart delay when it moves at any other time).
//!
//! This module is the world's core, one concern per file: the exchange here (second and first
//! price, and MTF with tokens on the same arrivals, allocated by `scheduler::mtf` itself in
//! the demand form; the paper's economic agent as the fixed
//! policy, a bid factor per tenant, 1 = break-even; the episode's records), the scenario file
//! (`file.rs`), what a learned bid policy observes (`observe.rs`), the episode's figures
//! ([`MarketMetrics`], `metrics.rs`), the joint clearing's assignment ([`assign`]), and
//! [`game`]: the market as a parallel multi-agent environment (what Python's `parallel_env`
//! steps). `mtf simulate` runs a market file, `mtf compare` its
//! mechanisms under fixed policies, `mtf train` learns bids in it. By default the exchange
//! clears the auctioned types one by one; `mechanism.clearing = "joint"` clears them in one
//! assignment ([`Clearing::Joint`], [`assign`]).
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
mod file;
pub mod game;
mod metrics;
mod observe;
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
        let factors = file.actions();
        let mut market = Self::new(file);
        let mut rounds = Vec::new();
        while !market.done() {
            rounds.push(market.step(&factors));
        }
        (rounds, market.totals())
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

    /// Tenant i's launch table: `factor` times its break-even prices, capped (module docs).
    fn launch_table(&self, i: usize, factor: f64) -> Vec<f64> {
        let spec = &self.file.market;
        let tn = &spec.tenants[i];
        let s = &tn.speeds;
        let here = self.running(i, None);
        let free: Vec<bool> = (0..spec.types.len())
            .map(|t| spec.types[t].on_demand || self.units.iter().any(|u| u.ty == t && u.holder.is_none() && u.reserved.is_none()))
            .collect();
        let cap_budget = tn
            .budget
            .map_or(f64::INFINITY, |b| (b - self.tenants[i].spent).max(0.0) / spec.round_hours);
        (0..spec.types.len())
            .map(|t| {
                if spec.types[t].on_demand {
                    return 0.0;
                }
                let worth = tn.value * s[t];
                let mut be = f64::INFINITY;
                for a in (0..spec.types.len()).filter(|&a| a != t) {
                    let price = match here {
                        Some((h, p)) if h == a => Some(p),
                        _ if free[a] => Some(spec.types[a].base_price),
                        _ => None,
                    };
                    if let Some(p) = price {
                        be = be.min(p * s[t] / s[a]);
                    }
                }
                (factor * be.min(worth)).min(worth).min(cap_budget)
            })
            .collect()
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

    /// Step 3 under the auctions: the exchange clears the auctioned types (module docs), and
    /// `pay` gets what each tenant on an auctioned accelerator pays per hour.
    fn auction_round(&mut self, spec: &MarketSection, pay: &mut [Option<f64>]) {
        let n = self.n();
        let active = |t: &Tenant| matches!(t.place, Place::Waiting | Place::OnDemand(_) | Place::Unit(_));
        let mut won_new = vec![false; n];
        let joint = (self.file.mechanism.clearing == Clearing::Joint).then(|| self.joint_clearing());
        for ty in (0..spec.types.len()).filter(|&t| !spec.types[t].on_demand) {
            let base = spec.types[ty].base_price;
            let mine: Vec<usize> = (0..self.units.len()).filter(|&c| self.units[c].ty == ty).collect();
            let claim = |i: usize, units: &[Unit]| {
                mine.iter()
                    .copied()
                    .find(|&c| units[c].holder == Some(i) || units[c].reserved == Some(i))
            };
            // One accelerator per tenant: a tenant holding or reserving one of another type
            // competes here only at a decision point (where it may move), and a tenant that won
            // a new one this round does not compete again.
            let elsewhere = |i: usize, units: &[Unit]| {
                let t = &self.tenants[i];
                matches!(t.place, Place::Unit(u) if units[u].ty != ty) || t.reserved.is_some_and(|u| units[u].ty != ty)
            };
            let (winners, price) = match &joint {
                Some((assigned, prices)) => ((0..n).filter(|&i| assigned[i] == Some(ty)).collect::<Vec<usize>>(), prices[ty]),
                None => {
                    let mut cands: Vec<(f64, bool, usize)> = (0..n)
                        .filter(|&i| active(&self.tenants[i]))
                        .filter_map(|i| {
                            let b = self.tenants[i].bids[ty];
                            let holds = claim(i, &self.units).is_some();
                            let free_to_bid = !won_new[i] && (self.tenants[i].decide || !elsewhere(i, &self.units));
                            (b > 0.0 && b >= base && (holds || free_to_bid)).then_some((b, holds, i))
                        })
                        .collect();
                    cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
                    cands.truncate(mine.len());
                    let winners: Vec<usize> = cands.iter().map(|c| c.2).collect();
                    let price = (0..n)
                        .filter(|&i| active(&self.tenants[i]) && !winners.contains(&i))
                        .map(|i| self.tenants[i].bids[ty])
                        .fold(base, f64::max);
                    (winners, price)
                }
            };
            self.prices[ty] = price;
            // Losers lose their claims on this type.
            for &c in &mine {
                if let Some(h) = self.units[c].holder.filter(|h| !winners.contains(h)) {
                    self.units[c].holder = None;
                    let t = &mut self.tenants[h];
                    t.lost += t.progress - t.last_checkpoint;
                    t.progress = t.last_checkpoint;
                    t.place = Place::Waiting;
                }
                if let Some(h) = self.units[c].reserved.filter(|h| !winners.contains(h)) {
                    self.units[c].reserved = None;
                    self.tenants[h].reserved = None;
                }
            }
            for &i in &winners {
                let c = match claim(i, &self.units) {
                    Some(c) => c,
                    None => {
                        won_new[i] = true;
                        let c = mine
                            .iter()
                            .copied()
                            .find(|&c| self.units[c].holder.is_none() && self.units[c].reserved.is_none())
                            .expect("as many winners as accelerators, losers evicted");
                        if let Some(old) = self.tenants[i].reserved.take() {
                            self.units[old].reserved = None;
                        }
                        self.units[c].reserved = Some(i);
                        self.tenants[i].reserved = Some(c);
                        c
                    }
                };
                // A reserved accelerator is taken at a decision point (or by a tenant not running).
                let t = &self.tenants[i];
                let running_elsewhere = matches!(t.place, Place::OnDemand(_)) || matches!(t.place, Place::Unit(u) if u != c);
                if self.units[c].reserved == Some(i) && (!running_elsewhere || t.decide) {
                    self.move_to(i, c);
                }
            }
        }
        // What each tenant on an auctioned accelerator pays: its type's price, never more than
        // its own bid (second price), or its own bid (first price). A reserved, idle
        // accelerator costs nothing.
        for i in 0..n {
            if let Place::Unit(c) = self.tenants[i].place {
                let ty = self.units[c].ty;
                let bid = self.tenants[i].bids[ty];
                pay[i] = Some(match self.file.mechanism.kind {
                    Pricing::FirstPrice => bid,
                    Pricing::SecondPrice | Pricing::Mtf => self.prices[ty].min(bid),
                });
            }
        }
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

    /// [`Clearing::Joint`]: each tenant's assigned type (or none) and each auctioned type's
    /// price. A tenant may take type t if it bids at least t's base price and holds or reserves
    /// one of t's accelerators, or is at a decision point, or holds and reserves nothing of
    /// another type (as per type). A bid at the base price may win; at equal bids holders win.
    fn joint_clearing(&self) -> (Vec<Option<usize>>, Vec<f64>) {
        let spec = &self.file.market;
        let auctioned: Vec<usize> = (0..spec.types.len()).filter(|&t| !spec.types[t].on_demand).collect();
        let n = self.n();
        let weights: Vec<Vec<Option<f64>>> = (0..n)
            .map(|i| {
                let t = &self.tenants[i];
                let active = matches!(t.place, Place::Waiting | Place::OnDemand(_) | Place::Unit(_));
                let claim_ty = match t.place {
                    Place::Unit(u) => Some(self.units[u].ty),
                    _ => None,
                }
                .or(t.reserved.map(|u| self.units[u].ty));
                auctioned
                    .iter()
                    .map(|&ty| {
                        let (b, base) = (t.bids[ty], spec.types[ty].base_price);
                        let holds = claim_ty == Some(ty);
                        let free = t.decide || claim_ty.is_none();
                        (active && b > 0.0 && b >= base && (holds || free)).then(|| b - base)
                    })
                    .collect()
            })
            .collect();
        let caps: Vec<usize> = auctioned.iter().map(|&ty| spec.types[ty].count as usize).collect();
        // Who wins: a bid at the base price wins as per type (every allowed pair one unit more),
        // and at equal bids holders keep their accelerators (one unit more again).
        let claim = |i: usize| match self.tenants[i].place {
            Place::Unit(u) => Some(self.units[u].ty),
            _ => self.tenants[i].reserved.map(|u| self.units[u].ty),
        };
        let tied: Vec<Vec<Option<f64>>> = weights
            .iter()
            .enumerate()
            .map(|(i, row)| {
                row.iter()
                    .zip(&auctioned)
                    .map(|(x, &ty)| x.map(|x| x + ASSIGN_UNIT * if claim(i) == Some(ty) { 2.0 } else { 1.0 }))
                    .collect()
            })
            .collect();
        let (assigned, _) = assign(&tied, &caps);
        // The prices from the bids alone: the marginals do not depend on which best assignment
        // was chosen.
        let (_, marginal) = assign(&weights, &caps);
        let mut prices = self.prices.clone();
        for (k, &ty) in auctioned.iter().enumerate() {
            prices[ty] = spec.types[ty].base_price + marginal[k];
        }
        (assigned.into_iter().map(|a| a.map(|k| auctioned[k])).collect(), prices)
    }

    /// The MTF round (SPEC 3.1 with unit demand: a tenant has one job, so one accelerator
    /// satisfies it). Offered: the free accelerators and those whose holder is at a decision
    /// point; claimants: the tenants waiting or at a decision point (the others keep running
    /// where they are). A claimant's utility for an accelerator is its speed there over its
    /// best speed on any type; its preference, decreasing utility then lower index;
    /// `thresholds[i]` its threshold. Paid phase: the richest claimant (ties: cyclic order from
    /// the turn) with a budget >= 1 and an offered accelerator of utility >= its threshold takes
    /// its favourite such one for a token; the tokens spent go back to every tenant by weight;
    /// free phase: the claimants still without one, cyclically from the turn, take their
    /// favourite accelerator left. A holder at its checkpoint that does not get its own
    /// accelerator back is evicted (it then runs on demand or waits). Money: the base price.
    fn mtf_round(&mut self, thresholds: &[f64], pay: &mut [Option<f64>]) {
        let (n, m) = (self.n(), self.units.len());
        let claimant: Vec<bool> = self
            .tenants
            .iter()
            .map(|t| t.place == Place::Waiting || (t.decide && matches!(t.place, Place::OnDemand(_) | Place::Unit(_))))
            .collect();
        // The accelerators on offer: free, or held by a tenant that may move.
        let open: Vec<usize> = (0..m).filter(|&c| self.units[c].holder.is_none_or(|h| claimant[h])).collect();
        let types: Vec<usize> = self.units.iter().map(|u| u.ty).collect();
        let mut got: Vec<Option<usize>> = vec![None; n];
        if open.is_empty() {
            self.turn = (self.turn + 1) % n;
        } else {
            // MTF itself (scheduler::mtf, SPEC 3.1) in the demand form: a tenant's utility for an
            // accelerator is its speed there over its fastest type anywhere (`fastest`, not
            // only the types on offer), a claimant's demand is that fastest speed (so every
            // utility is the plain ratio) and a tenant takes one accelerator (gang 1);
            // a tenant that may not move demands nothing.
            let spec = &self.file.market;
            let input = &mut self.mtf.input;
            input.n = n;
            input.m = open.len();
            input.rates.clear();
            input.fastest.clear();
            input.demands.clear();
            for (i, t) in spec.tenants.iter().enumerate() {
                input.rates.extend(open.iter().map(|&c| t.speeds[types[c]]));
                let fastest = t.speeds.iter().copied().fold(0.0, f64::max);
                input.fastest.push(fastest);
                input.demands.push(if claimant[i] { fastest } else { 0.0 });
            }
            input.rates_stamp = scheduler::RatesStamp::fresh();
            input.thresholds.clear();
            input.thresholds.extend_from_slice(thresholds);
            input.budgets.clone_from(&self.tokens);
            input.weights.clear();
            input.weights.extend(spec.tenants.iter().map(|t| t.weight));
            input.turn = self.turn;
            input.jobs.gangs.clear();
            input.jobs.gangs.resize(n, 1);
            let out = &mut self.mtf.out;
            scheduler::Mechanism::allocate(&mut self.mtf.mechanism, input, out);
            self.tokens.clone_from(&out.budgets);
            self.turn = out.turn;
            for (k, owner) in out.owners.iter().enumerate() {
                if let Some(i) = *owner {
                    got[i] = Some(open[k]);
                }
            }
        }
        // Holders at their checkpoint that lost their accelerator, then the moves.
        for c in 0..m {
            if let Some(h) = self.units[c].holder.filter(|&h| claimant[h] && got[h] != Some(c)) {
                self.units[c].holder = None;
                let t = &mut self.tenants[h];
                t.lost += t.progress - t.last_checkpoint;
                t.progress = t.last_checkpoint;
                t.place = Place::Waiting;
            }
        }
        for i in 0..n {
            if let Some(c) = got[i] {
                if self.units[c].holder != Some(i) {
                    self.move_to(i, c);
                }
                pay[i] = Some(self.file.market.types[types[c]].base_price);
            }
        }
        for (p, t) in self.prices.iter_mut().zip(&self.file.market.types) {
            *p = t.base_price;
        }
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
