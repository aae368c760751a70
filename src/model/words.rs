//! Small pieces of English shared by every message that counts things.

/// `1 node`, `3 nodes`, `0 nodes`: a count with its noun in the right number.
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1u32, "node", "nodes"), "1 node");
        assert_eq!(counted(0u32, "node", "nodes"), "0 nodes");
        assert_eq!(counted(3u64, "pod", "pods"), "3 pods");
    }
}
