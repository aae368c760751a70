//! GPU entries in Slurm GRES and TRES strings.
//!
//! GRES (node `gres` / `gres_used`, job `gres_detail`, `sinfo %G`): comma-separated entries
//! `gpu[:TYPE][:COUNT][(S:0-1)|(IDX:0,3-4)]`, where TYPE may contain dots (MIG `1g.10gb`);
//! the parenthesised suffix is stripped first (it may itself contain commas) and the count
//! is the last `:` field. TRES requests (`tres_per_job/node/task/socket`, `tres_req_str`,
//! `squeue %b`): `gres:gpu:a100:2` (≤ 23.02), `gres/gpu:a100:2` (23.11+), `gres/gpu=2`,
//! `gres/gpu:a100=1`, mixed with `cpu=N`, `mem=…`. Non-GPU entries are ignored.

use crate::model::gpu_names::canonical_model;

/// One GPU entry of a GRES string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GresItem {
    /// GPU type (`a100`, `1g.10gb`); `None` when untyped (`gpu:4`).
    pub model: Option<String>,
    pub count: u32,
    /// Device indices from an `(IDX:…)` suffix; empty when absent or `N/A`.
    pub indices: Vec<u32>,
}

/// A job's GPU types as Slurm names them (`a100`, `nvidia_h100_80gb_hbm3`) → its
/// `(gpu_model, gpu_product)`: the canonical models and the native names, each joined with
/// `,` without repeats; `(None, None)` when the job names no type.
pub(crate) fn model_and_product(natives: &[String]) -> (Option<String>, Option<String>) {
    if natives.is_empty() {
        return (None, None);
    }
    let mut models: Vec<String> = Vec::new();
    for m in natives.iter().map(|n| canonical_model(n)) {
        if !models.contains(&m) {
            models.push(m);
        }
    }
    (Some(models.join(",")), Some(natives.join(",")))
}

/// Most device indices kept from one `(IDX:…)` suffix.
const MAX_INDICES: usize = 4096;

/// The GPU entries of a GRES string: `gpu:a100:2(IDX:0-1)`, `gpu:4(S:0-1)`,
/// `gpu:h100:2,gpu:h200:4`, `gpu:1g.10gb:3`, `gres/gpu:a100=1`, `gres:gpu:a100:2`.
/// Other GRES (`shard`, `mps`, …) are ignored.
pub fn parse_gres(s: &str) -> Vec<GresItem> {
    let mut out = Vec::new();
    if !s.contains("gpu") {
        return out;
    }
    for entry in split_top_level(s) {
        let (body, suffix) = split_suffix(entry);
        let Some((model, count)) = gpu_spec(body) else { continue };
        let indices = suffix.and_then(|sfx| sfx.trim().strip_prefix("IDX:")).map(parse_indices).unwrap_or_default();
        out.push(GresItem { model: model.map(str::to_string), count: clamp_u32(count.unwrap_or(1)), indices });
    }
    out
}

/// GPUs asked for in one TRES request string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuRequest {
    /// Total GPUs: the untyped `gres/gpu` entry when there is one (Slurm lists it beside the
    /// typed ones in `tres_req_str`), the sum of the typed entries otherwise.
    pub count: u32,
    /// Types named, in order, without repeats.
    pub models: Vec<String>,
}

/// The GPUs in a TRES request string such as `cpu=2,gres/gpu:a100=2` or
/// `gres:gpu:h100:1,gres:gpu:h200:1`.
pub fn gpu_request(s: &str) -> GpuRequest {
    if !s.contains("gpu") {
        return GpuRequest::default();
    }
    let mut tally = GpuTally::default();
    for entry in split_top_level(s) {
        let (body, _) = split_suffix(entry);
        if let Some((model, count)) = gpu_spec(body) {
            tally.add(model, count.unwrap_or(1));
        }
    }
    tally.finish()
}

/// Adds up GPU entries: untyped ones give the total, typed ones the models.
#[derive(Debug, Default)]
pub(crate) struct GpuTally {
    untyped: Option<u64>,
    typed: u64,
    models: Vec<String>,
}

impl GpuTally {
    pub(crate) fn add(&mut self, model: Option<&str>, count: u64) {
        match model {
            None => self.untyped = Some(self.untyped.unwrap_or(0).saturating_add(count)),
            Some(m) => {
                self.typed = self.typed.saturating_add(count);
                if !self.models.iter().any(|x| x == m) {
                    self.models.push(m.to_string());
                }
            }
        }
    }

    pub(crate) fn finish(self) -> GpuRequest {
        GpuRequest { count: clamp_u32(self.untyped.unwrap_or(self.typed)), models: self.models }
    }
}

pub(crate) fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Split at commas outside parentheses; pieces trimmed, blanks dropped.
pub(crate) fn split_top_level(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let text = rest?;
        let mut depth = 0usize;
        for (i, c) in text.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    rest = Some(&text[i + 1..]);
                    return Some(&text[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(text)
    })
    .map(str::trim)
    .filter(|p| !p.is_empty())
}

/// `gpu:a100:2(IDX:0-1)` → (`gpu:a100:2`, Some(`IDX:0-1`)).
fn split_suffix(entry: &str) -> (&str, Option<&str>) {
    match entry.find('(') {
        Some(i) => {
            let rest = &entry[i + 1..];
            let inner = rest.rfind(')').map_or(rest, |j| &rest[..j]);
            (entry[..i].trim(), Some(inner))
        }
        None => (entry.trim(), None),
    }
}

/// Parse one GRES/TRES body. `Some((model, count))` when it is a GPU entry; `count` is
/// `None` when the entry names no count.
pub(crate) fn gpu_spec(body: &str) -> Option<(Option<&str>, Option<u64>)> {
    let body = body.trim();
    let body = body.strip_prefix("gres/").or_else(|| body.strip_prefix("gres:")).unwrap_or(body);
    let rest = body.strip_prefix("gpu")?;
    if rest.is_empty() {
        return Some((None, None));
    }
    if let Some(count) = rest.strip_prefix('=') {
        return Some((None, parse_count(count)));
    }
    let rest = rest.strip_prefix(':')?;
    if let Some((model, count)) = rest.rsplit_once('=') {
        let model = model.split(':').find(|p| !p.is_empty() && *p != "no_consume");
        return Some((model, parse_count(count)));
    }
    let mut fields: Vec<&str> = rest.split(':').filter(|p| !p.is_empty() && *p != "no_consume").collect();
    let count = match fields.last().and_then(|c| parse_count(c)) {
        Some(c) => {
            fields.pop();
            Some(c)
        }
        None => None,
    };
    Some((fields.first().copied(), count))
}

/// A GRES count: a plain integer (a type name like `4g` is not read as a count).
fn parse_count(s: &str) -> Option<u64> {
    s.trim().parse::<u64>().ok()
}

/// `0,3-4` → [0, 3, 4]; `N/A` → []. Bounded to [`MAX_INDICES`] entries.
fn parse_indices(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
            None => (item.parse::<u32>(), item.parse::<u32>()),
        };
        let (Ok(a), Ok(b)) = (a, b) else { continue };
        for i in a.min(b)..=a.max(b) {
            if out.len() >= MAX_INDICES {
                return out;
            }
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(model: Option<&str>, count: u32, indices: &[u32]) -> GresItem {
        GresItem { model: model.map(str::to_string), count, indices: indices.to_vec() }
    }

    #[test]
    fn typed_with_indices() {
        assert_eq!(parse_gres("gpu:a100:2(IDX:0-1)"), vec![item(Some("a100"), 2, &[0, 1])]);
        assert_eq!(parse_gres("gpu:a100:3(IDX:0,3-4)"), vec![item(Some("a100"), 3, &[0, 3, 4])]);
        assert_eq!(parse_gres("gpu:a100:0(IDX:N/A)"), vec![item(Some("a100"), 0, &[])]);
    }

    #[test]
    fn untyped_and_socket_suffix() {
        assert_eq!(parse_gres("gpu:4(S:0-1)"), vec![item(None, 4, &[])]);
        assert_eq!(parse_gres("gpu:4"), vec![item(None, 4, &[])]);
        assert_eq!(parse_gres("gpu:0"), vec![item(None, 0, &[])]);
        assert_eq!(parse_gres("gpu"), vec![item(None, 1, &[])]);
    }

    #[test]
    fn multi_type_and_mig_names() {
        assert_eq!(
            parse_gres("gpu:h100:2(IDX:0-1),gpu:h200:4(IDX:2-5)"),
            vec![item(Some("h100"), 2, &[0, 1]), item(Some("h200"), 4, &[2, 3, 4, 5])]
        );
        assert_eq!(parse_gres("gpu:h100:2,gpu:h200:4"), vec![item(Some("h100"), 2, &[]), item(Some("h200"), 4, &[])]);
        assert_eq!(parse_gres("gpu:1g.10gb:3(IDX:0-2)"), vec![item(Some("1g.10gb"), 3, &[0, 1, 2])]);
        assert_eq!(parse_gres("gpu:1g.10gb:3"), vec![item(Some("1g.10gb"), 3, &[])]);
        assert_eq!(parse_gres("gpu:3g.20gb"), vec![item(Some("3g.20gb"), 1, &[])]);
    }

    #[test]
    fn tres_spellings() {
        assert_eq!(parse_gres("gres/gpu:a100=1"), vec![item(Some("a100"), 1, &[])]);
        assert_eq!(parse_gres("gres:gpu:a100:2"), vec![item(Some("a100"), 2, &[])]);
        assert_eq!(parse_gres("gres/gpu=2"), vec![item(None, 2, &[])]);
        assert_eq!(parse_gres("gpu:a100:no_consume:2"), vec![item(Some("a100"), 2, &[])]);
    }

    #[test]
    fn non_gpu_gres_ignored() {
        assert_eq!(parse_gres("shard:4,mps:100(S:0),gpu:a100:1,gpuish:3"), vec![item(Some("a100"), 1, &[])]);
        assert_eq!(parse_gres("(null)"), vec![]);
        assert_eq!(parse_gres(""), vec![]);
        assert_eq!(parse_gres("N/A"), vec![]);
    }

    #[test]
    fn index_ranges_are_bounded() {
        let g = parse_gres("gpu:4(IDX:0-4000000000)");
        assert_eq!(g[0].indices.len(), MAX_INDICES);
    }

    #[test]
    fn job_models_are_canonical_and_the_native_types_kept() {
        let natives = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(model_and_product(&[]), (None, None));
        assert_eq!(model_and_product(&natives(&["h100"])), (Some("h100".into()), Some("h100".into())));
        assert_eq!(
            model_and_product(&natives(&["nvidia_h100_80gb_hbm3", "H100", "a100"])),
            (Some("h100,a100".into()), Some("nvidia_h100_80gb_hbm3,H100,a100".into()))
        );
    }

    #[test]
    fn requests_prefer_the_untyped_total() {
        assert_eq!(
            gpu_request("cpu=2,mem=1G,node=1,billing=2,gres/gpu=4,gres/gpu:a100=4"),
            GpuRequest { count: 4, models: vec!["a100".into()] }
        );
        assert_eq!(
            gpu_request("gres/gpu:h100:1,gres/gpu:h200:1"),
            GpuRequest { count: 2, models: vec!["h100".into(), "h200".into()] }
        );
        assert_eq!(gpu_request("gres:gpu:2"), GpuRequest { count: 2, models: vec![] });
        assert_eq!(gpu_request("cpu=4,gres/gpu"), GpuRequest { count: 1, models: vec![] });
        assert_eq!(gpu_request("N/A"), GpuRequest::default());
        assert_eq!(gpu_request("cpu=16,mem=16M,node=16,billing=16"), GpuRequest::default());
    }
}
