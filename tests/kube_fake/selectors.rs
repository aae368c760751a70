//! Label and field selectors, as the API server reads them from `labelSelector` and
//! `fieldSelector`.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl LabelReq {
    fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        match self {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        }
    }
}

/// A parsed `labelSelector`; empty matches everything.
#[derive(Clone, Debug, Default)]
pub(crate) struct LabelSelector(pub Vec<LabelReq>);

impl LabelSelector {
    pub(crate) fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        for term in split_top_level(s) {
            let t = term.trim();
            if t.is_empty() {
                continue;
            }
            reqs.push(parse_term(t).map_err(|e| format!("unable to parse requirement: {e}"))?);
        }
        Ok(LabelSelector(reqs))
    }

    /// From a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`).
    pub(crate) fn from_object(sel: &Value) -> LabelSelector {
        let mut reqs = Vec::new();
        if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in ml {
                reqs.push(LabelReq::Eq(k.clone(), v.as_str().unwrap_or("").to_owned()));
            }
        }
        for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("").to_owned();
            let values: Vec<String> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| vs.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => reqs.push(LabelReq::In(key, values)),
                "NotIn" => reqs.push(LabelReq::NotIn(key, values)),
                "Exists" => reqs.push(LabelReq::Exists(key)),
                "DoesNotExist" => reqs.push(LabelReq::NotExists(key)),
                _ => {}
            }
        }
        LabelSelector(reqs)
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        self.0.iter().all(|r| r.matches(labels))
    }
}

/// Splits on commas outside parentheses: `a in (x,y),b` → `a in (x,y)`, `b`.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn check_key(k: &str) -> Result<String, String> {
    let k = k.trim();
    if k.is_empty() || k.contains(char::is_whitespace) || k.contains(['(', ')', '=', '!']) {
        return Err(format!("invalid label key \"{k}\""));
    }
    Ok(k.to_owned())
}

fn check_value(v: &str) -> Result<String, String> {
    let v = v.trim();
    if v.contains(char::is_whitespace) || v.contains(['(', ')', '=', '!', ',']) {
        return Err(format!("invalid label value: \"{v}\""));
    }
    Ok(v.to_owned())
}

fn parse_set(rest: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a set in parentheses, got \"{rest}\""))?;
    inner.split(',').map(check_value).collect()
}

fn parse_term(t: &str) -> Result<LabelReq, String> {
    if let Some(k) = t.strip_prefix('!') {
        return Ok(LabelReq::NotExists(check_key(k)?));
    }
    if let Some((k, rest)) = t.split_once(" notin ") {
        return Ok(LabelReq::NotIn(check_key(k)?, parse_set(rest)?));
    }
    if let Some((k, rest)) = t.split_once(" in ") {
        return Ok(LabelReq::In(check_key(k)?, parse_set(rest)?));
    }
    if let Some((k, v)) = t.split_once("!=") {
        return Ok(LabelReq::NotEq(check_key(k)?, check_value(v)?));
    }
    if let Some((k, v)) = t.split_once("==") {
        return Ok(LabelReq::Eq(check_key(k)?, check_value(v)?));
    }
    if let Some((k, v)) = t.split_once('=') {
        return Ok(LabelReq::Eq(check_key(k)?, check_value(v)?));
    }
    Ok(LabelReq::Exists(check_key(t)?))
}

/// A parsed `fieldSelector`: `path=value`, `path==value`, `path!=value` terms on dotted paths.
#[derive(Clone, Debug, Default)]
pub(crate) struct FieldSelector(pub Vec<(String, bool, String)>);

impl FieldSelector {
    pub(crate) fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut reqs = Vec::new();
        for term in s.split(',') {
            let t = term.trim();
            if t.is_empty() {
                continue;
            }
            let (path, eq, value) = if let Some((p, v)) = t.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = t.split_once("==") {
                (p, true, v)
            } else if let Some((p, v)) = t.split_once('=') {
                (p, true, v)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{t}'"));
            };
            if path.trim().is_empty() {
                return Err(format!("invalid selector: '{s}'; can't understand '{t}'"));
            }
            reqs.push((path.trim().to_owned(), eq, value.trim().to_owned()));
        }
        Ok(FieldSelector(reqs))
    }

    /// Rewrites every path (events.k8s.io/v1 reads core Event field names).
    pub(crate) fn map_paths(mut self, f: impl Fn(&str) -> String) -> FieldSelector {
        for r in &mut self.0 {
            r.0 = f(&r.0);
        }
        self
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, eq, value)| (field_value(obj, path) == *value) == *eq)
    }
}

/// The value at a dotted path as a string; missing or null is "".
pub(crate) fn field_value(obj: &Value, path: &str) -> String {
    let mut cur = obj;
    for part in path.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}
