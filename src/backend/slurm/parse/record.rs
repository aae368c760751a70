//! `lenient_record!`: a JSON object read into a struct that names only the fields it uses.
//!
//! What `#[derive(Deserialize)] #[serde(default)]` would give, with two differences that
//! matter for throughput and tolerance:
//!
//! * keys are matched as raw bytes (`deserialize_bytes`), so serde_json does not validate
//!   and convert every key of a 150-key Slurm record to `&str` first;
//! * a repeated key overwrites the earlier value instead of failing the whole document.
//!
//! Unknown keys are skipped with `IgnoredAny` (nothing is built); missing fields keep their
//! `Default`. Every field type is expected to be lenient itself (see `flex`).

/// Define a record struct and its `Deserialize`. Each field names its JSON key:
/// `name: LStr<'a> = b"name",`. The struct may have one lifetime, for borrowed strings.
macro_rules! lenient_record {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident<$lt:lifetime> {
            $( $(#[$fattr:meta])* $field:ident : $ty:ty = $key:literal ),+ $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Default)]
        $vis struct $name<$lt> {
            $( $(#[$fattr])* $field: $ty, )+
        }
        $crate::backend::slurm::parse::record::lenient_record!(@impl [impl<'de: $lt, $lt>] [$name<$lt>] [$name<$lt>]
            $( $field = $key ),+);
    };
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fattr:meta])* $field:ident : $ty:ty = $key:literal ),+ $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Default)]
        $vis struct $name {
            $( $(#[$fattr])* $field: $ty, )+
        }
        $crate::backend::slurm::parse::record::lenient_record!(@impl [impl<'de>] [$name] [$name] $( $field = $key ),+);
    };
    (@impl [$($impl_head:tt)*] [$self_ty:ty] [$value_ty:ty] $( $field:ident = $key:literal ),+) => {
        const _: () = {
            use ::serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

            #[allow(non_camel_case_types)]
            enum Field {
                $( $field, )+
                Other,
            }

            struct FieldVisitor;

            impl Visitor<'_> for FieldVisitor {
                type Value = Field;
                fn expecting(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                    f.write_str("a key")
                }
                fn visit_bytes<E: ::serde::de::Error>(self, v: &[u8]) -> Result<Field, E> {
                    Ok(match v {
                        $( $key => Field::$field, )+
                        _ => Field::Other,
                    })
                }
                fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<Field, E> {
                    self.visit_bytes(v.as_bytes())
                }
            }

            impl<'de> Deserialize<'de> for Field {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
                    d.deserialize_bytes(FieldVisitor)
                }
            }

            struct RecordVisitor<'x, T>(::std::marker::PhantomData<(&'x (), fn() -> T)>);

            $($impl_head)* Visitor<'de> for RecordVisitor<'de, $self_ty> {
                type Value = $value_ty;
                fn expecting(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$value_ty, A::Error> {
                    let mut rec = <$value_ty>::default();
                    while let Some(key) = map.next_key::<Field>()? {
                        match key {
                            $( Field::$field => rec.$field = map.next_value()?, )+
                            Field::Other => {
                                map.next_value::<IgnoredAny>()?;
                            }
                        }
                    }
                    Ok(rec)
                }
                $crate::backend::slurm::parse::flex::ignore_shapes!('de, $value_ty = <$value_ty>::default(); scalars, seq);
            }

            $($impl_head)* Deserialize<'de> for $self_ty {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    d.deserialize_map(RecordVisitor::<'de, $self_ty>(::std::marker::PhantomData))
                }
            }
        };
    };
}
pub(crate) use lenient_record;

#[cfg(test)]
mod tests {
    use super::super::flex::{Flex, LStr};

    lenient_record! {
        struct Sample<'a> {
            name: LStr<'a> = b"name",
            count: Flex = b"count",
            kind: LStr<'a> = b"type",
        }
    }

    #[test]
    fn names_only_what_it_uses() {
        let s: Sample = serde_json::from_str(r#"{"x": [1, {"y": 2}], "name": "n", "type": "t", "count": 3}"#).unwrap();
        assert_eq!((s.name.as_str(), s.kind.as_str(), s.count), ("n", "t", Flex::Int(3)));
        let s: Sample = serde_json::from_str(r#"{"name": "a", "name": "b"}"#).unwrap();
        assert_eq!(s.name.as_str(), "b", "a repeated key overwrites");
        let mut de = serde_json::Deserializer::from_reader(&br#"{"name": "streamed", "other": "x"}"#[..]);
        let s = <Sample as serde::Deserialize>::deserialize(&mut de).unwrap();
        assert_eq!(s.name.as_str(), "streamed");
        let s: Sample = serde_json::from_str("{}").unwrap();
        assert_eq!(s.name.0, None);
    }
}
