//! The `/` filter: nucleo's pattern syntax compiled once per keystroke, matched against each
//! row's precomputed haystack ([`Haystacks`]), split across threads for large tables.

use nucleo::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo::{Matcher, Utf32Str};

use crate::tui::app::haystack::{self, Haystacks, WIDE};

/// A compiled filter: nucleo's pattern syntax (words must all match; `'exact`, `^prefix`,
/// `suffix$`, `!not`; smart case), answered yes or no.
///
/// Rows are filtered, not ranked (the table keeps its sort), so a fuzzy word only has to be
/// found, not scored: it is matched with nucleo's linear greedy matcher, which accepts
/// exactly the haystacks the optimal (scoring) matcher accepts, at a fraction of the cost.
pub struct Fuzzy {
    atoms: Vec<(Atom, bool, bool)>,
    /// What a row's [`haystack::needs`] mask must hold for every positive word to be found.
    needs: u64,
    /// Set when every word is one letter or digit, any case, found anywhere (fuzzy or
    /// substring, negated or not), as the first keystroke of a filter is: then an ASCII
    /// row's mask alone answers, and these bits must be absent (the negated words).
    by_mask: Option<u64>,
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
        if atoms.is_empty() {
            return None;
        }
        let needs =
            atoms.iter().filter(|(a, ..)| !a.negative).fold(0, |m, (a, ..)| m | haystack::needs(a.needle_text()));
        let single = |(a, ignore_case, _): &(Atom, bool, bool)| {
            let mut chars = a.needle_text().chars();
            *ignore_case
                && matches!(a.kind, AtomKind::Fuzzy | AtomKind::Substring)
                && chars.next().is_some_and(haystack::is_exact_bit)
                && chars.next().is_none()
        };
        let by_mask = atoms.iter().all(single).then(|| {
            atoms.iter().filter(|(a, ..)| a.negative).fold(0, |m, (a, ..)| m | haystack::needs(a.needle_text()))
        });
        Some(Fuzzy { atoms, needs, by_mask })
    }

    /// Whether a pass must read the rows' text (not only their masks): worth threads.
    pub fn reads_text(&self) -> bool {
        self.by_mask.is_none()
    }

    /// Whether row `row` of `hays` matches: its mask first, then, unless that decided,
    /// its text.
    pub fn matches_row(&self, hays: &Haystacks, row: u32, matcher: &mut Matcher) -> bool {
        let mask = hays.mask(row);
        if mask & WIDE == 0 {
            if mask & self.needs != self.needs {
                return false;
            }
            if let Some(absent) = self.by_mask {
                return mask & absent == 0;
            }
        }
        self.matches(hays.get(row), matcher)
    }

    pub fn matches(&self, hay: Utf32Str<'_>, matcher: &mut Matcher) -> bool {
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

/// The rows of `rows` that `keep` accepts, in order. A pass that reads the rows' text
/// (`reads_text`) over many rows is split across threads (one `Matcher` each, kept in
/// `matchers` between passes): 100,000 jobs are re-filtered within a keystroke.
pub fn filter_rows<F>(rows: &[u32], matchers: &mut Vec<Matcher>, reads_text: bool, keep: F) -> Vec<u32>
where
    F: Fn(u32, &mut Matcher) -> bool + Sync,
{
    let threads = if reads_text && rows.len() >= PARALLEL_MIN {
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
        let yes = |p: &str, h: &str, m: &mut Matcher| {
            let hay = nucleo::Utf32String::from(h);
            let whole = Fuzzy::new(p).unwrap().matches(hay.slice(..), m);
            let mut hays = Haystacks::default();
            hays.push(h);
            assert_eq!(Fuzzy::new(p).unwrap().matches_row(&hays, 0, m), whole, "{p:?} in {h:?}: the masks disagree");
            whole
        };
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
        assert!(yes("k", "\u{212a}elvin", &mut m), "the Kelvin sign folds to k: a wide row is read in full");
        assert!(yes("f", "x Finetune", &mut m));
        assert!(!yes("f", "x train", &mut m));
        assert!(yes("!f", "x train", &mut m));
        assert!(!yes("!f", "x fine", &mut m));
        assert!(!yes("F", "x fine", &mut m), "upper case is read, not masked");
        assert!(yes("f t", "fine tune", &mut m));
        assert!(Fuzzy::new("  ").is_none());
    }

    proptest::proptest! {
        /// The masks never change an answer: a row is kept exactly when nucleo finds it.
        #[test]
        fn masks_agree_with_nucleo(
            hay in "[a-cA-C0-2 /_é\u{212a}-]{0,12}",
            pattern in "[!^'$]?[a-cA-C0-2/_é-]{1,3}( [!^'$]?[a-cA-C0-2 k]{1,2})?",
        ) {
            let mut m = Matcher::new(nucleo::Config::DEFAULT);
            if let Some(f) = Fuzzy::new(&pattern) {
                let whole = f.matches(nucleo::Utf32String::from(hay.as_str()).slice(..), &mut m);
                let mut hays = Haystacks::default();
                hays.push("padding row");
                hays.push(&hay);
                proptest::prop_assert_eq!(f.matches_row(&hays, 1, &mut m), whole);
            }
        }
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
