//! Tickets for questions the event loop answers later (a log read, a preview, a plan).
//!
//! Only the newest question of a kind matters: asking again makes every earlier answer
//! stale, as a single-job queue does, so an answer that comes late (a slow link, a read of a
//! log no longer shown) can never overwrite a newer one.

/// The one open question of a kind, with what was asked (`T`), and the counter its tickets
/// come from. The counter is never reset, so a ticket is never issued twice: keep one
/// `Latest` for as long as answers may come back, even when what they fill is replaced.
#[derive(Debug, Clone)]
pub struct Latest<T> {
    issued: u64,
    open: Option<(u64, T)>,
}

impl<T> Default for Latest<T> {
    fn default() -> Self {
        Self { issued: 0, open: None }
    }
}

impl<T> Latest<T> {
    /// Ask anew: the ticket the answer must carry. Every earlier ticket is stale from now on.
    pub fn issue(&mut self, asked: T) -> u64 {
        self.issued += 1;
        self.open = Some((self.issued, asked));
        self.issued
    }

    /// An answer carrying `ticket` came back: what was asked with it, if it is the open
    /// question (which it closes), else `None` (stale, or already answered).
    pub fn answer(&mut self, ticket: u64) -> Option<T> {
        match &self.open {
            Some((open, _)) if *open == ticket => self.open.take().map(|(_, asked)| asked),
            _ => None,
        }
    }

    /// No answer is wanted any more: whatever comes back is stale.
    pub fn forget(&mut self) {
        self.open = None;
    }

    /// A question is open (asked, not answered, not forgotten).
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// The ticket of the open question.
    pub fn ticket(&self) -> Option<u64> {
        self.open.as_ref().map(|(ticket, _)| *ticket)
    }

    /// What the open question asked.
    pub fn asked(&self) -> Option<&T> {
        self.open.as_ref().map(|(_, asked)| asked)
    }
}

#[cfg(test)]
mod tests {
    use super::Latest;

    #[test]
    fn only_the_newest_ticket_is_answered() {
        let mut latest = Latest::default();
        let old = latest.issue("tail");
        let new = latest.issue("on from 24");
        assert_ne!(old, new);
        assert_eq!(latest.answer(old), None, "asking again made the first answer stale");
        assert_eq!(latest.ticket(), Some(new), "a stale answer leaves the open question open");
        assert_eq!(latest.answer(new), Some("on from 24"));
        assert!(!latest.is_open());
    }

    #[test]
    fn an_answer_counts_once() {
        let mut latest = Latest::default();
        let ticket = latest.issue(());
        assert_eq!(latest.answer(ticket), Some(()));
        assert_eq!(latest.answer(ticket), None);
    }

    #[test]
    fn a_forgotten_question_takes_no_answer_and_its_ticket_is_not_reused() {
        let mut latest = Latest::default();
        let forgotten = latest.issue(1);
        latest.forget();
        assert!(!latest.is_open() && latest.asked().is_none());
        assert_eq!(latest.answer(forgotten), None);
        let next = latest.issue(2);
        assert!(next > forgotten, "tickets keep counting after a forget");
        assert_eq!(latest.asked(), Some(&2));
        assert_eq!(latest.answer(forgotten), None);
        assert_eq!(latest.answer(next), Some(2));
    }

    #[test]
    fn nothing_is_open_before_the_first_question() {
        let mut latest: Latest<()> = Latest::default();
        assert!(!latest.is_open() && latest.ticket().is_none());
        assert_eq!(latest.answer(0), None, "ticket 0 is never issued");
    }
}
