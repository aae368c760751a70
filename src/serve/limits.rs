//! How many subscriptions the hub holds open, per caller and in all: each one is a stream
//! the hub feeds for as long as it lives, so one caller (or a runaway script) must not be
//! able to take them all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tonic::Status;

/// The most subscriptions open at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriberLimits {
    /// For one user (all their tokens and sockets together).
    pub per_caller: usize,
    /// For the whole hub.
    pub total: usize,
}

impl Default for SubscriberLimits {
    /// Enough for a team's cockpits and scripts (and the 200-client load test on one
    /// token), far below what would exhaust the hub's memory or file descriptors.
    fn default() -> Self {
        SubscriberLimits { per_caller: 256, total: 4096 }
    }
}

/// The open subscriptions, counted.
#[derive(Debug, Default)]
pub struct Subscribers {
    limits: SubscriberLimits,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_user: HashMap<String, usize>,
}

/// One subscription's place, given back when its stream ends (dropped).
#[derive(Debug)]
pub struct Seat {
    subscribers: Arc<Subscribers>,
    user: String,
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut open = self.subscribers.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_user.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.by_user.remove(&self.user);
            }
        }
    }
}

impl Subscribers {
    pub fn new(limits: SubscriberLimits) -> Arc<Subscribers> {
        Arc::new(Subscribers { limits, open: Mutex::default() })
    }

    /// A seat for one more subscription of `user`, or `RESOURCE_EXHAUSTED` saying which
    /// limit was reached.
    pub fn admit(self: &Arc<Self>, user: &str) -> Result<Seat, Status> {
        let mut open = self.lock();
        let mine = open.by_user.get(user).copied().unwrap_or(0);
        if mine >= self.limits.per_caller {
            return Err(Status::resource_exhausted(format!(
                "{user} already has {mine} subscriptions open, the most one user may (--max-subscriptions-per-user); close one first"
            )));
        }
        if open.total >= self.limits.total {
            return Err(Status::resource_exhausted(format!(
                "the hub already serves {} subscriptions, the most it takes (--max-subscriptions); try again later",
                open.total
            )));
        }
        open.total += 1;
        *open.by_user.entry(user.to_string()).or_insert(0) += 1;
        Ok(Seat { subscribers: self.clone(), user: user.to_string() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        // Counters only: a panic elsewhere leaves them usable.
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_are_limited_per_user_and_in_all_and_given_back() {
        let subscribers = Subscribers::new(SubscriberLimits { per_caller: 2, total: 3 });
        let a1 = subscribers.admit("alice").unwrap();
        let _a2 = subscribers.admit("alice").unwrap();
        let refused = subscribers.admit("alice").unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(refused.message().contains("alice already has 2 subscriptions open"), "{}", refused.message());
        let _b1 = subscribers.admit("bob").unwrap();
        let refused = subscribers.admit("bob").unwrap_err();
        assert!(refused.message().contains("the hub already serves 3 subscriptions"), "{}", refused.message());
        drop(a1);
        let _b2 = subscribers.admit("bob").unwrap();
    }
}
