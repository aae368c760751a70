//! The settings of the binary's allocator (mimalloc; `src/main.rs` says why it is the one).
//!
//! mimalloc keeps freed memory for its purge delay (1 s in its v3) before handing it back to
//! the system, so that memory asked for again soon costs no page faults. A refresh of a large
//! queue frees tens of megabytes within that second — the job vector's smaller buffers as it
//! grows, the parsers' scratch — and kept, they sit on top of the snapshot: a one-shot
//! `flightdeck jobs --output json` at 50,000 jobs peaked at 124 MB with them (issue #29).
//! Handed back at once, the peak is what is live. The cost is page faults where the same
//! memory is soon wanted again; `cargo bench --bench telemetry` (many small strings made and
//! dropped per reading) measures it with `MIMALLOC_PURGE_DELAY` set either way.

use std::ffi::{c_int, c_long};

/// mimalloc's own variable for the delay: where a user set it, theirs stands.
pub const PURGE_DELAY_VAR: &str = "MIMALLOC_PURGE_DELAY";

/// `mi_option_purge_delay` in `mimalloc.h`'s `mi_option_t`, numbered alike in v2 and v3
/// (retired options keep their numbers). `libmimalloc-sys` names no constant for it.
const MI_OPTION_PURGE_DELAY: c_int = 15;

/// Freed memory back to the system at once (a purge delay of 0), unless
/// [`PURGE_DELAY_VAR`] says otherwise. Call once at start-up.
pub fn return_freed_memory_at_once() {
    if std::env::var_os(PURGE_DELAY_VAR).is_none() {
        set_purge_delay_ms(0);
    }
}

fn set_purge_delay_ms(ms: c_long) {
    // SAFETY: a plain store into mimalloc's option table, which it reads atomically.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) }
}

/// The purge delay mimalloc works with now, in milliseconds.
pub fn purge_delay_ms() -> c_long {
    // SAFETY: a plain read of mimalloc's option table.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The number is mimalloc's purge delay: unset, it reads v3's documented default (no
    /// neighbouring option defaults to 1000), and what is set is what mimalloc reads back.
    #[test]
    fn the_option_number_is_mimallocs_purge_delay() {
        if std::env::var_os(PURGE_DELAY_VAR).is_none() {
            assert_eq!(purge_delay_ms(), 1000);
        }
        set_purge_delay_ms(7);
        assert_eq!(purge_delay_ms(), 7);
        return_freed_memory_at_once();
        let expected = if std::env::var_os(PURGE_DELAY_VAR).is_none() { 0 } else { 7 };
        assert_eq!(purge_delay_ms(), expected);
    }
}
