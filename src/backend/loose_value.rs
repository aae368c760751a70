//! Lenient reading of scalar values in the YAML/JSON job files of the cloud dialects
//! (SkyPilot tasks, dstack configurations): numbers written as text, whole numbers written
//! as floats, and values shown briefly in warnings. One copy for both dialects.

use serde_json::Value;

/// A finite number (`2`, `2.5`, `"2.5"`).
pub fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// A whole, non-negative number (`2`, `2.0`, `"2"`).
pub fn whole(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => {
            n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19).map(|f| f as u64))
        }
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Text for a scalar (numbers and booleans as written), `None` for null and collections.
pub fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Null, `false`, or an empty string, list or mapping: nothing asked.
pub fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// A value as a message shows it: short, one line.
pub fn brief(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut short: String = text.chars().take(60).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    format!("{short:?}")
}
