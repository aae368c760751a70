//! Job exit codes in every family's shape.
//!
//! Families A and B (and `{set, infinite, number}` in B) carry the raw wait status of the
//! batch script (`exit 3` → 768, killed by SIGTERM → 15); C and D carry
//! `{status: [...], return_code, signal: {id, name}}` (sacct on 23.02 has the same object
//! with plain values).

use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::flex::{Flex, LBool, NO_VAL, StrList, ignore_shapes};
use super::record::lenient_record;
use crate::model::ExitStatus;

/// Decode a POSIX wait status as Slurm stores it: `768` → code 3; `15` → signal 15 (code
/// 0, as Slurm prints `0:15`); `0` → code 0. A stopped status (`0x7f` in the low byte)
/// reports the stop signal.
pub fn decode_wait_status(raw: i64) -> ExitStatus {
    let raw = raw as u32 as i64;
    let low = raw & 0x7f;
    if low == 0 {
        ExitStatus { code: ((raw >> 8) & 0xff) as i32, signal: None }
    } else if low == 0x7f {
        ExitStatus { code: 0, signal: Some(((raw >> 8) & 0xff) as i32) }
    } else {
        ExitStatus { code: 0, signal: Some(low as i32) }
    }
}

/// An `exit_code` value as read, before it is known whether the job has finished.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum ExitField {
    #[default]
    Absent,
    /// A raw wait status (families A and B).
    Wait(i64),
    /// `{status, return_code, signal}` (families C and D, sacct).
    Parts { return_code: Option<i64>, signal: Option<i64>, signaled: bool },
}

impl ExitField {
    /// The exit status this field describes, when it describes one.
    pub fn to_exit(self) -> Option<ExitStatus> {
        match self {
            ExitField::Absent => None,
            ExitField::Wait(v) if v < 0 || v >= NO_VAL as i64 => None,
            ExitField::Wait(v) => Some(decode_wait_status(v)),
            ExitField::Parts { return_code, signal, signaled } => {
                let code = return_code.and_then(|c| i32::try_from(c).ok());
                match signal.filter(|s| *s > 0 && *s < 256) {
                    Some(sig) => Some(ExitStatus { code: code.unwrap_or(0), signal: Some(sig as i32) }),
                    None if signaled && code.is_none() => None,
                    None => code.map(|code| ExitStatus { code, signal: None }),
                }
            }
        }
    }
}

enum ExitKey {
    Set,
    Infinite,
    Number,
    Status,
    ReturnCode,
    Signal,
    Other,
}

impl<'de> Deserialize<'de> for ExitKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ExitKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                self.visit_bytes(v.as_bytes())
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<ExitKey, E> {
                Ok(match v {
                    b"set" => ExitKey::Set,
                    b"infinite" => ExitKey::Infinite,
                    b"number" => ExitKey::Number,
                    b"status" => ExitKey::Status,
                    b"return_code" => ExitKey::ReturnCode,
                    b"signal" => ExitKey::Signal,
                    _ => ExitKey::Other,
                })
            }
        }
        d.deserialize_bytes(V)
    }
}

lenient_record! {
    /// `signal` as an object: `{id, name}`, the id a flex number.
    struct SignalObject {
        id: Flex = b"id",
    }
}

/// `signal`: `{id, name}` (id a flex number), or a plain number.
#[derive(Default)]
struct SignalField(Option<i64>);

impl<'de> Deserialize<'de> for SignalField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SignalField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a signal")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SignalField, E> {
                Ok(SignalField(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SignalField, E> {
                Ok(SignalField(i64::try_from(v).ok()))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<SignalField, D::Error> {
                SignalField::deserialize(d)
            }
            ignore_shapes!('de, SignalField = SignalField(None); bools, strings, nulls, seq);
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<SignalField, E> {
                Ok(SignalField(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SignalField, A::Error> {
                let signal = SignalObject::deserialize(MapAccessDeserializer::new(map))?;
                Ok(SignalField(signal.id.as_i64()))
            }
        }
        d.deserialize_any(V)
    }
}

struct ExitVisitor;

impl<'de> Visitor<'de> for ExitVisitor {
    type Value = ExitField;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an exit code")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ExitField, E> {
        Ok(ExitField::Wait(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ExitField, E> {
        Ok(i64::try_from(v).map_or(ExitField::Absent, ExitField::Wait))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ExitField, E> {
        Ok(Flex::Float(v).as_i64().map_or(ExitField::Absent, ExitField::Wait))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ExitField, E> {
        Ok(v.trim().parse::<i64>().map_or(ExitField::Absent, ExitField::Wait))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<ExitField, D::Error> {
        ExitField::deserialize(d)
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<ExitField, E> {
        Ok(ExitField::Absent)
    }
    ignore_shapes!('de, ExitField = ExitField::Absent; bools, nulls, seq);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExitField, A::Error> {
        let (mut set, mut infinite, mut number, mut flex_seen) = (None, false, Flex::Unset, false);
        let (mut return_code, mut signal, mut signaled, mut parts_seen) = (None, None, false, false);
        while let Some(key) = map.next_key::<ExitKey>()? {
            match key {
                ExitKey::Set => {
                    flex_seen = true;
                    set = Some(map.next_value::<LBool>()?.0);
                }
                ExitKey::Infinite => {
                    flex_seen = true;
                    infinite = map.next_value::<LBool>()?.0;
                }
                ExitKey::Number => {
                    flex_seen = true;
                    number = map.next_value::<Flex>()?;
                }
                ExitKey::Status => {
                    parts_seen = true;
                    let status = map.next_value::<StrList>()?;
                    signaled = status.iter().any(|s| s.eq_ignore_ascii_case("SIGNALED"));
                }
                ExitKey::ReturnCode => {
                    parts_seen = true;
                    return_code = map.next_value::<Flex>()?.as_i64();
                }
                ExitKey::Signal => {
                    parts_seen = true;
                    signal = map.next_value::<SignalField>()?.0;
                }
                ExitKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(if parts_seen {
            ExitField::Parts { return_code, signal, signaled }
        } else if flex_seen && !infinite && set != Some(false) {
            number.as_i64().map_or(ExitField::Absent, ExitField::Wait)
        } else {
            ExitField::Absent
        })
    }
}

impl<'de> Deserialize<'de> for ExitField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ExitVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(json: &str) -> Option<ExitStatus> {
        serde_json::from_str::<ExitField>(json).unwrap().to_exit()
    }

    #[test]
    fn wait_statuses() {
        assert_eq!(decode_wait_status(0), ExitStatus { code: 0, signal: None });
        assert_eq!(decode_wait_status(768), ExitStatus { code: 3, signal: None });
        assert_eq!(decode_wait_status(256), ExitStatus { code: 1, signal: None });
        assert_eq!(decode_wait_status(15), ExitStatus { code: 0, signal: Some(15) });
        assert_eq!(decode_wait_status(9), ExitStatus { code: 0, signal: Some(9) });
        assert_eq!(decode_wait_status(0x80 | 11), ExitStatus { code: 0, signal: Some(11) });
        assert_eq!(decode_wait_status(0x137f), ExitStatus { code: 0, signal: Some(19) });
        assert_eq!(decode_wait_status(-1), ExitStatus { code: 0, signal: Some(255) });
    }

    #[test]
    fn every_family_shape() {
        assert_eq!(exit("768"), Some(ExitStatus { code: 3, signal: None }));
        assert_eq!(exit("15"), Some(ExitStatus { code: 0, signal: Some(15) }));
        assert_eq!(
            exit(r#"{"set": true, "infinite": false, "number": 256}"#),
            Some(ExitStatus { code: 1, signal: None })
        );
        assert_eq!(exit(r#"{"set": false, "infinite": false, "number": 0}"#), None);
        assert_eq!(
            exit(
                r#"{"status": ["SIGNALED"], "return_code": {"set": false, "infinite": false, "number": 0},
                    "signal": {"id": {"set": true, "infinite": false, "number": 15}, "name": "TERM"}}"#
            ),
            Some(ExitStatus { code: 0, signal: Some(15) })
        );
        assert_eq!(
            exit(
                r#"{"status": ["ERROR"], "return_code": {"set": true, "infinite": false, "number": 1},
                    "signal": {"id": {"set": false, "infinite": false, "number": 0}, "name": ""}}"#
            ),
            Some(ExitStatus { code: 1, signal: None })
        );
        assert_eq!(exit(r#"{"status": "SUCCESS", "return_code": 0}"#), Some(ExitStatus { code: 0, signal: None }));
        assert_eq!(exit(r#"{"status": ["PENDING"]}"#), None);
        assert_eq!(exit("null"), None);
        assert_eq!(exit("4294967294"), None);
        assert_eq!(exit(r#""bogus""#), None);
        assert_eq!(exit("[1]"), None);
    }
}
