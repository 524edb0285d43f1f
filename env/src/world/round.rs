//! A round's phases: arrivals and placement, expiry, the valuation world's values, then (after
//! the agents act) allocation, service and rewards, and the dispatch and placement rules.

use super::*;

impl ClusterEnv {
    /// The mechanism's input form: utilities in the valuation world, else the queues'.
    pub(super) fn form(&self) -> Form {
        if self.valuations {
            Form::Utilities
        } else {
            self.backlogs.form()
        }
    }

    /// Arrivals, placement, expiry, observation (the valuation world: the round's values).
    pub(super) fn begin_round(&mut self) {
        if self.valuations {
            self.draw_values();
            self.observe();
            return;
        }
        let r = self.round;
        for i in 0..self.n {
            let arrived = self.arrivals(i);
            if self.recording {
                self.arrivals_log.push(arrived.min(u64::from(u32::MAX)) as u32);
            }
            let rejected = self.enqueue(i, arrived);
            let dropped = if self.sc.deadline != u32::MAX {
                self.backlogs.expire(i, r, self.sc.deadline)
            } else {
                0
            };
            self.pending_infos[i] = Info {
                budget: self.budgets[i],
                arrived,
                rejected,
                dropped,
                ..Info::default()
            };
        }
        self.observe();
    }

    /// The valuation world's round: every agent's private value per accelerator, U[0, 1), from
    /// its own stream.
    pub(super) fn draw_values(&mut self) {
        let m = self.m;
        for i in 0..self.n {
            for c in 0..m {
                self.pending.utilities[i * m + c] = unit(self.rng_values[i].next_u64());
            }
            self.pending_infos[i] = Info {
                budget: self.budgets[i],
                ..Info::default()
            };
        }
    }

    /// Agent `i`'s arrivals this round: its burst state, then a draw, from its own stream.
    pub(super) fn arrivals(&mut self, i: usize) -> u64 {
        let (r, e) = (self.round, &self.sc.file.env);
        let rng = &mut self.rng_arrivals[i];
        match e.arrivals {
            Arrivals::Trace => self.sc.trace[(r as usize + self.trace_offset) % self.sc.trace.len()][i],
            Arrivals::Poisson | Arrivals::Mmpp => {
                if e.arrivals == Arrivals::Mmpp && r > 0 {
                    let flip = unit(rng.next_u64());
                    self.high[i] = if self.high[i] {
                        flip >= e.mmpp.p_high_to_low
                    } else {
                        flip < e.mmpp.p_low_to_high
                    };
                }
                match &self.poisson[i][usize::from(self.high[i])] {
                    Some(p) => p.sample(rng) as u64,
                    None => 0,
                }
            }
        }
    }

    /// Queue agent `i`'s `arrived` jobs (pinned jobs each to the accelerator the placement
    /// picks); returns how many were rejected by full queues.
    pub(super) fn enqueue(&mut self, i: usize, arrived: u64) -> u64 {
        let (r, cap) = (self.round, self.sc.queue_cap);
        match &mut self.backlogs {
            Backlogs::Central(q) => q[i].push(r, arrived, cap),
            Backlogs::PerAccelerator { m, queues } => {
                let (m, row) = (*m, i * *m);
                let rates = Rates {
                    mu: &self.mu[row..row + m],
                    cum: &self.cum_mu[row..row + m],
                };
                let queues = &mut queues[row..row + m];
                let rng = &mut self.rng_place[i];
                (0..arrived)
                    .map(|_| {
                        let c = place(&self.sc.file.env, rng, &rates, queues);
                        queues[c].push(r, 1, cap)
                    })
                    .sum()
            }
        }
    }

    /// Allocation, service, rewards.
    pub(super) fn finish_round(&mut self, actions: &[usize]) {
        self.allocate(actions);
        self.draw_service();
        for i in 0..self.n {
            self.mine.clear();
            self.mine.extend((0..self.m).filter(|&c| self.alloc.owners[c] == Some(i)));
            let (served, wait) = if self.valuations { (0, 0) } else { self.serve(i) };
            let backlog = self.backlogs.len(i);
            self.rewards[i] = self.reward(i, served, backlog);
            self.book(i, served, wait, backlog);
        }
        if self.sc.file.env.reward == Reward::Welfare && !self.valuations {
            let n = self.n;
            let welfare: f64 = (0..n).map(|i| self.weights[i] * self.infos[i].served as f64).sum::<f64>() / self.total_w;
            let scale = self.max_mu.iter().sum::<f64>() / n as f64;
            let r = welfare / scale;
            self.rewards.fill(r);
            for t in self.totals.reward.iter_mut() {
                *t += r;
            }
        }
    }

    /// The mechanism's allocation of the observed round with the agents' thresholds.
    pub(super) fn allocate(&mut self, actions: &[usize]) {
        // The observed round becomes the played one; `pending` is refilled by the next
        // observation (every value it holds is overwritten there).
        std::mem::swap(&mut self.input, &mut self.pending);
        std::mem::swap(&mut self.bid_values, &mut self.pending_bid_values);
        self.infos.copy_from_slice(&self.pending_infos);
        for i in 0..self.n {
            let level = self.levels[actions[i]];
            play(&mut self.input, self.kind, i, level, &self.bid_values);
            self.infos[i].threshold = level;
        }
        self.input.budgets.copy_from_slice(&self.budgets);
        self.input.turn = self.turn;
        for d in self.input.draws.iter_mut() {
            *d = unit(self.rng_leftovers.next_u64());
        }
        let start = Instant::now();
        self.mechanism.allocate(&self.input, &mut self.alloc);
        if self.recording {
            match self.input.form {
                Form::Demand => self.value_log.extend_from_slice(&self.input.demands),
                Form::Utilities => self.value_log.extend_from_slice(&self.input.utilities),
            }
            self.owners_log
                .extend(self.alloc.owners.iter().map(|o| o.map_or(IDLE, |i| i as u32)));
            self.utility_log.extend_from_slice(&self.alloc.won_utility);
        }
        self.totals.sched_ns += start.elapsed().as_nanos();
        self.totals.sold += self.alloc.paid.iter().filter(|&&p| p).count() as u64;
        self.budgets.copy_from_slice(&self.alloc.budgets);
        self.turn = self.alloc.turn;
    }

    /// Service capacity: one uniform per accelerator per round, allocated or not, so the
    /// service streams stay aligned across mechanisms.
    pub(super) fn draw_service(&mut self) {
        let (m, e) = (self.m, &self.sc.file.env);
        for c in 0..m {
            let u = unit(self.rng_service[c].next_u64());
            self.capacity[c] = match self.alloc.owners[c] {
                Some(i) => match e.service {
                    Service::Poisson => poisson_inv(self.mu[i * m + c], u),
                    Service::Deterministic => self.mu[i * m + c].round() as u64,
                },
                None => 0,
            };
        }
    }

    /// Serve agent `i`'s jobs on the accelerators it won (`self.mine`): returns (served,
    /// total wait in rounds). The served jobs leave oldest first; the rest stay in age order.
    pub(super) fn serve(&mut self, i: usize) -> (u64, u64) {
        let (m, r) = (self.m, self.round);
        match &mut self.backlogs {
            Backlogs::Central(q) => {
                let total: u64 = self.mine.iter().map(|&c| self.capacity[c]).sum();
                let jobs = q[i].len().min(total);
                let served = match self.sc.file.env.dispatch {
                    Dispatch::Fluid => jobs,
                    Dispatch::P2c => dispatch_p2c(
                        jobs,
                        &self.mine,
                        &self.mu[i * m..(i + 1) * m],
                        &self.capacity,
                        &mut self.assigned,
                        &mut self.rng_dispatch[i],
                    ),
                };
                q[i].serve(r, served)
            }
            Backlogs::PerAccelerator { queues, .. } => self.mine.iter().fold((0, 0), |(s, w), &c| {
                let (a, b) = queues[i * m + c].serve(r, self.capacity[c]);
                (s + a, w + b)
            }),
        }
    }

    /// Agent `i`'s reward for the round (the welfare reward is set once every agent is served).
    pub(super) fn reward(&self, i: usize, served: u64, backlog: u64) -> f64 {
        if self.valuations {
            // Quasi-linear: the values won minus the price paid, in value units.
            let won: f64 = self.mine.iter().map(|&c| self.alloc.won_utility[c]).sum();
            return won - self.alloc.spent[i] / self.value_scale;
        }
        match self.sc.file.env.reward {
            Reward::Utility => self.mine.iter().map(|&c| self.alloc.won_utility[c]).sum(),
            Reward::Net => {
                let won: f64 = self.mine.iter().map(|&c| self.alloc.won_utility[c]).sum();
                won - self.input.mean_start_utility(i) * self.alloc.spent[i]
            }
            Reward::Throughput => served as f64 / self.max_mu[i],
            Reward::Welfare => 0.0,
            Reward::Backlog => -(backlog as f64) / self.backlogs.agent_capacity(self.sc.queue_cap) as f64,
        }
    }

    /// Agent `i`'s info for the round and the episode totals.
    pub(super) fn book(&mut self, i: usize, served: u64, wait: u64, backlog: u64) {
        let info = &mut self.infos[i];
        info.served = served;
        info.backlog = backlog;
        info.won = self.mine.len() as u32;
        info.spent = self.alloc.spent[i];
        info.budget = self.budgets[i];
        let t = &mut self.totals;
        t.arrived[i] += info.arrived;
        t.rejected[i] += info.rejected;
        t.dropped[i] += info.dropped;
        t.served[i] += served;
        t.wait[i] += wait;
        t.backlog[i] += backlog;
        t.reward[i] += self.rewards[i];
        t.spent[i] += info.spent;
        t.threshold[i] += info.threshold;
        t.won[i] += u64::from(info.won);
    }
}

/// One agent's service rates over the accelerators, and their running sums (for
/// rate-proportional draws).
struct Rates<'a> {
    mu: &'a [f64],
    cum: &'a [f64],
}

/// The accelerator a pinned job goes to (SPEC 2.2): a uniform or rate-proportional draw, or
/// the power of two choices between two distinct draws (the shorter queue in service time).
fn place(e: &EnvSection, rng: &mut SmallRng, rates: &Rates<'_>, queues: &[Queue]) -> usize {
    let m = queues.len();
    let draw = |rng: &mut SmallRng| match e.p2c_draw {
        P2cDraw::Uniform => rng.random_range(0..m),
        P2cDraw::RateProportional => {
            let x = unit(rng.next_u64()) * rates.cum[m - 1];
            rates.cum.partition_point(|&cdf| cdf <= x).min(m - 1)
        }
    };
    match e.placement {
        Placement::Uniform => draw(rng),
        Placement::P2c if m == 1 => 0,
        Placement::P2c => {
            let a = draw(rng);
            let mut b = draw(rng);
            // Two distinct accelerators: redraw (uniform: shift) on a repeat.
            let mut tries = 0;
            while b == a && tries < 64 {
                b = draw(rng);
                tries += 1;
            }
            if b == a {
                b = (a + 1) % m;
            }
            let load = |c: usize| queues[c].len() as f64 / rates.mu[c];
            if load(b) < load(a) {
                b
            } else {
                a
            }
        }
    }
}

/// Central-queue dispatch by the power of two choices: each of `jobs` jobs goes to the less
/// loaded (assigned / rate) of two distinct accelerators among `mine`; returns the jobs the
/// accelerators' capacities serve.
fn dispatch_p2c(jobs: u64, mine: &[usize], mu: &[f64], capacity: &[u64], assigned: &mut [u64], rng: &mut SmallRng) -> u64 {
    let k = mine.len();
    for &c in mine {
        assigned[c] = 0;
    }
    for _ in 0..jobs {
        let c = if k == 1 {
            mine[0]
        } else {
            let a = rng.random_range(0..k);
            let mut b = rng.random_range(0..k - 1);
            if b >= a {
                b += 1;
            }
            let (ca, cb) = (mine[a], mine[b]);
            // Lower assigned / mu wins; tie: the first drawn.
            if (assigned[cb] as f64) * mu[ca] < (assigned[ca] as f64) * mu[cb] {
                cb
            } else {
                ca
            }
        };
        assigned[c] += 1;
    }
    mine.iter().map(|&c| assigned[c].min(capacity[c])).sum()
}
