//! The `/` filter's text of every row, kept in one place: each row's haystack (`cluster/id
//! name user …`) laid end to end in one buffer, with a 64-bit mask per row of the characters
//! it holds.
//!
//! One buffer instead of a string per row: building 100,000 rows costs no allocation per
//! row, and a pass over them reads memory in order. The masks let a filter skip, without
//! reading the text, every row lacking a character its words need (see [`needs`]).

use nucleo::Utf32Str;

/// The mask bit of rows holding a non-ASCII character. nucleo folds case and accents of
/// such characters (`K`, the Kelvin sign, is found by `k`), so a mask cannot rule them
/// out: rows with this bit are always matched in full.
pub const WIDE: u64 = 1 << 63;

/// The bit of an ASCII byte, case folded: `a`–`z` bits 0–25, `0`–`9` bits 26–35, every
/// other byte one of bits 36–62 (shared, so a hit there is only a hint).
const fn bit(b: u8) -> u64 {
    let b = b.to_ascii_lowercase();
    1 << match b {
        b'a'..=b'z' => b - b'a',
        b'0'..=b'9' => 26 + b - b'0',
        _ => 36 + b % 27,
    }
}

/// Bits that stand for one character only (a letter, whatever its case, or a digit).
pub fn is_exact_bit(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

/// What a row must hold for `needle` to be found in it: the bits of its ASCII characters.
/// Necessary, not sufficient: order, case and repeats are nucleo's to check. A non-ASCII
/// character of the needle asks nothing (it may match a folded form).
pub fn needs(needle: Utf32Str<'_>) -> u64 {
    needle.chars().filter(char::is_ascii).fold(0, |m, c| m | bit(c as u8))
}

/// Where one row's text lies: in the ASCII buffer, or (when [`WIDE`]) among the characters.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
}

/// Every row's haystack, in row order.
#[derive(Debug, Default)]
pub struct Haystacks {
    /// The text of every ASCII row, end to end.
    ascii: Vec<u8>,
    /// Rows with non-ASCII text, as nucleo keeps them: the first character of each grapheme.
    wide: Vec<char>,
    spans: Vec<Span>,
    masks: Vec<u64>,
}

impl Haystacks {
    pub fn with_capacity(rows: usize, bytes: usize) -> Haystacks {
        Haystacks {
            ascii: Vec::with_capacity(bytes),
            wide: Vec::new(),
            spans: Vec::with_capacity(rows),
            masks: Vec::with_capacity(rows),
        }
    }

    /// Add the next row's text.
    pub fn push(&mut self, text: &str) {
        let span = |start: usize, end: usize| match (u32::try_from(start), u32::try_from(end - start)) {
            (Ok(start), Ok(len)) if start.checked_add(len).is_some() => Span { start, len },
            // Past 4 GiB of text a row is found by nothing rather than by wrong text.
            _ => Span { start: 0, len: 0 },
        };
        if text.is_ascii() {
            let start = self.ascii.len();
            self.ascii.extend_from_slice(text.as_bytes());
            self.spans.push(span(start, self.ascii.len()));
            self.masks.push(text.bytes().fold(0, |m, b| m | bit(b)));
        } else {
            let start = self.wide.len();
            self.wide.extend(nucleo::chars::graphemes(text));
            self.spans.push(span(start, self.wide.len()));
            self.masks.push(WIDE);
        }
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The characters [`bit`] found in row `row` ([`WIDE`] for a non-ASCII row).
    pub fn mask(&self, row: u32) -> u64 {
        self.masks[row as usize]
    }

    /// Row `row`'s text, as nucleo matches it.
    pub fn get(&self, row: u32) -> Utf32Str<'_> {
        let Span { start, len } = self.spans[row as usize];
        let range = start as usize..(start + len) as usize;
        if self.masks[row as usize] & WIDE != 0 {
            Utf32Str::Unicode(&self.wide[range])
        } else {
            Utf32Str::Ascii(&self.ascii[range])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_as_written() {
        let mut h = Haystacks::default();
        h.push("fd22/1 train alice");
        h.push("fd22/2 Müller");
        h.push("");
        assert_eq!(h.len(), 3);
        assert_eq!(h.get(0), Utf32Str::Ascii(b"fd22/1 train alice"));
        let wide: Vec<char> = "fd22/2 Müller".chars().collect();
        assert_eq!(h.get(1), Utf32Str::Unicode(&wide));
        assert!(h.get(2).is_empty());
        assert_eq!(h.mask(1) & WIDE, WIDE);
        assert_eq!(h.mask(0) & WIDE, 0);
    }

    #[test]
    fn a_mask_holds_what_a_needle_needs_case_folded() {
        let mut h = Haystacks::default();
        h.push("Train-LLM 42");
        let m = h.mask(0);
        let needs = |s: &str| needs(Utf32Str::Ascii(s.as_bytes()));
        for needle in ["train", "TRAIN", "llm", "4", "-", " ", "t2"] {
            assert_eq!(m & needs(needle), needs(needle), "{needle}");
        }
        for needle in ["x", "5", "trainz"] {
            assert_ne!(m & needs(needle), needs(needle), "{needle}");
        }
        let wide: Vec<char> = "üx".chars().collect();
        assert_eq!(super::needs(Utf32Str::Unicode(&wide)), needs("x"), "a non-ASCII needle character asks nothing");
    }
}
