//! Toasts: messages in the corner that go by themselves, except errors and batch summaries, which wait for `esc`.

use chrono::{DateTime, Duration, Utc};

use crate::fleet::BatchOutcome;
use crate::tui::app::App;

/// A message in the corner that goes away by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toast {
    pub text: String,
    pub error: bool,
    pub until: DateTime<Utc>,
    /// Kept until dismissed (`esc`): a batch's summary and every failed action, which an
    /// operator must not miss by looking away.
    pub sticky: bool,
}

/// How long toasts stay.
const TOAST_OK: Duration = Duration::seconds(4);
const TOAST_ERROR: Duration = Duration::seconds(10);

/// Passing toasts kept at once (the oldest go first); error toasts are never pushed out by
/// later ones, up to [`TOAST_HARD_MAX`], which only bounds memory.
const TOAST_MAX: usize = 5;
const TOAST_HARD_MAX: usize = 50;

impl App {
    pub(in crate::tui::app) fn toast(&mut self, text: String, error: bool) {
        self.push_toast(text, error, false);
    }

    /// One toast for a finished batch: its summary, kept until dismissed when the batch
    /// had more than one action or anything failed.
    pub(in crate::tui::app) fn on_batch(&mut self, batch: &BatchOutcome) {
        let failed = batch.failed() > 0;
        let sticky = failed || batch.outcomes.len() > 1;
        let mut text = batch.summary();
        if sticky {
            text.push_str(" (esc dismisses)");
        }
        self.push_toast(text, failed, sticky);
    }

    pub(in crate::tui::app) fn push_toast(&mut self, text: String, error: bool, sticky: bool) {
        let until = self.now + if error { TOAST_ERROR } else { TOAST_OK };
        self.toasts.push(Toast { text, error, until, sticky });
        // Too many: the oldest passing, non-sticky one goes; errors and summaries stay.
        while self.toasts.len() > TOAST_MAX {
            match self.toasts.iter().position(|t| !t.error && !t.sticky) {
                Some(i) => drop(self.toasts.remove(i)),
                None if self.toasts.len() > TOAST_HARD_MAX => drop(self.toasts.remove(0)),
                None => break,
            }
        }
    }

    /// `esc` on a screen with toasts to dismiss: they go first.
    pub(in crate::tui::app) fn dismiss_toasts(&mut self) -> bool {
        let n = self.toasts.len();
        self.toasts.retain(|t| !t.sticky && !t.error);
        self.toasts.len() != n
    }
}
