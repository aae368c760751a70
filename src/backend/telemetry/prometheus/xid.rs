//! XID errors in words: the driver's error codes an operator meets most, from NVIDIA's XID
//! catalogue. DCGM reports only the last XID a GPU raised, so one code is all there is.

/// Known XIDs, sorted by code. Codes that are usually an application's fault say so: the
/// GPU itself is fine and a node drain would be the wrong answer.
const KNOWN: &[(u32, &str)] = &[
    (13, "graphics engine exception (usually the application's fault)"),
    (31, "GPU memory page fault (usually the application's fault)"),
    (32, "invalid or corrupted push buffer stream"),
    (38, "driver firmware error"),
    (43, "GPU stopped processing (usually the application's fault)"),
    (45, "preemptive cleanup after earlier errors"),
    (48, "double-bit ECC error"),
    (61, "internal micro-controller breakpoint"),
    (62, "internal micro-controller halt"),
    (63, "ECC page retirement or row remapping recorded"),
    (64, "ECC page retirement or row remapping failed"),
    (68, "video processor exception"),
    (69, "graphics engine class error"),
    (74, "NVLink error"),
    (79, "GPU has fallen off the bus"),
    (92, "high single-bit ECC error rate"),
    (94, "contained ECC error"),
    (95, "uncontained ECC error: the GPU needs a reset"),
    (109, "context switch timeout"),
    (119, "GSP RPC timeout"),
    (120, "GSP error"),
    (140, "unrecovered ECC error"),
];

/// `XID 79: GPU has fallen off the bus`; an unknown code is named as such.
pub(super) fn describe(xid: u32) -> String {
    match KNOWN.binary_search_by_key(&xid, |(code, _)| *code) {
        Ok(i) => format!("XID {xid}: {}", KNOWN[i].1),
        Err(_) => format!("XID {xid}: see NVIDIA's XID catalogue"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes_read_in_words_and_the_table_is_sorted() {
        assert_eq!(describe(79), "XID 79: GPU has fallen off the bus");
        assert_eq!(describe(48), "XID 48: double-bit ECC error");
        assert_eq!(describe(74), "XID 74: NVLink error");
        assert_eq!(describe(13), "XID 13: graphics engine exception (usually the application's fault)");
        assert_eq!(describe(999), "XID 999: see NVIDIA's XID catalogue");
        assert!(KNOWN.windows(2).all(|w| w[0].0 < w[1].0), "binary search needs the codes in order");
    }
}
