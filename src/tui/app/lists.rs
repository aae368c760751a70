//! The jobs, nodes and GPU-map lists: sort order, filters, cursor and marks, kept as row
//! indices into the row cache and recomputed only when the data, a filter or the sort changes.

use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use nucleo::Matcher;
use nucleo::pattern::{Atom, AtomKind, CaseMatching, Normalization};

use super::data::{Cell as GpuCell, Data, is_problem_node};
use crate::model::{Job, JobRef, JobState, Node, NodeRef};

/// A cursor over a list of visible rows, plus the scroll offset the view last used.
#[derive(Debug, Default)]
pub struct Cursor {
    /// Rows (indices into the row cache) in display order.
    pub visible: Vec<u32>,
    pub pos: usize,
    /// First row drawn; kept by the view so scrolling moves as little as possible.
    pub offset: Cell<usize>,
    /// Rows the view last had room for (page size); 0 before the first draw.
    pub height: Cell<usize>,
    /// The user has moved the cursor. Until then it stays on the first row whatever the
    /// refreshes bring (the first cluster to answer must not pin it to its rows).
    pub moved: bool,
}

impl Cursor {
    pub fn current(&self) -> Option<u32> {
        self.visible.get(self.pos).copied()
    }

    pub fn len(&self) -> usize {
        self.visible.len()
    }

    pub fn is_empty(&self) -> bool {
        self.visible.is_empty()
    }

    pub fn page(&self) -> usize {
        match self.height.get() {
            0 => 10,
            h => h,
        }
    }

    /// Move by `delta` rows, clamped to the list.
    pub fn move_by(&mut self, delta: isize) {
        if self.visible.is_empty() {
            self.pos = 0;
            return;
        }
        let last = self.visible.len() - 1;
        self.pos = self.pos.saturating_add_signed(delta).min(last);
        self.moved = true;
    }

    pub fn top(&mut self) {
        self.pos = 0;
        self.moved = true;
    }

    pub fn bottom(&mut self) {
        self.pos = self.visible.len().saturating_sub(1);
        self.moved = true;
    }

    /// Put the cursor on `row` if it is visible, else keep the same index, clamped. A cursor
    /// the user never moved stays on the first row.
    pub fn place(&mut self, row: Option<u32>) {
        if !self.moved {
            self.pos = 0;
            return;
        }
        if let Some(row) = row
            && let Some(pos) = self.visible.iter().position(|r| *r == row)
        {
            self.pos = pos;
            return;
        }
        self.pos = self.pos.min(self.visible.len().saturating_sub(1));
    }
}

/// Columns of the jobs table, also the sort keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobColumn {
    Cluster,
    Id,
    Name,
    User,
    Partition,
    State,
    Reason,
    Gpus,
    Nodes,
    Elapsed,
    Limit,
}

impl JobColumn {
    pub const ALL: [JobColumn; 11] = [
        JobColumn::Cluster,
        JobColumn::Id,
        JobColumn::Name,
        JobColumn::User,
        JobColumn::Partition,
        JobColumn::State,
        JobColumn::Reason,
        JobColumn::Gpus,
        JobColumn::Nodes,
        JobColumn::Elapsed,
        JobColumn::Limit,
    ];

    pub fn title(self) -> &'static str {
        match self {
            JobColumn::Cluster => "CLUSTER",
            JobColumn::Id => "ID",
            JobColumn::Name => "NAME",
            JobColumn::User => "USER",
            JobColumn::Partition => "PARTITION",
            JobColumn::State => "STATE",
            JobColumn::Reason => "REASON",
            JobColumn::Gpus => "GPUS",
            JobColumn::Nodes => "NODES",
            JobColumn::Elapsed => "ELAPSED",
            JobColumn::Limit => "LIMIT",
        }
    }
}

/// Columns of the nodes table, also the sort keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeColumn {
    Cluster,
    Name,
    State,
    Gpus,
    Unhealthy,
    Cpu,
    Memory,
    Reason,
}

impl NodeColumn {
    pub const ALL: [NodeColumn; 8] = [
        NodeColumn::Cluster,
        NodeColumn::Name,
        NodeColumn::State,
        NodeColumn::Gpus,
        NodeColumn::Unhealthy,
        NodeColumn::Cpu,
        NodeColumn::Memory,
        NodeColumn::Reason,
    ];

    pub fn title(self) -> &'static str {
        match self {
            NodeColumn::Cluster => "CLUSTER",
            NodeColumn::Name => "NODE",
            NodeColumn::State => "STATE",
            NodeColumn::Gpus => "GPUS",
            NodeColumn::Unhealthy => "BAD",
            NodeColumn::Cpu => "CPU",
            NodeColumn::Memory => "MEM",
            NodeColumn::Reason => "REASON",
        }
    }
}

/// Sort keys of the GPU map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuSort {
    Node,
    Free,
    Allocated,
    Unavailable,
}

impl GpuSort {
    pub const ALL: [GpuSort; 4] = [GpuSort::Node, GpuSort::Free, GpuSort::Allocated, GpuSort::Unavailable];

    pub fn title(self) -> &'static str {
        match self {
            GpuSort::Node => "node",
            GpuSort::Free => "free",
            GpuSort::Allocated => "allocated",
            GpuSort::Unavailable => "unavailable",
        }
    }
}

/// The cycle of the quick state filter (`None` is "all").
pub const STATE_CYCLE: [JobState; 8] = [
    JobState::Pending,
    JobState::Running,
    JobState::Held,
    JobState::Suspended,
    JobState::Completing,
    JobState::Failed,
    JobState::Completed,
    JobState::Cancelled,
];

/// Which cluster the cluster filter keeps, resolved against the current data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterKeep {
    All,
    /// The named cluster, at this snapshot index (`None`: it has no data yet).
    One(Option<u16>),
}

impl ClusterKeep {
    pub fn resolve(data: &Data, name: Option<&str>) -> ClusterKeep {
        match name {
            None => ClusterKeep::All,
            Some(name) => ClusterKeep::One(
                data.snaps.iter().position(|(i, _)| data.fleet.clusters[*i].name == name).map(|p| p as u16),
            ),
        }
    }

    pub fn keeps(self, snap: u16) -> bool {
        match self {
            ClusterKeep::All => true,
            ClusterKeep::One(want) => want == Some(snap),
        }
    }
}

/// A compiled filter: nucleo's pattern syntax (words must all match; `'exact`, `^prefix`,
/// `suffix$`, `!not`; smart case), answered yes or no.
///
/// Rows are filtered, not ranked (the table keeps its sort), so a fuzzy word only has to be
/// found, not scored: it is matched with nucleo's linear greedy matcher, which accepts
/// exactly the haystacks the optimal (scoring) matcher accepts, at a fraction of the cost.
pub struct Fuzzy {
    atoms: Vec<(Atom, bool, bool)>,
}

impl Fuzzy {
    pub fn new(text: &str) -> Option<Fuzzy> {
        let atoms: Vec<(Atom, bool, bool)> = words(text)
            .filter_map(|word| {
                // Smart case and normalisation, decided here so that we know them.
                let ignore_case = !word.chars().any(char::is_uppercase);
                let normalize = word.is_ascii();
                let atom = Atom::parse(
                    word,
                    if ignore_case { CaseMatching::Ignore } else { CaseMatching::Respect },
                    if normalize { Normalization::Smart } else { Normalization::Never },
                );
                (!atom.needle_text().is_empty()).then_some((atom, ignore_case, normalize))
            })
            .collect();
        (!atoms.is_empty()).then_some(Fuzzy { atoms })
    }

    pub fn matches(&self, hay: &nucleo::Utf32String, matcher: &mut Matcher) -> bool {
        let hay = hay.slice(..);
        self.atoms.iter().all(|(atom, ignore_case, normalize)| {
            matcher.config.ignore_case = *ignore_case;
            matcher.config.normalize = *normalize;
            let needle = atom.needle_text();
            let found = match atom.kind {
                AtomKind::Fuzzy => matcher.fuzzy_match_greedy(hay, needle),
                AtomKind::Substring => matcher.substring_match(hay, needle),
                AtomKind::Prefix => matcher.prefix_match(hay, needle),
                AtomKind::Postfix => matcher.postfix_match(hay, needle),
                AtomKind::Exact => matcher.exact_match(hay, needle),
                // A kind added by a later nucleo: its own scoring decides.
                _ => return atom.score(hay, matcher).is_some(),
            }
            .is_some();
            found != atom.negative
        })
    }
}

/// The words of a pattern: split at spaces not escaped with `\`, as nucleo does.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut escaped = false;
    text.split(move |c| {
        let split = c == ' ' && !escaped;
        escaped = c == '\\';
        split
    })
    .filter(|w| !w.is_empty())
}

/// Below this many rows a fuzzy pass runs on the calling thread.
const PARALLEL_MIN: usize = 20_000;

/// The rows of `rows` that `keep` accepts, in order. A fuzzy pass over many rows is split
/// across threads (one `Matcher` each, kept in `matchers` between passes): 100,000 jobs are
/// re-filtered within a keystroke.
pub fn filter_rows<F>(rows: &[u32], matchers: &mut Vec<Matcher>, fuzzy: bool, keep: F) -> Vec<u32>
where
    F: Fn(u32, &mut Matcher) -> bool + Sync,
{
    let threads = if fuzzy && rows.len() >= PARALLEL_MIN {
        std::thread::available_parallelism().map_or(1, |n| n.get()).min(8)
    } else {
        1
    };
    while matchers.len() < threads {
        matchers.push(Matcher::new(nucleo::Config::DEFAULT));
    }
    if threads == 1 {
        let m = &mut matchers[0];
        return rows.iter().copied().filter(|&r| keep(r, m)).collect();
    }
    let chunk = rows.len().div_ceil(threads);
    let keep = &keep;
    std::thread::scope(|scope| {
        let parts: Vec<_> = rows
            .chunks(chunk)
            .zip(matchers.iter_mut())
            .map(|(part, m)| scope.spawn(move || part.iter().copied().filter(|&r| keep(r, m)).collect::<Vec<u32>>()))
            .collect();
        let mut out = Vec::with_capacity(rows.len());
        for part in parts {
            match part.join() {
                Ok(v) => out.extend(v),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// Typing `new` after `old` can only narrow the matches (so only the rows that matched `old`
/// need checking): `new` extends `old` and neither uses negation or escapes.
pub fn narrows(old: &str, new: &str) -> bool {
    !old.is_empty() && new.starts_with(old) && !new.contains(['!', '\\'])
}

/// Compare ids the way people count: `9 < 10`, `12_3 < 12_10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let na = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let nb = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (da, db) = (&a[..na], &b[..nb]);
                let (ta, tb) = (trim_zeros(da), trim_zeros(db));
                let ord = ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb));
                if ord != Ordering::Equal {
                    return ord;
                }
                a = &a[na..];
                b = &b[nb..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let n = d.iter().take_while(|c| **c == b'0').count();
    &d[n.min(d.len().saturating_sub(1))..]
}

/// Seconds the job has run, as of the snapshot (`taken_at`), or until it ended.
/// `a100×4`, `4` (untyped), `-` (none).
pub fn gpus_cell(job: &Job) -> String {
    match (job.gpus(), &job.gpu_model) {
        (0, _) => "-".into(),
        (n, Some(model)) => format!("{model}×{n}"),
        (n, None) => n.to_string(),
    }
}

/// `gpu-01`, `gpu-01+3`, `(2)` while pending, `-`.
pub fn nodes_cell(job: &Job) -> String {
    match job.nodes.as_slice() {
        [] if job.node_count > 0 => format!("({})", job.node_count),
        [] => "-".into(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first}+{}", rest.len()),
    }
}

pub fn limit_cell(job: &Job) -> String {
    job.time_limit_secs.map_or_else(|| "∞".to_string(), crate::tui::widgets::text::duration)
}

/// `drained+drain+not_responding`: the base state, then the flags that add to it.
pub fn state_cell(node: &Node) -> String {
    let mut s = node.state.as_str().to_string();
    for f in &node.flags {
        let f = f.to_ascii_lowercase();
        // `drained` already says `drain`.
        if !s.split('+').any(|part| part == f || part.starts_with(&f)) {
            s.push('+');
            s.push_str(&f);
        }
    }
    s
}

/// `a100 3/4, h100 0/8`: allocated of total, per model.
pub fn node_gpus_cell(node: &Node) -> String {
    if node.gpus.is_empty() {
        return "-".into();
    }
    node.gpus.iter().map(|g| format!("{} {}/{}", g.model, g.allocated, g.total)).collect::<Vec<_>>().join(", ")
}

pub fn gib(mb: u64) -> String {
    match mb {
        0 => "0".into(),
        m if m >= 10 * 1024 => format!("{}G", m / 1024),
        m => format!("{:.1}G", m as f64 / 1024.0),
    }
}

/// `why · by root 05-01 12:00`
pub fn reason_cell(node: &Node) -> String {
    let Some(reason) = &node.reason else { return String::new() };
    let mut s = reason.clone();
    if node.reason_user.is_some() || node.reason_time.is_some() {
        s.push_str(" ·");
        if let Some(u) = &node.reason_user {
            s.push_str(" by ");
            s.push_str(u);
        }
        if let Some(t) = node.reason_time {
            s.push_str(&t.format(" %m-%d %H:%M").to_string());
        }
    }
    s
}

/// Widen `widths` (one per nodes-table column) to fit `node`'s cells.
pub fn widen_node_columns(widths: &mut [usize], node: &Node) {
    use crate::tui::widgets::text::width;
    let bad = node.gpus_unhealthy();
    let cells = [
        width(&node.cluster),
        width(&node.name),
        width(&state_cell(node)),
        width(&node_gpus_cell(node)),
        if bad == 0 { 1 } else { bad.to_string().len() },
        format!("{}/{}", node.cpus_allocated, node.cpus_total).len(),
        format!("{}/{}", gib(node.memory_allocated_mb), gib(node.memory_total_mb)).len(),
        width(&reason_cell(node)),
    ];
    for (w, c) in widths.iter_mut().zip(cells) {
        *w = (*w).max(c);
    }
}

/// Column widths before any job is seen: the state column starts wide enough for every
/// common state (`completing`), so a job changing state does not move the columns after it.
pub fn initial_job_widths() -> Vec<usize> {
    let mut w = vec![0; JobColumn::ALL.len()];
    w[JobColumn::State as usize] = "completing".len();
    w
}

/// Widen `widths` (one per [`JobColumn`]) to fit `job`'s cells. Elapsed times change every
/// refresh, so that column is as wide as its longest form (`999d23h`) from the start.
pub fn widen_job_columns(widths: &mut [usize], job: &Job) {
    use crate::tui::widgets::text::width;
    let cells = [
        width(&job.job_ref.cluster),
        width(&job.job_ref.id),
        width(&job.name),
        width(&job.user),
        width(&job.partition),
        job.state.as_str().len(),
        job.reason.as_deref().map_or(0, width),
        gpus_cell(job).chars().count(),
        nodes_cell(job).chars().count(),
        7,
        limit_cell(job).chars().count(),
    ];
    for (w, c) in widths.iter_mut().zip(cells) {
        *w = (*w).max(c);
    }
}

pub fn elapsed_secs(job: &Job, taken_at: Option<DateTime<Utc>>) -> Option<u64> {
    if job.state.is_waiting() {
        return None;
    }
    let start = job.start_time?;
    let end = if job.state.is_finished() { job.end_time.or(taken_at)? } else { taken_at? };
    Some((end - start).num_seconds().max(0) as u64)
}

/// The jobs table's state.
pub struct JobList {
    /// Every row, in sort order.
    pub sorted: Vec<u32>,
    pub cursor: Cursor,
    pub sort: JobColumn,
    pub reverse: bool,
    pub fuzzy: String,
    pub state: Option<JobState>,
    pub user: Option<String>,
    /// Multi-selection, by identity; survives refreshes (vanished jobs are dropped).
    pub marked: BTreeSet<JobRef>,
    /// The job under the cursor, followed across refreshes.
    pub anchor: Option<JobRef>,
}

impl Default for JobList {
    fn default() -> Self {
        Self {
            sorted: Vec::new(),
            cursor: Cursor::default(),
            sort: JobColumn::Cluster,
            reverse: false,
            fuzzy: String::new(),
            state: None,
            user: None,
            marked: BTreeSet::new(),
            anchor: None,
        }
    }
}

impl JobList {
    pub fn resort(&mut self, data: &Data) {
        let mut rows: Vec<u32> = (0..data.jobs.len() as u32).collect();
        let key = self.sort;
        let by = |a: &u32, b: &u32| -> Ordering {
            let (ra, rb) = (&data.jobs[*a as usize], &data.jobs[*b as usize]);
            let (ja, jb) = (data.job(*a), data.job(*b));
            let primary = match key {
                JobColumn::Cluster => Ordering::Equal,
                JobColumn::Id => natural_cmp(&ja.job_ref.id, &jb.job_ref.id),
                JobColumn::Name => ja.name.cmp(&jb.name),
                JobColumn::User => ja.user.cmp(&jb.user),
                JobColumn::Partition => ja.partition.cmp(&jb.partition),
                JobColumn::State => ja.state.cmp(&jb.state),
                JobColumn::Reason => ja.reason.cmp(&jb.reason),
                JobColumn::Gpus => ja.gpus().cmp(&jb.gpus()).then_with(|| ja.gpu_model.cmp(&jb.gpu_model)),
                JobColumn::Nodes => ja.node_count.cmp(&jb.node_count).then_with(|| ja.nodes.cmp(&jb.nodes)),
                JobColumn::Elapsed => {
                    elapsed_secs(ja, data.taken_at(ra.snap)).cmp(&elapsed_secs(jb, data.taken_at(rb.snap)))
                }
                JobColumn::Limit => ja.time_limit_secs.unwrap_or(u64::MAX).cmp(&jb.time_limit_secs.unwrap_or(u64::MAX)),
            };
            primary
                .then_with(|| ja.job_ref.cluster.cmp(&jb.job_ref.cluster))
                .then_with(|| natural_cmp(&ja.job_ref.id, &jb.job_ref.id))
        };
        rows.sort_by(|a, b| if self.reverse { by(b, a) } else { by(a, b) });
        self.sorted = rows;
    }

    /// Recompute the visible rows. `narrow`: only the rows visible now can still match.
    pub fn refilter(&mut self, data: &Data, cluster: ClusterKeep, matchers: &mut Vec<Matcher>, narrow: bool) {
        let anchor_row = self.anchor.as_ref().and_then(|r| data.job_index.get(r).copied());
        let fuzzy = Fuzzy::new(&self.fuzzy);
        let source = if narrow { std::mem::take(&mut self.cursor.visible) } else { std::mem::take(&mut self.sorted) };
        let user = self.user.as_deref();
        let state = self.state;
        self.cursor.visible = filter_rows(&source, matchers, fuzzy.is_some(), |row, matcher| {
            let r = &data.jobs[row as usize];
            if !cluster.keeps(r.snap) {
                return false;
            }
            let job = data.job(row);
            state.is_none_or(|s| job.state == s)
                && user.is_none_or(|u| job.user == u)
                && fuzzy.as_ref().is_none_or(|f| f.matches(&r.hay, matcher))
        });
        if !narrow {
            self.sorted = source;
        }
        self.cursor.place(anchor_row);
        self.sync_anchor(data);
    }

    pub fn sync_anchor(&mut self, data: &Data) {
        self.anchor = self.cursor.current().map(|r| data.job(r).job_ref.clone());
    }

    /// Drop marks of jobs that are gone.
    pub fn prune(&mut self, data: &Data) {
        self.marked.retain(|r| data.job_index.contains_key(r));
    }
}

/// The nodes table's state.
pub struct NodeList {
    pub sorted: Vec<u32>,
    pub cursor: Cursor,
    pub sort: NodeColumn,
    pub reverse: bool,
    pub fuzzy: String,
    pub problems_only: bool,
    pub marked: BTreeSet<NodeRef>,
    pub anchor: Option<NodeRef>,
}

impl Default for NodeList {
    fn default() -> Self {
        Self {
            sorted: Vec::new(),
            cursor: Cursor::default(),
            sort: NodeColumn::Name,
            reverse: false,
            fuzzy: String::new(),
            problems_only: false,
            marked: BTreeSet::new(),
            anchor: None,
        }
    }
}

pub fn node_ref(data: &Data, row: u32) -> NodeRef {
    let n = data.node(row);
    NodeRef { cluster: n.cluster.clone(), name: n.name.clone() }
}

impl NodeList {
    pub fn resort(&mut self, data: &Data) {
        let mut rows: Vec<u32> = (0..data.nodes.len() as u32).collect();
        let key = self.sort;
        let by = |a: &u32, b: &u32| -> Ordering {
            let (na, nb) = (data.node(*a), data.node(*b));
            let pct = |used: u64, total: u64| (used * 1000).checked_div(total).unwrap_or(0);
            let primary = match key {
                NodeColumn::Cluster | NodeColumn::Name => Ordering::Equal,
                NodeColumn::State => na.state.cmp(&nb.state).then_with(|| na.flags.cmp(&nb.flags)),
                NodeColumn::Gpus => (na.gpus_total() - na.gpus_allocated().min(na.gpus_total()))
                    .cmp(&(nb.gpus_total() - nb.gpus_allocated().min(nb.gpus_total())))
                    .then_with(|| na.gpus_total().cmp(&nb.gpus_total())),
                NodeColumn::Unhealthy => na.gpus_unhealthy().cmp(&nb.gpus_unhealthy()),
                NodeColumn::Cpu => pct(u64::from(na.cpus_allocated), u64::from(na.cpus_total))
                    .cmp(&pct(u64::from(nb.cpus_allocated), u64::from(nb.cpus_total))),
                NodeColumn::Memory => pct(na.memory_allocated_mb, na.memory_total_mb)
                    .cmp(&pct(nb.memory_allocated_mb, nb.memory_total_mb)),
                NodeColumn::Reason => na.reason.cmp(&nb.reason),
            };
            let name = if key == NodeColumn::Name {
                natural_cmp(&na.name, &nb.name).then_with(|| na.cluster.cmp(&nb.cluster))
            } else {
                na.cluster.cmp(&nb.cluster).then_with(|| natural_cmp(&na.name, &nb.name))
            };
            primary.then(name)
        };
        rows.sort_by(|a, b| if self.reverse { by(b, a) } else { by(a, b) });
        self.sorted = rows;
    }

    pub fn refilter(&mut self, data: &Data, cluster: ClusterKeep, matchers: &mut Vec<Matcher>, narrow: bool) {
        let anchor_row = self.anchor.as_ref().and_then(|r| data.node_index.get(r).copied());
        let fuzzy = Fuzzy::new(&self.fuzzy);
        let source = if narrow { std::mem::take(&mut self.cursor.visible) } else { std::mem::take(&mut self.sorted) };
        let problems = self.problems_only;
        self.cursor.visible = filter_rows(&source, matchers, fuzzy.is_some(), |row, matcher| {
            let r = &data.nodes[row as usize];
            cluster.keeps(r.snap)
                && (!problems || is_problem_node(data.node(row)))
                && fuzzy.as_ref().is_none_or(|f| f.matches(&r.hay, matcher))
        });
        if !narrow {
            self.sorted = source;
        }
        self.cursor.place(anchor_row);
        self.sync_anchor(data);
    }

    pub fn sync_anchor(&mut self, data: &Data) {
        self.anchor = self.cursor.current().map(|r| node_ref(data, r));
    }

    pub fn prune(&mut self, data: &Data) {
        self.marked.retain(|r| data.node_index.contains_key(r));
    }
}

/// The GPU map's state: a cursor over nodes (indices into `Data::gpu_nodes`) and a cell.
pub struct GpuList {
    pub cursor: Cursor,
    pub cell: usize,
    pub sort: GpuSort,
    pub reverse: bool,
    pub problems_only: bool,
    pub anchor: Option<NodeRef>,
}

impl Default for GpuList {
    fn default() -> Self {
        Self {
            cursor: Cursor::default(),
            cell: 0,
            sort: GpuSort::Node,
            reverse: false,
            problems_only: false,
            anchor: None,
        }
    }
}

impl GpuList {
    pub fn refilter(&mut self, data: &Data, cluster: ClusterKeep) {
        let anchor_row = self.anchor.as_ref().and_then(|r| {
            let node_row = data.node_index.get(r)?;
            data.gpu_nodes.iter().position(|g| g.node == *node_row).map(|p| p as u32)
        });
        let mut rows: Vec<u32> = (0..data.gpu_nodes.len() as u32)
            .filter(|&i| {
                let g = &data.gpu_nodes[i as usize];
                cluster.keeps(data.nodes[g.node as usize].snap)
                    && (!self.problems_only
                        || is_problem_node(data.node(g.node))
                        || g.cells.contains(&GpuCell::Unavailable))
            })
            .collect();
        let count = |i: u32, want: GpuCell| data.gpu_nodes[i as usize].count(want);
        let key = |i: u32| -> usize {
            match self.sort {
                GpuSort::Node => 0,
                GpuSort::Free => count(i, GpuCell::Free),
                GpuSort::Allocated => count(i, GpuCell::Allocated(None)),
                GpuSort::Unavailable => count(i, GpuCell::Unavailable),
            }
        };
        // Cluster order is kept (the map is grouped by cluster); within it, the key (most
        // first), then the node name.
        rows.sort_by(|&a, &b| {
            let (ra, rb) = (
                &data.nodes[data.gpu_nodes[a as usize].node as usize],
                &data.nodes[data.gpu_nodes[b as usize].node as usize],
            );
            let (na, nb) = (data.node(data.gpu_nodes[a as usize].node), data.node(data.gpu_nodes[b as usize].node));
            let within = key(b).cmp(&key(a)).then_with(|| natural_cmp(&na.name, &nb.name));
            ra.snap.cmp(&rb.snap).then(if self.reverse { within.reverse() } else { within })
        });
        self.cursor.visible = rows;
        self.cursor.place(anchor_row);
        self.sync(data);
    }

    pub fn sync(&mut self, data: &Data) {
        self.anchor = self.cursor.current().map(|i| node_ref(data, data.gpu_nodes[i as usize].node));
        let cells = self.cursor.current().map_or(0, |i| data.gpu_nodes[i as usize].cells.len());
        self.cell = self.cell.min(cells.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        assert_eq!(natural_cmp("9", "10"), Ordering::Less);
        assert_eq!(natural_cmp("12_3", "12_10"), Ordering::Less);
        assert_eq!(natural_cmp("gpu-02", "gpu-10"), Ordering::Less);
        assert_eq!(natural_cmp("a", "a"), Ordering::Equal);
        assert_eq!(natural_cmp("007", "7"), Ordering::Equal);
        assert_eq!(natural_cmp("0", "00"), Ordering::Equal);
    }

    #[test]
    fn fuzzy_syntax() {
        let mut m = Matcher::new(nucleo::Config::DEFAULT);
        let hay = |s: &str| nucleo::Utf32String::from(s);
        let yes = |p: &str, h: &str, m: &mut Matcher| Fuzzy::new(p).unwrap().matches(&hay(h), m);
        assert!(yes("trl", "fd22/1 train-llm alice", &mut m));
        assert!(!yes("ltr", "fd22/1 train-llm alice", &mut m));
        assert!(yes("train alice", "fd22/1 train-llm alice", &mut m));
        assert!(!yes("train !alice", "fd22/1 train-llm alice", &mut m));
        assert!(yes("^fd22", "fd22/1 x", &mut m));
        assert!(!yes("^22", "fd22/1 x", &mut m));
        assert!(yes("'n-l", "train-llm", &mut m));
        assert!(!yes("'nl", "train-llm", &mut m));
        assert!(yes("TRAIN", "TRAIN-llm", &mut m));
        assert!(!yes("Train", "train-llm", &mut m), "an upper-case letter makes the word case-sensitive");
        assert!(yes("muller", "Müller", &mut m));
        assert!(Fuzzy::new("  ").is_none());
    }

    #[test]
    fn narrowing_rules() {
        assert!(narrows("gp", "gpu"));
        assert!(narrows("gpu", "gpu a"));
        assert!(!narrows("", "g"));
        assert!(!narrows("gpu", "gp"));
        assert!(!narrows("!gp", "!gpu"));
    }
}
