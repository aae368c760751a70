//! What keymap and theme files share beyond [`crate::tomlfile`]: the document with its
//! entries in file order, value descriptions, and the "did you mean" hint.

use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

use crate::tomlfile::pos as tomlpos;

pub(crate) use crate::tomlfile::inherit::{Parent, cycle_text, identity_of_builtin, identity_of_file, resolve_parent};
pub(crate) use crate::tomlfile::pos::Problem;

/// A parsed document whose entries keep their positions.
pub(crate) struct Doc<'t> {
    pub text: &'t str,
    root: DeTable<'t>,
}

/// One `key = value` (or `[table]`) of a table, in file order.
pub(crate) struct Item<'a, 't> {
    pub key: &'a str,
    pub line: usize,
    pub value: &'a Spanned<DeValue<'t>>,
}

impl<'t> Doc<'t> {
    /// Parse `text`; a syntax error is described with its line and the key written there.
    pub fn parse(text: &'t str) -> Result<Doc<'t>, Problem> {
        match DeTable::parse(text) {
            Ok(root) => Ok(Doc { text, root: root.into_inner() }),
            Err(err) => {
                let found = tomlpos::describe(text, &err, &|_, _| None);
                Err(Problem { line: found.line, key: found.key, message: found.message })
            }
        }
    }

    pub fn root(&self) -> &DeTable<'t> {
        &self.root
    }

    /// The entries of `table` in the order they are written.
    pub fn items<'a>(&self, table: &'a DeTable<'t>) -> Vec<Item<'a, 't>> {
        let mut items: Vec<(usize, Item<'a, 't>)> = table
            .iter()
            .map(|(key, value): (&'a Spanned<DeString<'t>>, &'a Spanned<DeValue<'t>>)| {
                let start = key.span().start;
                (start, Item { key: key.get_ref().as_ref(), line: self.line_of(start), value })
            })
            .collect();
        items.sort_by_key(|(start, _)| *start);
        items.into_iter().map(|(_, item)| item).collect()
    }

    pub fn line_of(&self, offset: usize) -> usize {
        tomlpos::line_of(self.text, offset)
    }
}

/// `"string"`, `integer`, `table` … for "found …" in messages.
pub(crate) fn describe_value(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(s) => format!("string {s:?}"),
        DeValue::Integer(i) => format!("integer {}", i.as_str()),
        DeValue::Float(f) => format!("float {}", f.as_str()),
        DeValue::Boolean(b) => format!("boolean {b}"),
        DeValue::Datetime(_) => "a date".into(),
        DeValue::Array(_) => "an array".into(),
        DeValue::Table(_) => "a table".into(),
    }
}

/// The candidate closest to `word`, when it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edit distance counting insertions, deletions, substitutions and swaps of neighbours
/// (optimal string alignment), case-insensitive.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// ` (did you mean "cancel"?)` or nothing.
pub(crate) fn suggestion<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    did_you_mean(word, candidates).map(|c| format!(" (did you mean {c:?}?)")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("cancel", "cancel"), 0);
        assert_eq!(edit_distance("cancle", "cancel"), 1);
        assert_eq!(edit_distance("job", "jobs"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions() {
        let names = ["cancel", "confirm", "quit"];
        assert_eq!(did_you_mean("cancle", names), Some("cancel"));
        assert_eq!(did_you_mean("Quit", names), Some("quit"));
        assert_eq!(did_you_mean("xyzzy", names), None);
        assert_eq!(suggestion("qit", names), " (did you mean \"quit\"?)");
    }
}
