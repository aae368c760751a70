//! `meta`: which Slurm release wrote a document.
//!
//! `meta.slurm` (23.11+) or `meta.Slurm` (older) holds `release` (`"22.05.8"`; some releases
//! wrote an object `{major, minor, micro}` there) and `version` (`{major, minor, micro}` as
//! integers before 23.11, as strings since).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

use super::flex::{Flex, Lenient, ignore_shapes};
use super::record::lenient_record;

lenient_record! {
    pub(crate) struct Meta<'a> {
        slurm: Lenient<MetaSlurm<'a>> = b"slurm",
        slurm_old: Lenient<MetaSlurm<'a>> = b"Slurm",
    }
}

impl Meta<'_> {
    /// The release string (`22.05.8`), from whichever spelling the document used.
    pub(crate) fn release(&self) -> Option<String> {
        self.slurm.0.release().or_else(|| self.slurm_old.0.release())
    }
}

lenient_record! {
    struct MetaSlurm<'a> {
        release: Release<'a> = b"release",
        version: Lenient<Version> = b"version",
    }
}

impl MetaSlurm<'_> {
    fn release(&self) -> Option<String> {
        match &self.release {
            Release::Text(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            Release::Version(v) => v.to_release(),
            _ => None,
        }
        .or_else(|| self.version.0.to_release())
    }
}

lenient_record! {
    /// `{major, minor, micro}`, integers or numeric strings.
    struct Version {
        major: Flex = b"major",
        minor: Flex = b"minor",
        micro: Flex = b"micro",
    }
}

impl Version {
    fn to_release(&self) -> Option<String> {
        let major = self.major.as_u64()?;
        let minor = self.minor.as_u64().unwrap_or(0);
        Some(match self.micro.as_u64() {
            Some(micro) => format!("{major}.{minor:02}.{micro}"),
            None => format!("{major}.{minor:02}"),
        })
    }
}

/// `release`: a string, or an object read as a [`Version`].
#[derive(Debug, Default)]
enum Release<'a> {
    #[default]
    Absent,
    Text(Cow<'a, str>),
    Version(Version),
}

impl<'de: 'a, 'a> Deserialize<'de> for Release<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Release<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a release string or version object")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Release<'a>, E> {
                Ok(Release::Text(Cow::Borrowed(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Release<'a>, A::Error> {
                Version::deserialize(MapAccessDeserializer::new(map)).map(Release::Version)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Release<'a>, D::Error> {
                Release::deserialize(d)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Release<'a>, E> {
                Ok(Release::Text(Cow::Owned(v.to_owned())))
            }
            ignore_shapes!('de, Release<'a> = Release::Absent; bools, numbers, nulls, seq);
        }
        d.deserialize_any(V(PhantomData))
    }
}
