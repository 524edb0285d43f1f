//! The exchange: who gets an auctioned accelerator and at what price. A tenant's launch table
//! (its bid per type from its factor and break-even prices), the per-type auctions (second and
//! first price, holders first, reservations), their joint clearing, and MTF with tokens over
//! the accelerators on offer (`scheduler::mtf` in the demand form). The module docs of
//! [`super`] state the round these run in.

use super::*;

impl Market {
    /// Tenant i's launch table: `factor` times its break-even prices, capped (module docs).
    pub(super) fn launch_table(&self, i: usize, factor: f64) -> Vec<f64> {
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

    /// Step 3 under the auctions: the exchange clears the auctioned types (module docs), and
    /// `pay` gets what each tenant on an auctioned accelerator pays per hour.
    pub(super) fn auction_round(&mut self, spec: &MarketSection, pay: &mut [Option<f64>]) {
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
    pub(super) fn mtf_round(&mut self, thresholds: &[f64], pay: &mut [Option<f64>]) {
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
}
