//! The `/` filter: nucleo's pattern syntax compiled once per keystroke, matched against each
//! row's precomputed haystack, split across threads for large tables.

use nucleo::Matcher;
use nucleo::pattern::{Atom, AtomKind, CaseMatching, Normalization};

/// A compiled filter: nucleo's pattern syntax (words must all match; `'exact`, `^prefix`,
/// `suffix$`, `!not`; smart case), answered yes or no.
///
/// Rows are filtered, not ranked (the table keeps its sort), so a fuzzy word only has to be
/// found, not scored: it is matched with nucleo's linear greedy matcher, which accepts
/// exactly the haystacks the optimal (scoring) matcher accepts, at a fraction of the cost.
pub struct Fuzzy {
    atoms: Vec<(Atom, bool, bool)>,
}

impl Fuzzy {
    pub fn new(text: &str) -> Option<Fuzzy> {
        let atoms: Vec<(Atom, bool, bool)> = words(text)
            .filter_map(|word| {
                // Smart case and normalisation, decided here so that we know them.
                let ignore_case = !word.chars().any(char::is_uppercase);
                let normalize = word.is_ascii();
                let atom = Atom::parse(
                    word,
                    if ignore_case { CaseMatching::Ignore } else { CaseMatching::Respect },
                    if normalize { Normalization::Smart } else { Normalization::Never },
                );
                (!atom.needle_text().is_empty()).then_some((atom, ignore_case, normalize))
            })
            .collect();
        (!atoms.is_empty()).then_some(Fuzzy { atoms })
    }

    pub fn matches(&self, hay: &nucleo::Utf32String, matcher: &mut Matcher) -> bool {
        let hay = hay.slice(..);
        self.atoms.iter().all(|(atom, ignore_case, normalize)| {
            matcher.config.ignore_case = *ignore_case;
            matcher.config.normalize = *normalize;
            let needle = atom.needle_text();
            let found = match atom.kind {
                AtomKind::Fuzzy => matcher.fuzzy_match_greedy(hay, needle),
                AtomKind::Substring => matcher.substring_match(hay, needle),
                AtomKind::Prefix => matcher.prefix_match(hay, needle),
                AtomKind::Postfix => matcher.postfix_match(hay, needle),
                AtomKind::Exact => matcher.exact_match(hay, needle),
                // A kind added by a later nucleo: its own scoring decides.
                _ => return atom.score(hay, matcher).is_some(),
            }
            .is_some();
            found != atom.negative
        })
    }
}

/// The words of a pattern: split at spaces not escaped with `\`, as nucleo does.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut escaped = false;
    text.split(move |c| {
        let split = c == ' ' && !escaped;
        escaped = c == '\\';
        split
    })
    .filter(|w| !w.is_empty())
}

/// Below this many rows a fuzzy pass runs on the calling thread.
const PARALLEL_MIN: usize = 20_000;

/// The rows of `rows` that `keep` accepts, in order. A fuzzy pass over many rows is split
/// across threads (one `Matcher` each, kept in `matchers` between passes): 100,000 jobs are
/// re-filtered within a keystroke.
pub fn filter_rows<F>(rows: &[u32], matchers: &mut Vec<Matcher>, fuzzy: bool, keep: F) -> Vec<u32>
where
    F: Fn(u32, &mut Matcher) -> bool + Sync,
{
    let threads = if fuzzy && rows.len() >= PARALLEL_MIN {
        std::thread::available_parallelism().map_or(1, |n| n.get()).min(8)
    } else {
        1
    };
    while matchers.len() < threads {
        matchers.push(Matcher::new(nucleo::Config::DEFAULT));
    }
    if threads == 1 {
        let m = &mut matchers[0];
        return rows.iter().copied().filter(|&r| keep(r, m)).collect();
    }
    let chunk = rows.len().div_ceil(threads);
    let keep = &keep;
    std::thread::scope(|scope| {
        let parts: Vec<_> = rows
            .chunks(chunk)
            .zip(matchers.iter_mut())
            .map(|(part, m)| scope.spawn(move || part.iter().copied().filter(|&r| keep(r, m)).collect::<Vec<u32>>()))
            .collect();
        let mut out = Vec::with_capacity(rows.len());
        for part in parts {
            match part.join() {
                Ok(v) => out.extend(v),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// Typing `new` after `old` can only narrow the matches (so only the rows that matched `old`
/// need checking): `new` extends `old` and neither uses negation or escapes.
pub fn narrows(old: &str, new: &str) -> bool {
    !old.is_empty() && new.starts_with(old) && !new.contains(['!', '\\'])
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn fuzzy_syntax() {
        let mut m = Matcher::new(nucleo::Config::DEFAULT);
        let hay = |s: &str| nucleo::Utf32String::from(s);
        let yes = |p: &str, h: &str, m: &mut Matcher| Fuzzy::new(p).unwrap().matches(&hay(h), m);
        assert!(yes("trl", "fd22/1 train-llm alice", &mut m));
        assert!(!yes("ltr", "fd22/1 train-llm alice", &mut m));
        assert!(yes("train alice", "fd22/1 train-llm alice", &mut m));
        assert!(!yes("train !alice", "fd22/1 train-llm alice", &mut m));
        assert!(yes("^fd22", "fd22/1 x", &mut m));
        assert!(!yes("^22", "fd22/1 x", &mut m));
        assert!(yes("'n-l", "train-llm", &mut m));
        assert!(!yes("'nl", "train-llm", &mut m));
        assert!(yes("TRAIN", "TRAIN-llm", &mut m));
        assert!(!yes("Train", "train-llm", &mut m), "an upper-case letter makes the word case-sensitive");
        assert!(yes("muller", "Müller", &mut m));
        assert!(Fuzzy::new("  ").is_none());
    }

    #[test]
    fn narrowing_rules() {
        assert!(narrows("gp", "gpu"));
        assert!(narrows("gpu", "gpu a"));
        assert!(!narrows("", "g"));
        assert!(!narrows("gpu", "gp"));
        assert!(!narrows("!gp", "!gpu"));
    }
}
