//! The history screen: the finished jobs of every cluster (`sacct` on Slurm, the ended jobs
//! of the current snapshot elsewhere), read once per opening or `r`, never per refresh.
//! Pure: the rows, the lines said above them, the age a `:history 6h` asks for.

use chrono::{DateTime, Duration, Utc};

use super::latest::Latest;
use super::lists::Cursor;
use crate::columns::Shape;
use crate::model::{History, JobRecord, JobRef};
use crate::safe_text::printable;

/// How far back the history looks unless told (`:history 6h`).
pub const DEFAULT_AGE: Duration = Duration::hours(crate::model::history::DEFAULT_HOURS);

/// The columns, as `flightdeck jobs --since` prints them (the end without its year: the
/// title says since when).
pub const COLUMNS: [Shape; 11] = [
    Shape::new("JOB", 6, 32, 0).content_first(),
    Shape::new("NAME", 10, 50, 1),
    Shape::new("USER", 6, 12, 3),
    Shape::new("PARTITION", 9, 14, 6),
    Shape::new("STATE", 9, 13, 0),
    Shape::new("EXIT", 4, 6, 2).right(),
    Shape::new("END", 11, 11, 1),
    Shape::new("ELAPSED", 8, 12, 3).right(),
    Shape::new("MAXRSS", 6, 8, 5).right(),
    Shape::new("GPUS", 4, 5, 4).right(),
    Shape::new("GPU-H", 5, 9, 4).right(),
];

/// The index of the STATE column (coloured by state).
pub const STATE_COLUMN: usize = 4;

/// What the history screen holds.
#[derive(Debug, Default)]
pub struct HistoryView {
    /// How far back it looks (`None` before it was first opened: [`DEFAULT_AGE`]).
    pub age: Option<Duration>,
    /// Jobs that ended at or after this were asked for.
    pub since: Option<DateTime<Utc>>,
    /// The read in flight.
    pub read: Latest<()>,
    /// Whether any answer has come yet.
    pub loaded: bool,
    /// Every cluster's records, newest end first.
    pub records: Vec<JobRecord>,
    /// Clusters that could not answer: `fd22: sacct: …`.
    pub errors: Vec<String>,
    /// What the answers say of themselves: notes, how many were left out.
    pub notes: Vec<String>,
    /// Where each cluster's records came from: `fd22 sacct`.
    pub sources: Vec<String>,
    /// Over indices into `records` (the cluster filter applied).
    pub cursor: Cursor,
    /// Widest cell of each column over all records (and the header).
    pub widths: Vec<usize>,
}

impl HistoryView {
    pub fn age(&self) -> Duration {
        self.age.unwrap_or(DEFAULT_AGE)
    }

    /// The record under the cursor.
    pub fn current(&self) -> Option<&JobRecord> {
        self.records.get(self.cursor.current()? as usize)
    }

    /// Take the answers of every cluster: records merged newest end first, errors and notes
    /// as lines naming their cluster. The cursor stays on the job it was on, if it is still
    /// there.
    pub fn load(&mut self, results: Vec<(String, Result<History, String>)>, cluster: Option<&str>) {
        let selected = self.current().map(|r| r.job.job_ref.clone());
        self.records.clear();
        self.errors.clear();
        self.notes.clear();
        self.sources.clear();
        for (name, result) in results {
            match result {
                Ok(h) => {
                    if !h.source.is_empty() {
                        self.sources.push(printable(&format!("{name} {}", h.source)).into_owned());
                    }
                    for note in &h.notes {
                        self.notes.push(printable(&format!("{name}: {note}")).into_owned());
                    }
                    if h.left_out > 0 {
                        self.notes.push(format!(
                            "{name}: {} older finished jobs left out (the newest {} kept)",
                            h.left_out,
                            h.records.len()
                        ));
                    }
                    self.records.extend(h.records);
                }
                Err(e) => self.errors.push(printable(&format!("{name}: {e}")).into_owned()),
            }
        }
        self.records.sort_by(|a, b| {
            b.job
                .end_time
                .cmp(&a.job.end_time)
                .then_with(|| a.job.job_ref.cluster.cmp(&b.job.job_ref.cluster))
                .then_with(|| crate::columns::natural_cmp(&a.job.job_ref.id, &b.job.job_ref.id))
        });
        let mut widths: Vec<usize> = COLUMNS.iter().map(|c| c.title.len()).collect();
        for r in &self.records {
            for (w, cell) in widths.iter_mut().zip(cells(r)) {
                *w = (*w).max(crate::tui::widgets::text::width(&cell));
            }
        }
        self.widths = widths;
        self.loaded = true;
        self.refilter(cluster, selected.as_ref());
    }

    /// Show the records of `cluster` only (or all), the cursor on `keep` where it can be.
    pub fn refilter(&mut self, cluster: Option<&str>, keep: Option<&JobRef>) {
        let keep = keep.cloned().or_else(|| self.current().map(|r| r.job.job_ref.clone()));
        self.cursor.visible = (0..self.records.len() as u32)
            .filter(|&i| cluster.is_none_or(|c| self.records[i as usize].job.job_ref.cluster == c))
            .collect();
        let row =
            keep.and_then(|k| self.cursor.visible.iter().copied().find(|&i| self.records[i as usize].job.job_ref == k));
        self.cursor.place(row);
    }
}

/// A record's cells, one per [`COLUMNS`] entry (the CLI's, with a shorter end time), `-`
/// where there is no value; backend text made printable.
pub fn cells(r: &JobRecord) -> Vec<String> {
    crate::output::history_cells(r, "%m-%d %H:%M").into_iter().map(|c| printable(&c).into_owned()).collect()
}

/// An age as `:history` takes it (see [`crate::model::history::parse_age`]).
pub fn parse_age(text: &str) -> Result<Duration, String> {
    crate::model::history::parse_age(text)
}

/// An age in the words of the title: `24 h`, `2 d`, `30 min`.
pub fn age_text(age: Duration) -> String {
    let m = age.num_minutes();
    if m % (7 * 1440) == 0 && m >= 2 * 7 * 1440 {
        format!("{} w", m / (7 * 1440))
    } else if m % 1440 == 0 && m > 1440 {
        format!("{} d", m / 1440)
    } else if m % 60 == 0 {
        format!("{} h", m / 60)
    } else {
        format!("{m} min")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Job, JobState};

    #[test]
    fn ages_parse_in_four_units_and_nothing_else() {
        assert_eq!(parse_age("30m"), Ok(Duration::minutes(30)));
        assert_eq!(parse_age("6h"), Ok(Duration::hours(6)));
        assert_eq!(parse_age(" 2d "), Ok(Duration::days(2)));
        assert_eq!(parse_age("1w"), Ok(Duration::weeks(1)));
        for bad in ["", "h", "0h", "-1d", "6", "6x", "1.5h", "6 h", "99999999999w", "é"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
        assert_eq!(age_text(Duration::hours(24)), "24 h");
        assert_eq!(age_text(Duration::days(2)), "2 d");
        assert_eq!(age_text(Duration::weeks(2)), "2 w");
        assert_eq!(age_text(Duration::minutes(90)), "90 min");
    }

    #[test]
    fn cells_mirror_the_cli_columns() {
        let mut j = Job::new(JobRef::new("fd22", "7"), JobState::Failed);
        j.name = "x\u{1b}[2J".into();
        j.exit = Some(crate::model::ExitStatus { code: 1, signal: None });
        let r = JobRecord { job: j, elapsed_secs: Some(90_061), max_rss_mb: Some(2048), gpu_hours: Some(4.0) };
        let c = cells(&r);
        assert_eq!(c.len(), COLUMNS.len());
        assert!(!c[1].contains('\u{1b}'), "{c:?}");
        assert_eq!((c[4].as_str(), c[5].as_str(), c[6].as_str()), ("failed", "1", "-"));
        assert_eq!((c[7].as_str(), c[8].as_str(), c[9].as_str(), c[10].as_str()), ("1-01:01:01", "2.0G", "-", "4.00"));
    }
}
