//! The answer read by a scanner that knows its shape: the fast path of [`super::answer`].
//!
//! At 10,000 GPUs an answer is some 33 MB of one shape, and serde_json's general reader
//! (about 430 MB/s here) alone would spend four times the reading's budget on it. This
//! scanner walks that shape directly: strings end at the next `"` found by `memchr` and are
//! borrowed from the body, label names are matched as they pass, everything else is
//! skipped after checking it is well-formed JSON. It hands the same series to the same
//! [`Sink`] as [`super::answer::read`], or declines: anything it is not sure of (an escape
//! it cannot decode, a value of an unexpected type, nesting deeper than it follows, bytes
//! that are not UTF-8) makes it give up, and the caller reads the body again with serde_json,
//! which then has the final say, error messages included. Declining is always safe; reading
//! differently from serde_json never is, and the tests hold the two to the same result.

use memchr::memchr2;

use super::answer::{Envelope, Sink};
use super::labels::{Labels, Text, fill};

/// The scanner cannot vouch for this body: read it with serde_json instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Declined;

type Step<T> = Result<T, Declined>;

/// Nesting the scanner follows in values it skips; deeper ones go to serde_json, whose own
/// limit (128) then decides.
const MAX_DEPTH: usize = 64;

/// Read `body` into `sink` as [`super::answer::read`] would, or decline. A decline may come
/// after some series were handed over: the caller starts again with a fresh sink.
pub(super) fn read<'de, S: Sink<'de>>(body: &'de [u8], sink: &mut S) -> Step<Envelope> {
    let text = std::str::from_utf8(body).map_err(|_| Declined)?;
    // A raw control byte is legal only between tokens; Prometheus writes compact JSON and
    // has none, so strings are checked for them only when the body holds any.
    let controls = body.chunks(4096).any(|chunk| chunk.iter().fold(false, |any, &b| any | (b < 0x20)));
    let mut scanner = Scanner { text, bytes: body, at: 0, controls };
    let envelope = scanner.root(sink)?;
    scanner.skip_whitespace();
    if scanner.at != body.len() {
        return Err(Declined);
    }
    Ok(envelope)
}

struct Scanner<'de> {
    text: &'de str,
    bytes: &'de [u8],
    at: usize,
    controls: bool,
}

impl<'de> Scanner<'de> {
    // ---- the answer's shape, as `answer.rs` reads it -------------------------------------

    fn root<S: Sink<'de>>(&mut self, sink: &mut S) -> Step<Envelope> {
        let mut envelope = Envelope::default();
        self.object(|s, key| {
            match key.as_str() {
                "status" => envelope.status = Some(s.string()?.0.into_owned()),
                "errorType" => envelope.error_type = s.optional_string()?,
                "error" => envelope.error = s.optional_string()?,
                "warnings" | "infos" => s.strings_into(&mut envelope.warnings)?,
                "data" => s.data(sink, &mut envelope)?,
                _ => s.skip_value(MAX_DEPTH)?,
            }
            Ok(())
        })?;
        Ok(envelope)
    }

    fn data<S: Sink<'de>>(&mut self, sink: &mut S, envelope: &mut Envelope) -> Step<()> {
        self.object(|s, key| {
            match key.as_str() {
                "resultType" => envelope.result_type = Some(s.string()?.0.into_owned()),
                "result" => s.array(|s| {
                    s.series(sink)?;
                    envelope.series += 1;
                    Ok(())
                })?,
                _ => s.skip_value(MAX_DEPTH)?,
            }
            Ok(())
        })
    }

    fn series<S: Sink<'de>>(&mut self, sink: &mut S) -> Step<()> {
        // Filled in place and lent to the sink: a `Labels` is some 400 bytes.
        let mut labels = Labels::default();
        if !self.controls {
            let start = self.at;
            if let Some(value) = self.compact_series(&mut labels) {
                sink.series(&labels, Some(value));
                return Ok(());
            }
            self.at = start;
            labels = Labels::default();
        }
        let mut seen_metric = false;
        let mut value = None;
        self.object(|s, key| {
            match key.as_str() {
                "metric" => {
                    // A repeated `metric` replaces the first, as serde's reader has it.
                    if std::mem::replace(&mut seen_metric, true) {
                        labels = Labels::default();
                    }
                    s.labels(&mut labels)?;
                }
                "value" => value = Some(s.sample()?),
                _ => s.skip_value(MAX_DEPTH)?,
            }
            Ok(())
        })?;
        sink.series(&labels, value);
        Ok(())
    }

    /// A series exactly as Prometheus writes one, `{"metric":{"k":"v",…},"value":[T,"v"]}`:
    /// no whitespace, no escapes, every label a string, nothing else in the object. Read in
    /// one pass with no general token handling (most of the answer is this); `None` for
    /// anything else, and the general walk then reads the series again from its start, so
    /// whatever this path does not vouch for it leaves alone.
    fn compact_series(&mut self, labels: &mut Labels<'de>) -> Option<Text<'de>> {
        self.skip_whitespace();
        self.eat(br#"{"metric":{"#)?;
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
        } else {
            loop {
                let key = self.plain_string()?;
                self.eat(b":")?;
                let value = self.plain_string()?;
                if let Some(slot) = labels.slot(key) {
                    fill(slot, Text(value.into()));
                }
                let next = *self.bytes.get(self.at)?;
                self.at += 1;
                match next {
                    b',' => {}
                    b'}' => break,
                    _ => return None,
                }
            }
        }
        self.eat(br#","value":["#)?;
        self.number().ok()?;
        self.eat(b",")?;
        let value = self.plain_string()?;
        self.eat(b"]}")?;
        Some(Text(value.into()))
    }

    /// `"…"` starting right here, without escapes (those go to [`Self::string`]).
    fn plain_string(&mut self) -> Option<&'de str> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let end = start + quote_or_backslash(&self.bytes[start..])?;
        if self.bytes[end] != b'"' {
            return None;
        }
        let text = self.text.get(start..end)?;
        self.at = end + 1;
        Some(text)
    }

    /// Exactly `bytes`, here.
    fn eat(&mut self, bytes: &[u8]) -> Option<()> {
        if !self.bytes[self.at..].starts_with(bytes) {
            return None;
        }
        self.at += bytes.len();
        Some(())
    }

    fn labels(&mut self, labels: &mut Labels<'de>) -> Step<()> {
        self.object(|s, key| {
            match labels.slot(key.as_str()) {
                Some(slot) => fill(slot, s.string()?),
                None => s.skip_value(MAX_DEPTH)?,
            }
            Ok(())
        })
    }

    /// `[time, "value"]`: exactly two elements, the time any value (serde's `IgnoredAny`).
    fn sample(&mut self) -> Step<Text<'de>> {
        self.expect(b'[')?;
        self.skip_value(MAX_DEPTH)?;
        self.expect(b',')?;
        let value = self.string()?;
        self.expect(b']')?;
        Ok(value)
    }

    fn optional_string(&mut self) -> Step<Option<String>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Ok(None);
        }
        Ok(Some(self.string()?.0.into_owned()))
    }

    /// `null` or a list of strings, appended to `into`.
    fn strings_into(&mut self, into: &mut Vec<String>) -> Step<()> {
        if self.peek()? == b'n' {
            return self.literal(b"null");
        }
        self.array(|s| {
            into.push(s.string()?.0.into_owned());
            Ok(())
        })
    }

    // ---- JSON ------------------------------------------------------------------------------

    fn skip_whitespace(&mut self) {
        // One comparison in the usual case: every token's first byte is above a space.
        while let Some(&b) = self.bytes.get(self.at) {
            if b > b' ' || !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return;
            }
            self.at += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    fn peek(&mut self) -> Step<u8> {
        self.skip_whitespace();
        self.bytes.get(self.at).copied().ok_or(Declined)
    }

    fn expect(&mut self, byte: u8) -> Step<()> {
        if self.peek()? != byte {
            return Err(Declined);
        }
        self.at += 1;
        Ok(())
    }

    /// `{ "key": value, … }`, `each` reading every value after its key.
    fn object(&mut self, mut each: impl FnMut(&mut Self, Text<'de>) -> Step<()>) -> Step<()> {
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            each(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Declined),
            }
        }
    }

    /// `[ value, … ]`, `each` reading every element.
    fn array(&mut self, mut each: impl FnMut(&mut Self) -> Step<()>) -> Step<()> {
        self.expect(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Ok(());
        }
        loop {
            each(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Declined),
            }
        }
    }

    /// A string, borrowed from the body unless it has escapes.
    fn string(&mut self) -> Step<Text<'de>> {
        self.expect(b'"')?;
        let start = self.at;
        let end = start + quote_or_backslash(&self.bytes[start..]).ok_or(Declined)?;
        if self.bytes[end] == b'\\' {
            return self.escaped(start);
        }
        let raw = self.text.get(start..end).ok_or(Declined)?;
        if self.controls && raw.bytes().any(|b| b < 0x20) {
            return Err(Declined);
        }
        self.at = end + 1;
        Ok(Text(raw.into()))
    }

    /// The rest of a string with escapes from `start` (just after its opening quote):
    /// decoded by serde_json, which checks every escape.
    fn escaped(&mut self, start: usize) -> Step<Text<'de>> {
        let mut at = start;
        let end = loop {
            let next = at + memchr2(b'"', b'\\', &self.bytes[at..]).ok_or(Declined)?;
            if self.bytes[next] == b'"' {
                break next;
            }
            // The escaped byte cannot end the string; `\uXXXX`'s digits need no care.
            at = next + 2;
            if at > self.bytes.len() {
                return Err(Declined);
            }
        };
        let quoted = self.text.get(start - 1..=end).ok_or(Declined)?;
        let decoded: String = serde_json::from_str(quoted).map_err(|_| Declined)?;
        self.at = end + 1;
        Ok(Text(decoded.into()))
    }

    fn literal(&mut self, word: &[u8]) -> Step<()> {
        if !self.bytes[self.at..].starts_with(word) {
            return Err(Declined);
        }
        self.at += word.len();
        Ok(())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, checked, not converted.
    fn number(&mut self) -> Step<()> {
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        match self.bytes.get(self.at) {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Declined),
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Ok(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Step<()> {
        let from = self.at;
        self.digits();
        if self.at == from { Err(Declined) } else { Ok(()) }
    }

    /// Any one value, checked and dropped (serde's `IgnoredAny`).
    fn skip_value(&mut self, depth: usize) -> Step<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' if depth > 0 => self.object(|s, _| s.skip_value(depth - 1)),
            b'[' if depth > 0 => self.array(|s| s.skip_value(depth - 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(Declined),
        }
    }
}

/// The first `"` or `\\` in `bytes`. Sixteen bytes at a time in two registers, found with
/// one branch: an answer's strings are mostly under 16 bytes, where `memchr`'s set-up costs
/// more than the search and a loop's exit is mispredicted.
#[inline(always)]
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte of `word` that is `"` or `\\`. A borrow can set bits above a
    // true match, never below one, so the lowest set bit is exact.
    let special = |word: u64| {
        let equal = |byte: u8| {
            let x = word ^ (ONES * u64::from(byte));
            x.wrapping_sub(ONES) & !x & HIGHS
        };
        equal(b'"') | equal(b'\\')
    };
    let word = |at: usize| {
        let mut eight = [0; 8];
        eight.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(eight)
    };
    let mut at = 0;
    while at + 16 <= bytes.len() {
        let found = (u128::from(special(word(at + 8))) << 64) | u128::from(special(word(at)));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 16;
        if at >= 64 {
            // A long string: `memchr`'s vector search pays from here.
            return memchr2(b'"', b'\\', &bytes[at..]).map(|i| at + i);
        }
    }
    bytes[at..].iter().position(|&b| b == b'"' || b == b'\\').map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every series as the sink saw it.
    #[derive(Debug, Default, PartialEq)]
    struct Collect(Vec<(Labels<'static>, Option<String>)>);

    impl<'de> Sink<'de> for Collect {
        fn series(&mut self, labels: &Labels<'de>, value: Option<Text<'de>>) {
            self.0.push((owned(labels), value.map(|v| v.0.into_owned())));
        }
    }

    fn owned(l: &Labels<'_>) -> Labels<'static> {
        let o = |t: &Option<Text<'_>>| t.as_ref().map(|t| Text(t.0.to_string().into()));
        Labels {
            keys: l.keys,
            name: o(&l.name),
            hosts: std::array::from_fn(|i| o(&l.hosts[i])),
            index: o(&l.index),
            uuid: o(&l.uuid),
            product: o(&l.product),
            part: o(&l.part),
            pod: o(&l.pod),
            namespace: o(&l.namespace),
            exported_pod: o(&l.exported_pod),
            exported_namespace: o(&l.exported_namespace),
            job: o(&l.job),
            mig: o(&l.mig),
        }
    }

    /// What each reader makes of `body`: the envelope's parts and the series, or that it
    /// failed (serde) / declined (the scanner).
    /// One reader's result: the envelope as text, and the series.
    type Read = Option<(String, Collect)>;

    fn both(body: &[u8]) -> (Read, Read) {
        let view = |e: Envelope| format!("{:?}", e);
        let mut fast = Collect::default();
        let fast = read(body, &mut fast).ok().map(|e| (view(e), fast));
        let mut slow = Collect::default();
        let slow = super::super::answer::read(body, &mut slow).ok().map(|e| (view(e), slow));
        (fast, slow)
    }

    /// Where the scanner reads, it reads as serde_json does; where serde_json refuses, it
    /// never accepts.
    fn agree(body: &[u8]) {
        if let (Some(fast), slow) = both(body) {
            assert_eq!(Some(fast), slow, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn a_prometheus_answer_reads_as_serde_reads_it_and_borrows() {
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":"dgx01","device":"nvidia0","extra":{"a":[1,2.5e-3,true,null]}},"value":[1700000000.5,"85"]},
            {"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","pod":""},"value":[1700000000,"NaN"],"histogram":{}},
            {"metric":{}}, {"value":[-0.0,"1"],"metric":{"gpu":"1"},"metric":{"gpu":"2"}}
        ]},"warnings":["w1"],"infos":null,"errorType":null}"#;
        let (fast, slow) = both(body);
        assert!(fast.is_some(), "the scanner reads a plain answer");
        assert_eq!(fast, slow);
        let (envelope, series) = fast.unwrap();
        assert!(envelope.contains("series: 4"), "{envelope}");
        assert_eq!(series.0[0].0.hosts[0].as_ref().map(Text::as_str), Some("dgx01"));
        assert_eq!(series.0[3].0.index.as_ref().map(Text::as_str), Some("2"), "the last `metric` wins, as in serde");
        // Borrowed, not copied.
        struct Borrowed(bool);
        impl<'de> Sink<'de> for Borrowed {
            fn series(&mut self, labels: &Labels<'de>, _: Option<Text<'de>>) {
                self.0 &= labels.name.as_ref().is_none_or(|n| matches!(n.0, std::borrow::Cow::Borrowed(_)));
            }
        }
        let mut borrowed = Borrowed(true);
        read(body, &mut borrowed).unwrap();
        assert!(borrowed.0);
    }

    #[test]
    fn escapes_are_decoded_as_serde_decodes_them() {
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"pod":"a\u002db\\\"c\"","namespace":"\ud83d\ude80ml","gpu":"\u0033"},"value":[1,"2"]}]}}"#;
        let (fast, slow) = both(body);
        assert!(fast.is_some(), "escapes are read, not declined");
        assert_eq!(fast, slow);
        let (_, series) = fast.unwrap();
        assert_eq!(series.0[0].0.pod.as_ref().map(Text::as_str), Some("a-b\\\"c\""));
        assert_eq!(series.0[0].0.namespace.as_ref().map(Text::as_str), Some("🚀ml"));
    }

    #[test]
    fn what_serde_refuses_the_scanner_declines() {
        for body in [
            &br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"gpu":0}}]}}"#[..],
            br#"{"status":"success","data":{"result":[{"value":[1,"2",3]}]}}"#,
            br#"{"status":"success","data":{"result":[{"value":[1]}]}}"#,
            br#"{"status":"success","data":{"result":[],}}"#,
            br#"{"status":"success","data":{"result":[01]}}"#,
            br#"{"status":"success","x":1.}"#,
            br#"{"status":"success","x":-}"#,
            br#"{"status":"success","x":tru}"#,
            br#"{"status":"success","x":"a\qb"}"#,
            br#"{"status":"success","data":{"result":[{"metric":{"pod":"a\ud800"}}]}}"#,
            b"{\"status\":\"success\",\"x\":\"a\tb\"}",
            br#"{"status":null}"#,
            br#"{"status":"success"} x"#,
            br#"{"status":"success""#,
            b"{\"status\":\"\xff\"}",
            b"",
            b"<html>",
        ] {
            let (fast, slow) = both(body);
            assert!(slow.is_none(), "serde refuses {:?}", String::from_utf8_lossy(body));
            assert!(fast.is_none(), "the scanner declines {:?}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn string_ends_are_found_at_every_offset_and_length() {
        for len in 0..100 {
            for at in 0..len {
                for special in [b'"', b'\\'] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    // A later special byte never hides the first.
                    if at + 1 < len {
                        bytes[len - 1] = b'"';
                    }
                    assert_eq!(quote_or_backslash(&bytes), Some(at), "len {len} at {at}");
                }
            }
            assert_eq!(quote_or_backslash(&vec![b'"' + 1; len]), None);
            assert_eq!(quote_or_backslash(&vec![0xff; len]), None);
        }
    }

    #[test]
    fn deep_nesting_is_left_to_serde() {
        let deep = format!(r#"{{"status":"success","x":{}1{}}}"#, "[".repeat(100), "]".repeat(100));
        let (fast, slow) = both(deep.as_bytes());
        assert!(fast.is_none());
        assert!(slow.is_some(), "serde reads 100 levels");
    }

    fn label_name() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("__name__".to_string()),
            Just("Hostname".to_string()),
            Just("instance".to_string()),
            Just("gpu".to_string()),
            Just("UUID".to_string()),
            Just("pod".to_string()),
            Just("hpc_job".to_string()),
            Just("GPU_I_ID".to_string()),
            "[a-zA-Z_]{1,8}",
        ]
    }

    /// Text as JSON writes it: plain, with escapes, or with characters beyond ASCII.
    fn json_string() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9.:-]{0,12}".prop_map(|s| format!("\"{s}\"")),
            "\\PC{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            "[a-z]{0,3}".prop_map(|s| format!("\"{s}\\u00e9\\n\\\"\"")),
        ]
    }

    fn json_value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            json_string(),
            Just("null".to_string()),
            Just("true".to_string()),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| f.to_string()),
            any::<i64>().prop_map(|i| i.to_string()),
        ];
        leaf.prop_recursive(3, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((json_string(), inner), 0..3).prop_map(|v| format!(
                    "{{{}}}",
                    v.into_iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(",")
                )),
            ]
        })
    }

    fn series() -> impl Strategy<Value = String> {
        let label = (label_name(), prop_oneof![4 => json_string(), 1 => json_value()])
            .prop_map(|(k, v)| format!("{}:{v}", serde_json::to_string(&k).unwrap()));
        (
            prop::collection::vec(label, 0..6),
            prop_oneof![json_string(), json_value()],
            any::<bool>(),
            prop::option::of(json_value()),
        )
            .prop_map(|(labels, value, value_first, extra)| {
                let metric = format!(r#""metric":{{{}}}"#, labels.join(","));
                let value = format!(r#""value":[1700000000.25,{value}]"#);
                let mut fields = if value_first { vec![value, metric] } else { vec![metric, value] };
                fields.extend(extra.map(|e| format!(r#""histogram":{e}"#)));
                format!("{{{}}}", fields.join(","))
            })
    }

    fn answer() -> impl Strategy<Value = String> {
        (prop::collection::vec(series(), 0..5), any::<bool>(), prop::option::of(json_value())).prop_map(
            |(series, spaced, extra)| {
                let sep = if spaced { ",\n  " } else { "," };
                let extra = extra.map(|e| format!(r#","stats":{e}"#)).unwrap_or_default();
                format!(
                    r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]{extra}}},"warnings":["w"]}}"#,
                    series.join(sep)
                )
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Generated answers: the scanner reads every one serde reads, and reads it the same.
        #[test]
        fn generated_answers_read_the_same(body in answer()) {
            let (fast, slow) = both(body.as_bytes());
            prop_assert_eq!(fast, slow, "{}", body);
        }

        /// Any answer cut or with one byte changed: the scanner never reads it differently.
        #[test]
        fn damaged_answers_never_read_differently(body in answer(), at in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<bool>()) {
            let mut bytes = body.into_bytes();
            let i = at.index(bytes.len());
            if cut { bytes.truncate(i) } else { bytes[i] = byte }
            agree(&bytes);
        }
    }
}
