//! The PATCH flavours: JSON merge patch (RFC 7386), a strategic merge patch good enough for
//! cordons, labels, annotations, containers and conditions, and JSON patch (RFC 6902).

use serde_json::{Map, Value};

/// RFC 7386: objects merge recursively, `null` deletes, everything else replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().expect("object");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

/// The merge key of a list field in a strategic merge patch, where Kubernetes defines one.
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "volumeMounts"
        | "imagePullSecrets"
        | "podSets"
        | "flavors"
        | "resourceGroups" => Some("name"),
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        "ports" => Some("containerPort"),
        "addresses" => Some("type"),
        _ => None,
    }
}

/// Lists of strings merged as sets (`patchStrategy: merge` on a primitive list).
fn is_set_list(field: &str) -> bool {
    field == "finalizers"
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k.clone(), strip_directives(v))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// A strategic merge patch: like a merge patch, but lists with a merge key merge element by
/// element (`$patch: delete` removes one), `$patch: replace` replaces a map, `$…` directives
/// such as `$setElementOrder/…` and `$retainKeys` are ignored.
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        *target = strip_directives(patch);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        if v.is_null() || v.get("$patch").and_then(Value::as_str) == Some("delete") {
            t.remove(k);
            continue;
        }
        match (v, t.get_mut(k)) {
            (Value::Array(pl), Some(Value::Array(tl))) => merge_list(k, tl, pl),
            (Value::Array(_), _) => {
                t.insert(k.clone(), strip_directives(v));
            }
            (_, Some(tv)) => strategic_merge(tv, v),
            (_, None) => {
                let mut fresh = Value::Null;
                strategic_merge(&mut fresh, v);
                t.insert(k.clone(), fresh);
            }
        }
    }
}

fn merge_list(field: &str, target: &mut Vec<Value>, patch: &[Value]) {
    if is_set_list(field) {
        for v in patch {
            if !target.contains(v) {
                target.push(v.clone());
            }
        }
        return;
    }
    let Some(key) = merge_key(field) else {
        *target = patch.iter().map(strip_directives).collect();
        return;
    };
    for pe in patch {
        let Some(kv) = pe.get(key) else {
            target.push(strip_directives(pe));
            continue;
        };
        let pos = target.iter().position(|te| te.get(key) == Some(kv));
        if pe.get("$patch").and_then(Value::as_str) == Some("delete") {
            if let Some(i) = pos {
                target.remove(i);
            }
            continue;
        }
        match pos {
            Some(i) => strategic_merge(&mut target[i], pe),
            None => target.push(strip_directives(pe)),
        }
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<(Vec<String>, String), String> {
    if path.is_empty() {
        return Err("the root cannot be patched".into());
    }
    let rest = path.strip_prefix('/').ok_or_else(|| format!("invalid JSON pointer {path:?}"))?;
    let mut tokens: Vec<String> = rest.split('/').map(unescape).collect();
    let last = tokens.pop().unwrap_or_default();
    Ok((tokens, last))
}

fn walk<'a>(doc: &'a mut Value, tokens: &[String]) -> Result<&'a mut Value, String> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get_mut(t).ok_or_else(|| format!("missing path element {t:?}"))?,
            Value::Array(a) => {
                let i: usize = t.parse().map_err(|_| format!("invalid array index {t:?}"))?;
                a.get_mut(i).ok_or_else(|| format!("array index {i} out of range"))?
            }
            _ => return Err(format!("cannot descend into {t:?}")),
        };
    }
    Ok(cur)
}

fn pointer_get(doc: &Value, path: &str) -> Result<Value, String> {
    doc.pointer(path).cloned().ok_or_else(|| format!("path {path:?} does not exist"))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let (tokens, last) = split_pointer(path)?;
    match walk(doc, &tokens)? {
        Value::Object(m) => {
            m.insert(last, value);
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(value);
            } else {
                let i: usize = last.parse().map_err(|_| format!("invalid array index {last:?}"))?;
                if i > a.len() {
                    return Err(format!("array index {i} out of range"));
                }
                a.insert(i, value);
            }
        }
        _ => return Err(format!("cannot add at {path:?}")),
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (tokens, last) = split_pointer(path)?;
    match walk(doc, &tokens)? {
        Value::Object(m) => m.remove(&last).ok_or_else(|| format!("path {path:?} does not exist")),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| format!("invalid array index {last:?}"))?;
            if i >= a.len() {
                return Err(format!("array index {i} out of range"));
            }
            Ok(a.remove(i))
        }
        _ => Err(format!("cannot remove at {path:?}")),
    }
}

/// RFC 6902: `add`, `remove`, `replace`, `move`, `copy`, `test`. All or nothing.
pub(crate) fn json_patch(target: &mut Value, ops: &Value) -> Result<(), String> {
    let ops = ops.as_array().ok_or("a JSON patch must be an array of operations")?;
    let mut doc = target.clone();
    for op in ops {
        let name = op.get("op").and_then(Value::as_str).ok_or("operation without \"op\"")?;
        let path = op.get("path").and_then(Value::as_str).ok_or("operation without \"path\"")?;
        let value = || op.get("value").cloned().ok_or_else(|| format!("{name} without \"value\""));
        let from = || op.get("from").and_then(Value::as_str).ok_or_else(|| format!("{name} without \"from\""));
        match name {
            "add" => add(&mut doc, path, value()?)?,
            "remove" => {
                remove(&mut doc, path)?;
            }
            "replace" => {
                remove(&mut doc, path)?;
                add(&mut doc, path, value()?)?;
            }
            "move" => {
                let v = remove(&mut doc, from()?)?;
                add(&mut doc, path, v)?;
            }
            "copy" => {
                let v = pointer_get(&doc, from()?)?;
                add(&mut doc, path, v)?;
            }
            "test" => {
                if pointer_get(&doc, path)? != value()? {
                    return Err(format!("test operation for path {path:?} failed"));
                }
            }
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    *target = doc;
    Ok(())
}
