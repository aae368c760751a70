//! Slurm hostlist expressions (`gpu[01-04,07],login1`) to node names.
//!
//! Bracketed expressions go through the `hostlist-parser` crate. Before it runs, the size
//! of the expansion is bounded from the expression itself, so a hostile or corrupt
//! `n[0-99999999999]` cannot allocate without limit; such an expression, and one the crate
//! rejects (names with characters other than letters, digits, `-` and `.`), is kept as its
//! comma-separated pieces, unexpanded.

/// Most names one expression may expand to; larger ones stay unexpanded.
pub const MAX_EXPANDED: u64 = 100_000;

/// Expand a hostlist expression into node names, in Slurm's order. Blank, `(null)`,
/// `None` and `N/A` give an empty list.
pub fn expand_hostlist(expr: &str) -> Vec<String> {
    let expr = expr.trim();
    if expr.is_empty() || matches!(expr, "(null)" | "None" | "N/A" | "n/a") {
        return Vec::new();
    }
    if !expr.contains('[') {
        return expr.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    }
    match expansion_bound(expr) {
        Some(n) if n <= MAX_EXPANDED => {}
        _ => return top_level_pieces(expr),
    }
    match hostlist_parser::parse(expr) {
        Ok(names) => names,
        Err(_) => top_level_pieces(expr),
    }
}

/// Split at commas outside brackets, without expanding.
fn top_level_pieces(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in expr.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                push_piece(&mut out, &expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    push_piece(&mut out, &expr[start..]);
    out
}

fn push_piece(out: &mut Vec<String>, piece: &str) {
    let piece = piece.trim();
    if !piece.is_empty() {
        out.push(piece.to_string());
    }
}

/// An upper bound on the number of names `expr` expands to; `None` when it overflows or
/// the brackets do not balance.
fn expansion_bound(expr: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut host: u64 = 1;
    let mut in_bracket = false;
    let mut group = String::new();
    for c in expr.chars() {
        match c {
            '[' if !in_bracket => {
                in_bracket = true;
                group.clear();
            }
            '[' => return None,
            ']' if in_bracket => {
                in_bracket = false;
                host = host.checked_mul(group_size(&group)?)?;
            }
            ']' => return None,
            ',' if !in_bracket => {
                total = total.checked_add(host)?;
                host = 1;
            }
            _ if in_bracket => group.push(c),
            _ => {}
        }
    }
    if in_bracket {
        return None;
    }
    total.checked_add(host)
}

/// Names in one bracket group such as `01-04,07`.
fn group_size(group: &str) -> Option<u64> {
    let mut n: u64 = 0;
    for item in group.split(',') {
        let item = item.trim();
        let size = match item.split_once('-') {
            Some((a, b)) => {
                let a: u64 = a.trim().parse().ok()?;
                let b: u64 = b.trim().parse().ok()?;
                a.abs_diff(b).checked_add(1)?
            }
            None => 1,
        };
        n = n.checked_add(size)?;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_ranges_lists_and_plain_names() {
        assert_eq!(expand_hostlist("cn[052-055]"), vec!["cn052", "cn053", "cn054", "cn055"]);
        assert_eq!(expand_hostlist("gpu[1-2],login1"), vec!["gpu1", "gpu2", "login1"]);
        assert_eq!(expand_hostlist("cn[001-002,010]"), vec!["cn001", "cn002", "cn010"]);
        assert_eq!(expand_hostlist("ia1"), vec!["ia1"]);
        assert_eq!(expand_hostlist("a,b"), vec!["a", "b"]);
        assert_eq!(expand_hostlist(""), Vec::<String>::new());
        assert_eq!(expand_hostlist("(null)"), Vec::<String>::new());
    }

    #[test]
    fn huge_or_unparseable_expressions_stay_unexpanded() {
        assert_eq!(expand_hostlist("n[0-99999999999]"), vec!["n[0-99999999999]"]);
        assert_eq!(expand_hostlist("n[0-999][0-999],x"), vec!["n[0-999][0-999]", "x"]);
        assert_eq!(expand_hostlist("gpu_[1-2],b"), vec!["gpu_[1-2]", "b"]);
        assert_eq!(expand_hostlist("n[1-"), vec!["n[1-"]);
    }

    #[test]
    fn bound_counts_products_and_sums() {
        assert_eq!(expansion_bound("a[1-3]b[1-2],c"), Some(7));
        assert_eq!(expansion_bound("a[1-3"), None);
        assert_eq!(expansion_bound("a[18446744073709551615-0]"), None);
    }
}
