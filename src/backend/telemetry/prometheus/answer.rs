//! The answer of `GET /api/v1/query`, read in one pass:
//! `{"status":"success","data":{"resultType":"vector","result":[{"metric":{…},"value":[t,"v"]}…]},"warnings":[…]}`
//! or `{"status":"error","errorType":"bad_data","error":"…"}`.
//!
//! Series are handed to a [`Sink`] as they are parsed, never collected: at 10,000 GPUs an
//! answer holds some 80,000 series, and a list of them would cost more than the reading.

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::labels::{Labels, Text};

/// Where each series goes: its labels and the sample's value as Prometheus wrote it
/// (`"85"`, `"NaN"`, `"+Inf"`), `None` where the series has no `value`. The labels are lent,
/// not given: they are some 400 bytes, and moving them per series showed in the profile.
pub(super) trait Sink<'de> {
    fn series(&mut self, labels: &Labels<'de>, value: Option<Text<'de>>);
}

/// Everything but the series.
#[derive(Debug, Default)]
pub(super) struct Envelope {
    pub status: Option<String>,
    pub error_type: Option<String>,
    pub error: Option<String>,
    pub result_type: Option<String>,
    /// `warnings` and `infos` (Prometheus 3) together.
    pub warnings: Vec<String>,
    pub series: usize,
}

/// Read `body`, feeding `sink`; an error is serde_json's (what and where).
pub(super) fn read<'de, S: Sink<'de>>(body: &'de [u8], sink: &mut S) -> Result<Envelope, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let envelope = Root { sink }.deserialize(&mut de)?;
    de.end()?;
    Ok(envelope)
}

struct Root<'s, S> {
    sink: &'s mut S,
}

impl<'de, S: Sink<'de>> DeserializeSeed<'de> for Root<'_, S> {
    type Value = Envelope;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Envelope, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: Sink<'de>> Visitor<'de> for Root<'_, S> {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Prometheus API answer (an object with `status`)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut envelope = Envelope::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match key.as_str() {
                "status" => envelope.status = Some(map.next_value::<String>()?),
                "errorType" => envelope.error_type = map.next_value::<Option<String>>()?,
                "error" => envelope.error = map.next_value::<Option<String>>()?,
                "warnings" | "infos" => {
                    envelope.warnings.extend(map.next_value::<Option<Vec<String>>>()?.unwrap_or_default())
                }
                "data" => map.next_value_seed(Data { sink: &mut *self.sink, envelope: &mut envelope })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(envelope)
    }
}

struct Data<'s, 'e, S> {
    sink: &'s mut S,
    envelope: &'e mut Envelope,
}

impl<'de, S: Sink<'de>> DeserializeSeed<'de> for Data<'_, '_, S> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: Sink<'de>> Visitor<'de> for Data<'_, '_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`data` with `resultType` and `result`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match key.as_str() {
                "resultType" => self.envelope.result_type = Some(map.next_value::<String>()?),
                "result" => self.envelope.series += map.next_value_seed(SeriesList { sink: &mut *self.sink })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct SeriesList<'s, S> {
    sink: &'s mut S,
}

impl<'de, S: Sink<'de>> DeserializeSeed<'de> for SeriesList<'_, S> {
    type Value = usize;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, S: Sink<'de>> Visitor<'de> for SeriesList<'_, S> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`result`: a list of series")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut count = 0;
        while seq.next_element_seed(Series { sink: &mut *self.sink })?.is_some() {
            count += 1;
        }
        Ok(count)
    }
}

struct Series<'s, S> {
    sink: &'s mut S,
}

impl<'de, S: Sink<'de>> DeserializeSeed<'de> for Series<'_, S> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: Sink<'de>> Visitor<'de> for Series<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series (`metric` and `value`)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut labels = None;
        let mut value = None;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match key.as_str() {
                "metric" => labels = Some(map.next_value::<Labels<'de>>()?),
                // `[unix time, "value"]`: the time is the query's, the same for every series.
                "value" => value = Some(map.next_value::<(IgnoredAny, Text<'de>)>()?.1),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        self.sink.series(&labels.unwrap_or_default(), value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Vec<(Option<String>, Option<String>)>);

    impl<'de> Sink<'de> for Collect {
        fn series(&mut self, labels: &Labels<'de>, value: Option<Text<'de>>) {
            self.0.push((labels.name.as_ref().map(|n| n.0.to_string()), value.map(|v| v.0.into_owned())));
        }
    }

    #[test]
    fn a_vector_answer_streams_its_series() {
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"value":[1700000000.5,"85"]},
            {"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE"},"value":[1700000000.5,"NaN"],"histogram":{}},
            {"metric":{}}
        ]},"warnings":["w1"],"infos":["i1"]}"#;
        let mut sink = Collect::default();
        let envelope = read(body, &mut sink).unwrap();
        assert_eq!(envelope.status.as_deref(), Some("success"));
        assert_eq!(envelope.result_type.as_deref(), Some("vector"));
        assert_eq!((envelope.series, envelope.warnings), (3, vec!["w1".to_string(), "i1".to_string()]));
        assert_eq!(sink.0[0], (Some("DCGM_FI_DEV_GPU_UTIL".into()), Some("85".into())));
        assert_eq!(sink.0[1].1.as_deref(), Some("NaN"));
        assert_eq!(sink.0[2], (None, None));
    }

    #[test]
    fn an_error_answer_keeps_its_words() {
        let body = br#"{"status":"error","errorType":"bad_data","error":"1:1: parse error: unexpected character"}"#;
        let envelope = read(body, &mut Collect::default()).unwrap();
        assert_eq!(envelope.status.as_deref(), Some("error"));
        assert_eq!(envelope.error_type.as_deref(), Some("bad_data"));
        assert_eq!(envelope.error.as_deref(), Some("1:1: parse error: unexpected character"));
    }

    #[test]
    fn malformed_answers_are_errors_that_say_where() {
        for body in
            [&b"<html>login</html>"[..], b"", b"{\"status\":\"success\"} trailing", b"{\"data\":{\"result\":{}}}"]
        {
            let err = read(body, &mut Collect::default()).unwrap_err();
            assert!(err.line() >= 1, "{err}");
        }
        let err = read(br#"{"data":{"result":[{"value":[1,2]}]}}"#, &mut Collect::default()).unwrap_err();
        assert!(err.to_string().contains("invalid type: integer"), "{err}");
    }
}
