//! Lenient value types shared by every JSON family.
//!
//! Each type has one hand-written visitor that accepts every JSON shape: the shape Slurm
//! writes gives the value, any other shape gives "unset" (skipping nested maps and arrays)
//! instead of an error. No `untagged` enums and no `serde_json::Value`: values are decoded
//! straight from the token stream, strings are borrowed where the input allows.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Slurm's `NO_VAL` (unset) for 32-bit fields; `INFINITE` is one more.
pub const NO_VAL: u64 = 0xffff_fffe;

/// A Slurm number: a plain integer or float, `null`, or `{set, infinite, number}`.
///
/// Numeric strings are read as numbers; booleans, other strings, arrays and objects that are
/// not `{set, infinite, number}` read as [`Flex::Unset`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Flex {
    #[default]
    Unset,
    Infinite,
    Int(i64),
    Float(f64),
}

impl Flex {
    /// The value as an integer (floats truncated); `None` when unset or infinite.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Flex::Int(i) => Some(i),
            Flex::Float(f) if f.is_finite() && f.abs() < 9.0e18 => Some(f as i64),
            _ => None,
        }
    }

    /// A non-negative value.
    pub fn as_u64(self) -> Option<u64> {
        self.as_i64().and_then(|i| u64::try_from(i).ok())
    }

    /// A non-negative 32-bit value that is not one of Slurm's `NO_VAL`/`INFINITE` sentinels
    /// (family A writes those as plain integers).
    pub fn as_u32(self) -> Option<u32> {
        self.as_u64().filter(|v| *v < NO_VAL).and_then(|v| u32::try_from(v).ok())
    }

    pub fn is_infinite(self) -> bool {
        matches!(self, Flex::Infinite)
    }

    /// A Unix timestamp; 0, negative, unset, infinite and sentinel values are `None`.
    pub fn timestamp(self) -> Option<DateTime<Utc>> {
        self.as_i64().and_then(epoch_to_utc)
    }
}

/// Seconds since the epoch to a time; 0, negative and Slurm sentinels are `None`.
pub fn epoch_to_utc(secs: i64) -> Option<DateTime<Utc>> {
    if secs <= 0 || secs >= NO_VAL as i64 {
        return None;
    }
    DateTime::from_timestamp(secs, 0)
}

fn flex_from_u64(v: u64) -> Flex {
    match i64::try_from(v) {
        Ok(i) => Flex::Int(i),
        Err(_) if v == u64::MAX => Flex::Infinite,
        Err(_) => Flex::Unset,
    }
}

fn flex_from_str(s: &str) -> Flex {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        return Flex::Int(i);
    }
    if let Ok(u) = s.parse::<u64>() {
        return flex_from_u64(u);
    }
    if s.eq_ignore_ascii_case("infinite") || s.eq_ignore_ascii_case("unlimited") {
        return Flex::Infinite;
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() => Flex::Float(f),
        _ => Flex::Unset,
    }
}

/// Visitor methods for the JSON shapes a lenient visitor has no use for. Each named group
/// yields `$default`: `bools`, `numbers`, `strings` (and bytes), `nulls`, `scalars` (all four),
/// `seq` and `map` (skipped first, element by element, without building anything).
macro_rules! ignore_shapes {
    ($de:lifetime, $value:ty = $default:expr; $($group:ident),+ $(,)?) => {
        $( $crate::backend::slurm::parse::flex::ignore_shapes!(@group $group, $de, $value, $default); )+
    };
    (@group scalars, $de:lifetime, $value:ty, $default:expr) => {
        $crate::backend::slurm::parse::flex::ignore_shapes!($de, $value = $default; bools, numbers, strings, nulls);
    };
    (@group bools, $de:lifetime, $value:ty, $default:expr) => {
        fn visit_bool<E: ::serde::de::Error>(self, _: bool) -> Result<$value, E> { Ok($default) }
    };
    (@group numbers, $de:lifetime, $value:ty, $default:expr) => {
        fn visit_i64<E: ::serde::de::Error>(self, _: i64) -> Result<$value, E> { Ok($default) }
        fn visit_u64<E: ::serde::de::Error>(self, _: u64) -> Result<$value, E> { Ok($default) }
        fn visit_f64<E: ::serde::de::Error>(self, _: f64) -> Result<$value, E> { Ok($default) }
    };
    (@group strings, $de:lifetime, $value:ty, $default:expr) => {
        fn visit_str<E: ::serde::de::Error>(self, _: &str) -> Result<$value, E> { Ok($default) }
        fn visit_bytes<E: ::serde::de::Error>(self, _: &[u8]) -> Result<$value, E> { Ok($default) }
    };
    (@group nulls, $de:lifetime, $value:ty, $default:expr) => {
        fn visit_none<E: ::serde::de::Error>(self) -> Result<$value, E> { Ok($default) }
        fn visit_unit<E: ::serde::de::Error>(self) -> Result<$value, E> { Ok($default) }
    };
    (@group seq, $de:lifetime, $value:ty, $default:expr) => {
        fn visit_seq<A: ::serde::de::SeqAccess<$de>>(self, seq: A) -> Result<$value, A::Error> {
            $crate::backend::slurm::parse::flex::drain_seq(seq)?;
            Ok($default)
        }
    };
    (@group map, $de:lifetime, $value:ty, $default:expr) => {
        fn visit_map<A: ::serde::de::MapAccess<$de>>(self, map: A) -> Result<$value, A::Error> {
            $crate::backend::slurm::parse::flex::drain_map(map)?;
            Ok($default)
        }
    };
}
pub(crate) use ignore_shapes;

/// Skip the rest of a map.
pub(crate) fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skip the rest of a sequence.
pub(crate) fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

enum FlexKey {
    Set,
    Infinite,
    Number,
    Other,
}

impl<'de> Deserialize<'de> for FlexKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = FlexKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                self.visit_bytes(v.as_bytes())
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<FlexKey, E> {
                Ok(match v {
                    b"set" => FlexKey::Set,
                    b"infinite" => FlexKey::Infinite,
                    b"number" => FlexKey::Number,
                    _ => FlexKey::Other,
                })
            }
        }
        d.deserialize_bytes(V)
    }
}

struct FlexVisitor;

impl<'de> Visitor<'de> for FlexVisitor {
    type Value = Flex;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, null or {set, infinite, number}")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Flex, E> {
        Ok(Flex::Unset)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Flex, E> {
        Ok(Flex::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Flex, E> {
        Ok(flex_from_u64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Flex, E> {
        Ok(if v.is_finite() { Flex::Float(v) } else { Flex::Unset })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Flex, E> {
        Ok(flex_from_str(v))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Flex, E> {
        Ok(Flex::Unset)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Flex, D::Error> {
        Flex::deserialize(d)
    }
    ignore_shapes!('de, Flex = Flex::Unset; nulls, seq);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Flex, A::Error> {
        let mut set = None;
        let mut infinite = false;
        let mut number = Flex::Unset;
        while let Some(key) = map.next_key::<FlexKey>()? {
            match key {
                FlexKey::Set => set = Some(map.next_value::<LBool>()?.0),
                FlexKey::Infinite => infinite = map.next_value::<LBool>()?.0,
                FlexKey::Number => number = map.next_value::<Flex>()?,
                FlexKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(if infinite {
            Flex::Infinite
        } else if set == Some(false) {
            Flex::Unset
        } else {
            number
        })
    }
}

impl<'de> Deserialize<'de> for Flex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FlexVisitor)
    }
}

/// A boolean that also reads `0`/`1` and `"true"`/`"yes"`; anything else is `false`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LBool(pub bool);

impl<'de> Deserialize<'de> for LBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LBool;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a boolean")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<LBool, E> {
                Ok(LBool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LBool, E> {
                Ok(LBool(v != 0))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LBool, E> {
                Ok(LBool(v != 0))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LBool, E> {
                Ok(LBool(v != 0.0))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LBool, E> {
                let v = v.trim();
                Ok(LBool(v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("yes") || v == "1"))
            }
            fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<LBool, E> {
                Ok(LBool(false))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LBool, D::Error> {
                LBool::deserialize(d)
            }
            ignore_shapes!('de, LBool = LBool(false); nulls, seq, map);
        }
        d.deserialize_any(V)
    }
}

/// A string, borrowed from the input where possible. Numbers read as their decimal text;
/// `null`, booleans, arrays and objects read as absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LStr<'a>(pub Option<Cow<'a, str>>);

impl<'a> LStr<'a> {
    /// The text, `""` when absent.
    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }

    /// The text when present and not blank.
    pub fn non_empty(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.trim().is_empty())
    }

    /// The text as an owned string, `""` when absent (no copy when already owned).
    pub fn into_string(self) -> String {
        self.0.map(Cow::into_owned).unwrap_or_default()
    }

    /// The text as an owned string when present and not blank.
    pub fn into_non_empty(self) -> Option<String> {
        self.0.filter(|s| !s.trim().is_empty()).map(Cow::into_owned)
    }
}

struct LStrVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for LStrVisitor<'a> {
    type Value = LStr<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<LStr<'a>, E> {
        Ok(LStr(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<LStr<'a>, E> {
        Ok(LStr(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<LStr<'a>, E> {
        Ok(LStr(Some(Cow::Owned(v))))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<LStr<'a>, E> {
        Ok(LStr(None))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<LStr<'a>, E> {
        Ok(LStr(Some(Cow::Owned(v.to_string()))))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<LStr<'a>, E> {
        Ok(LStr(Some(Cow::Owned(v.to_string()))))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<LStr<'a>, E> {
        Ok(LStr(Some(Cow::Owned(v.to_string()))))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LStr<'a>, D::Error> {
        LStr::deserialize(d)
    }
    ignore_shapes!('de, LStr<'a> = LStr(None); bools, nulls, seq, map);
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LStrVisitor(PhantomData))
    }
}

/// A list of strings: an array (non-string elements dropped), or one string as a
/// one-element list (`state: "IDLE"`). `null` and other shapes read as empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StrList<'a>(pub Vec<Cow<'a, str>>);

impl<'a> StrList<'a> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries as `&str`.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|s| s.as_ref())
    }

    /// The entries joined with `,`.
    pub fn joined(&self) -> String {
        let mut out = String::new();
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(s);
        }
        out
    }

    /// Every entry split at commas, trimmed, blanks and `(null)` dropped: for lists that older
    /// releases wrote as one comma-separated string (`features: "a,b"`).
    pub fn split_commas(&self) -> Vec<String> {
        self.iter()
            .flat_map(|s| s.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "(null)")
            .map(str::to_string)
            .collect()
    }
}

struct StrListVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for StrListVisitor<'a> {
    type Value = StrList<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or an array of strings")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<StrList<'a>, E> {
        Ok(StrList(vec![Cow::Borrowed(v)]))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<StrList<'a>, E> {
        Ok(StrList(vec![Cow::Owned(v.to_owned())]))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<StrList<'a>, E> {
        Ok(StrList(vec![Cow::Owned(v)]))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<StrList<'a>, E> {
        Ok(StrList::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<StrList<'a>, D::Error> {
        StrList::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrList<'a>, A::Error> {
        let mut out = Vec::new();
        while let Some(LStr(s)) = seq.next_element::<LStr<'a>>()? {
            if let Some(s) = s {
                out.push(s);
            }
        }
        Ok(StrList(out))
    }
    ignore_shapes!('de, StrList<'a> = StrList::default(); numbers, bools, nulls, map);
}

impl<'de: 'a, 'a> Deserialize<'de> for StrList<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrListVisitor(PhantomData))
    }
}

/// An object read into `T` (a derived record with defaults); any other shape gives
/// `T::default()`. This is what keeps a wrong-typed nested field from failing the record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lenient<T>(pub T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        MaybeObject::<T>::deserialize(d).map(|m| Lenient(m.0.unwrap_or_default()))
    }
}

/// `Some(T)` for an object, `None` (the value skipped) for any other shape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MaybeObject<T>(pub Option<T>);

struct MaybeObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for MaybeObjectVisitor<T> {
    type Value = MaybeObject<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MaybeObject<T>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(|v| MaybeObject(Some(v)))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<MaybeObject<T>, D::Error> {
        d.deserialize_any(self)
    }
    ignore_shapes!('de, MaybeObject<T> = MaybeObject(None); scalars, seq);
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MaybeObject<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MaybeObjectVisitor(PhantomData))
    }
}

/// An array of objects read into `T` each; elements that are not objects are skipped and
/// any other shape reads as empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LenientVec<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LenientVec<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = LenientVec<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of objects")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LenientVec<T>, A::Error> {
                let mut out = Vec::new();
                while let Some(MaybeObject(item)) = seq.next_element::<MaybeObject<T>>()? {
                    out.extend(item);
                }
                Ok(LenientVec(out))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LenientVec<T>, D::Error> {
                d.deserialize_any(self)
            }
            ignore_shapes!('de, LenientVec<T> = LenientVec(Vec::new()); scalars, map);
        }
        d.deserialize_any(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flex(json: &str) -> Flex {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn flex_reads_every_number_shape() {
        assert_eq!(flex("42"), Flex::Int(42));
        assert_eq!(flex("-2"), Flex::Int(-2));
        assert_eq!(flex("1.0"), Flex::Float(1.0));
        assert_eq!(flex("null"), Flex::Unset);
        assert_eq!(flex(r#"{"set": true, "infinite": false, "number": 60}"#), Flex::Int(60));
        assert_eq!(flex(r#"{"number": 60, "infinite": false, "set": true}"#), Flex::Int(60));
        assert_eq!(flex(r#"{"set": true, "infinite": false, "number": 4.0}"#), Flex::Float(4.0));
        assert_eq!(flex(r#"{"set": false, "infinite": false, "number": 0}"#), Flex::Unset);
        assert_eq!(flex(r#"{"set": false, "infinite": true, "number": 0}"#), Flex::Infinite);
        assert_eq!(flex(r#"{"set": true, "number": 7, "extra": [1, {"a": 2}]}"#), Flex::Int(7));
        assert_eq!(flex("18446744073709551615"), Flex::Infinite);
        assert_eq!(flex("18446744073709551614"), Flex::Unset);
    }

    #[test]
    fn flex_degrades_wrong_types_to_unset() {
        assert_eq!(flex("true"), Flex::Unset);
        assert_eq!(flex(r#""abc""#), Flex::Unset);
        assert_eq!(flex(r#""23""#), Flex::Int(23));
        assert_eq!(flex(r#""05""#), Flex::Int(5));
        assert_eq!(flex("[1, 2, 3]"), Flex::Unset);
        assert_eq!(flex(r#"{"a": {"b": [1]}}"#), Flex::Unset);
        assert_eq!(flex(r#"{"set": "yes", "number": "12"}"#), Flex::Int(12));
    }

    #[test]
    fn flex_accessors_respect_sentinels() {
        assert_eq!(Flex::Int(4294967294).as_u32(), None);
        assert_eq!(Flex::Int(4294967295).as_u32(), None);
        assert_eq!(Flex::Int(4294967293).as_u32(), Some(4294967293));
        assert_eq!(Flex::Int(-1).as_u64(), None);
        assert_eq!(Flex::Float(2.9).as_i64(), Some(2));
        assert_eq!(Flex::Infinite.as_i64(), None);
        assert_eq!(Flex::Int(0).timestamp(), None);
        assert_eq!(Flex::Int(1727358533).timestamp().unwrap().to_rfc3339(), "2024-09-26T13:48:53+00:00");
        assert_eq!(Flex::Int(4294967294).timestamp(), None);
    }

    #[test]
    fn strings_borrow_from_slices_and_degrade() {
        let s: LStr = serde_json::from_str(r#""abc""#).unwrap();
        assert!(matches!(s.0, Some(Cow::Borrowed("abc"))));
        let s: LStr = serde_json::from_str(r#""a\"c""#).unwrap();
        assert_eq!(s.as_str(), "a\"c");
        let s: LStr = serde_json::from_str("17").unwrap();
        assert_eq!(s.as_str(), "17");
        let s: LStr = serde_json::from_str(r#"{"x": [1]}"#).unwrap();
        assert_eq!(s, LStr(None));
        let s: LStr = serde_json::from_str("null").unwrap();
        assert_eq!(s.non_empty(), None);
    }

    #[test]
    fn string_lists_take_one_string_or_an_array() {
        let l: StrList = serde_json::from_str(r#"["IDLE", "DRAIN"]"#).unwrap();
        assert_eq!(l.joined(), "IDLE,DRAIN");
        let l: StrList = serde_json::from_str(r#""idle""#).unwrap();
        assert_eq!(l.joined(), "idle");
        let l: StrList = serde_json::from_str(r#"["a", 3, null, {"b": 1}, "c"]"#).unwrap();
        assert_eq!(l.joined(), "a,3,c");
        let l: StrList = serde_json::from_str(r#""gpu,a100, (null)""#).unwrap();
        assert_eq!(l.split_commas(), vec!["gpu", "a100"]);
        let l: StrList = serde_json::from_str("5").unwrap();
        assert!(l.is_empty());
    }

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    #[serde(default)]
    struct Pair {
        a: Flex,
        b: LBool,
    }

    #[test]
    fn lenient_objects_default_on_other_shapes() {
        let p: Lenient<Pair> = serde_json::from_str(r#"{"a": 3, "b": true, "c": "x"}"#).unwrap();
        assert_eq!(p.0, Pair { a: Flex::Int(3), b: LBool(true) });
        let p: Lenient<Pair> = serde_json::from_str(r#"[1, 2]"#).unwrap();
        assert_eq!(p.0, Pair::default());
        let p: Lenient<Pair> = serde_json::from_str(r#""x""#).unwrap();
        assert_eq!(p.0, Pair::default());
        let v: LenientVec<Pair> = serde_json::from_str(r#"[{"a": 1}, 7, "x", {"b": 1}]"#).unwrap();
        assert_eq!(v.0, vec![Pair { a: Flex::Int(1), b: LBool(false) }, Pair { a: Flex::Unset, b: LBool(true) }]);
    }
}
