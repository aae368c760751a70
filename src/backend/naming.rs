//! Names a submission makes up, shared by the kinds whose API refuses a second object of the
//! same name (a Kubernetes Job, a dstack run, a SkyPilot cluster): a fresh suffix per submit
//! lets the same spec go in twice, and a preview shows a placeholder in its place.

/// Characters in a suffix: 36⁵, about 60 million names, so two submits of one spec in the
/// same namespace, project or server meet only by a rare chance (and the server then says so).
pub const SUFFIX_LEN: usize = 5;

/// The suffix a preview or an offline export shows where a submit draws one.
pub const PLACEHOLDER_SUFFIX: &str = "xxxxx";

/// Five characters of `[0-9a-z]` (`x7k2p`), drawn afresh per call: lower-case letters and
/// digits fit every kind's naming rule (DNS-1123 labels, dstack run names, SkyPilot cluster
/// names).
pub fn run_suffix() -> String {
    (0..SUFFIX_LEN).map(|_| char::from_digit(fastrand::u32(..36), 36).unwrap_or('0')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suffix_is_five_lower_case_letters_or_digits_and_new_each_time() {
        let drawn: std::collections::HashSet<String> = (0..200).map(|_| run_suffix()).collect();
        for s in &drawn {
            assert_eq!(s.len(), SUFFIX_LEN, "{s}");
            assert!(s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{s}");
        }
        // 200 draws from 60 million: a repeat would mean the draw is not random.
        assert_eq!(drawn.len(), 200);
        assert_eq!(PLACEHOLDER_SUFFIX.len(), SUFFIX_LEN);
    }
}
