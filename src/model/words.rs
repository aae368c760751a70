//! Small pieces of English shared by every message that counts things.

/// `1 node`, `3 nodes`, `0 nodes`: a count with its noun in the right number.
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The verb that agrees with a count: `1 node takes`, `2 nodes take`.
pub fn verb<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// `one`, `2`, `10`: a small count as the words of a sentence say it ("waits for one more").
pub fn how_many(n: u64) -> String {
    if n == 1 { "one".into() } else { n.to_string() }
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1u32, "node", "nodes"), "1 node");
        assert_eq!(counted(0u32, "node", "nodes"), "0 nodes");
        assert_eq!(counted(3u64, "pod", "pods"), "3 pods");
        assert_eq!((verb(1, "takes", "take"), verb(0, "takes", "take")), ("takes", "take"));
        assert_eq!((how_many(1), how_many(2)), ("one".to_string(), "2".to_string()));
    }

    #[test]
    fn lists_join_with_and() {
        assert_eq!(and_list(&[]), "");
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b"]), "a and b");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
    }
}
