//! A FIFO job queue stored run-length encoded: (arrival round, count) runs, oldest first, so a
//! round costs O(runs) whatever the number of jobs, and nothing is allocated per job.

use crate::config::Queues;
use scheduler::Form;
use std::collections::VecDeque;

/// A run-length-encoded FIFO of jobs by arrival round.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Queue {
    runs: VecDeque<(u32, u32)>,
    len: u64,
}

impl Queue {
    /// Empty the queue, keeping capacity.
    pub fn clear(&mut self) {
        self.runs.clear();
        self.len = 0;
    }

    /// Make room for `runs` runs (arrival rounds) without reallocating.
    pub fn reserve(&mut self, runs: usize) {
        self.runs.reserve(runs.saturating_sub(self.runs.len()));
    }

    /// Jobs queued.
    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no job is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append up to `count` jobs that arrived in `round`, keeping at most `cap` jobs; returns
    /// how many were rejected.
    pub fn push(&mut self, round: u32, count: u64, cap: u64) -> u64 {
        let room = cap.saturating_sub(self.len);
        let take = count.min(room);
        if take > 0 {
            match self.runs.back_mut() {
                Some((r, k)) if *r == round => *k += take as u32,
                _ => self.runs.push_back((round, take as u32)),
            }
            self.len += take;
        }
        count - take
    }

    /// Drop jobs that arrived in round `a` with `now - a >= deadline`; returns how many.
    pub fn expire(&mut self, now: u32, deadline: u32) -> u64 {
        let mut dropped = 0;
        while let Some(&(r, k)) = self.runs.front() {
            if now - r >= deadline {
                dropped += u64::from(k);
                self.runs.pop_front();
            } else {
                break;
            }
        }
        self.len -= dropped;
        dropped
    }

    /// Serve the `count` oldest jobs at round `now`; returns (served, total wait in rounds).
    pub fn serve(&mut self, now: u32, count: u64) -> (u64, u64) {
        let mut left = count.min(self.len);
        let served = left;
        let mut wait = 0u64;
        while left > 0 {
            let front = self.runs.front_mut().expect("len counts the runs");
            let take = u64::from(front.1).min(left);
            wait += take * u64::from(now - front.0);
            left -= take;
            if take == u64::from(front.1) {
                self.runs.pop_front();
            } else {
                front.1 -= take as u32;
            }
        }
        self.len -= served;
        (served, wait)
    }
}

/// Every agent's waiting jobs, in the scenario's queue structure (SPEC 2.2). The one place
/// that knows the two structures: the environment asks it, and matches on it only where the
/// structures really differ (placement, observation, service).
#[derive(Clone, Debug)]
pub enum Backlogs {
    /// One queue per agent: its jobs go to whichever accelerators it wins.
    Central(Vec<Queue>),
    /// One queue per agent and accelerator, row-major (`[i * m + c]`): jobs are pinned to an
    /// accelerator when they arrive.
    PerAccelerator {
        /// Accelerators.
        m: usize,
        /// The n x m queues.
        queues: Vec<Queue>,
    },
}

impl Backlogs {
    /// Empty queues for `n` agents and `m` accelerators.
    pub fn new(structure: Queues, n: usize, m: usize) -> Self {
        match structure {
            Queues::Central => Backlogs::Central(vec![Queue::default(); n]),
            Queues::PerAccelerator => Backlogs::PerAccelerator {
                m,
                queues: vec![Queue::default(); n * m],
            },
        }
    }

    /// Empty every queue, with room for `runs` arrival rounds each.
    pub fn clear(&mut self, runs: usize) {
        let (Backlogs::Central(queues) | Backlogs::PerAccelerator { queues, .. }) = self;
        for q in queues {
            q.clear();
            q.reserve(runs);
        }
    }

    /// Agent `i`'s queued jobs.
    pub fn len(&self, i: usize) -> u64 {
        match self {
            Backlogs::Central(q) => q[i].len(),
            Backlogs::PerAccelerator { m, queues } => queues[i * m..(i + 1) * m].iter().map(Queue::len).sum(),
        }
    }

    /// Drop agent `i`'s jobs older than `deadline` rounds at round `now`; returns how many.
    pub fn expire(&mut self, i: usize, now: u32, deadline: u32) -> u64 {
        match self {
            Backlogs::Central(q) => q[i].expire(now, deadline),
            Backlogs::PerAccelerator { m, queues } => queues[i * *m..(i + 1) * *m].iter_mut().map(|q| q.expire(now, deadline)).sum(),
        }
    }

    /// Jobs one agent can hold when every queue holds at most `cap`.
    pub fn agent_capacity(&self, cap: u64) -> u64 {
        match self {
            Backlogs::Central(_) => cap,
            Backlogs::PerAccelerator { m, .. } => cap * *m as u64,
        }
    }

    /// The round input form the mechanism gets: demands for central queues, utilities per
    /// accelerator for pinned jobs.
    pub fn form(&self) -> Form {
        match self {
            Backlogs::Central(_) => Form::Demand,
            Backlogs::PerAccelerator { .. } => Form::Utilities,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_with_caps_deadlines_and_waits() {
        let mut q = Queue::default();
        assert_eq!(q.push(0, 5, 8), 0);
        assert_eq!(q.push(0, 2, 8), 0);
        assert_eq!(q.push(1, 4, 8), 3); // one fits
        assert_eq!(q.len(), 8);
        assert_eq!(q.runs.len(), 2);
        // At round 3, serve 3 of round 0's jobs: wait 3 each.
        assert_eq!(q.serve(3, 3), (3, 9));
        // Deadline 4 at round 4: the rest of round 0 (4 jobs) expire, round 1's 1 job stays.
        assert_eq!(q.expire(4, 4), 4);
        assert_eq!(q.len(), 1);
        assert_eq!(q.serve(4, 10), (1, 3));
        assert!(q.is_empty());
    }
}
