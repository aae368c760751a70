//! A poller's gate: a flag that says whether this process may poll a cluster now (a hub
//! replica holding the cluster's Lease, `serve::lease`). Without a gate a cluster is always
//! polled; with one, polling waits while the flag is false, and a refresh under way when it
//! turns false is dropped unrecorded, so a replica that lost the cluster stops at once.

use std::future::Future;

use tokio::sync::watch;

/// Whether a cluster may be polled now, and every change after.
pub type Gate = watch::Receiver<bool>;

/// A gate that never opens: a cluster that no Lease covers, in a fleet where polling is gated.
pub fn closed() -> Gate {
    watch::channel(false).1
}

/// Waits until the gate is open. `false` when it can never open again (its keeper is gone).
pub async fn opened(gate: &mut Option<Gate>) -> bool {
    match gate {
        None => true,
        Some(rx) => rx.wait_for(|open| *open).await.is_ok(),
    }
}

/// `work` while the gate stays open; `None` when it closed (or its keeper went) first.
pub async fn while_open<T>(gate: &mut Option<Gate>, work: impl Future<Output = T>) -> Option<T> {
    match gate {
        None => Some(work.await),
        Some(rx) => {
            tokio::select! {
                biased;
                _ = rx.wait_for(|open| !*open) => None,
                out = work => Some(out),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn no_gate_always_polls() {
        assert!(opened(&mut None).await);
        assert_eq!(while_open(&mut None, async { 7 }).await, Some(7));
    }

    #[tokio::test]
    async fn a_closed_gate_waits_until_it_opens() {
        let (tx, rx) = watch::channel(false);
        let mut gate = Some(rx);
        let waiter = tokio::spawn(async move { opened(&mut gate).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "still waiting while closed");
        tx.send_replace(true);
        assert!(tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap());
    }

    #[tokio::test]
    async fn a_gate_whose_keeper_is_gone_never_opens() {
        assert!(!opened(&mut Some(closed())).await);
        assert_eq!(while_open(&mut Some(closed()), async { 7 }).await, None);
    }

    #[tokio::test]
    async fn work_under_way_is_dropped_when_the_gate_closes() {
        let (tx, rx) = watch::channel(true);
        let mut gate = Some(rx);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            tx.send_replace(false);
            // Keep the keeper alive: the gate closed, it did not go away.
            tokio::time::sleep(Duration::from_secs(3600)).await;
        });
        let work = async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            "finished"
        };
        let out = tokio::time::timeout(Duration::from_secs(5), while_open(&mut gate, work)).await;
        assert_eq!(out, Ok(None));
    }
}
