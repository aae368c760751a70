//! A table that fits its columns to the width it gets and draws only the rows it is handed.
//!
//! Columns carry a priority: when the terminal is narrow, the least important ones are left
//! out whole rather than squeezed, so two columns never run into each other (there is always
//! one blank cell between them) and long values end in `…`. A column marked content-first
//! (an identifier) gets its whole width before the others share what is left.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use super::text;

/// One column's shape: the width hints of a core column (`crate::columns`).
pub use crate::columns::Shape as Column;

/// Where each shown column goes: `(column index, x offset, width)` in column order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fitted(pub Vec<(usize, u16, u16)>);

impl Fitted {
    pub fn shows(&self, column: usize) -> bool {
        self.0.iter().any(|(c, _, _)| *c == column)
    }
}

/// Choose and size columns for `width` cells. `natural[i]` is the widest value of column `i`
/// among the rows of the table (the header counts too).
///
/// Columns are taken by priority at their minimum width, except a content-first column,
/// which is taken at its full width when that still fits (and else grows first): an
/// identifier in full is worth more than a low-priority column (dropped instead). Then the
/// others grow towards their
/// natural width: in full when there is room, else in proportion to what each still wants
/// (leftover cells by priority).
pub fn fit(columns: &[Column], natural: &[usize], width: u16) -> Fitted {
    let mut by_priority: Vec<usize> = (0..columns.len()).collect();
    by_priority.sort_by_key(|&i| (columns[i].priority, i));
    // What each column would take if there were room for everything.
    let full: Vec<u16> = (0..columns.len())
        .map(|i| {
            let c = &columns[i];
            let natural = natural.get(i).copied().unwrap_or(0).max(c.title.len()).min(usize::from(u16::MAX));
            (natural as u16).clamp(c.min, c.max.max(c.min))
        })
        .collect();
    let mut chosen = vec![false; columns.len()];
    let mut widths: Vec<u16> = columns.iter().map(|c| c.min).collect();
    let mut used: u16 = 0;
    for &i in &by_priority {
        let gap = u16::from(used > 0);
        let c = &columns[i];
        if c.optional && natural.get(i).is_none_or(|w| *w == 0) {
            continue;
        }
        let fits = |w: u16| used.saturating_add(w).saturating_add(gap) <= width;
        let take = if c.content_first && fits(full[i]) { full[i] } else { c.min };
        if fits(take) {
            chosen[i] = true;
            widths[i] = take;
            used += take + gap;
        }
    }
    let mut spare = width - used;
    // A content-first column too wide to be taken in full still grows first.
    for &i in &by_priority {
        if chosen[i] && columns[i].content_first {
            let take = (full[i] - widths[i]).min(spare);
            widths[i] += take;
            spare -= take;
        }
    }
    let wants: Vec<u16> = (0..columns.len()).map(|i| if chosen[i] { full[i] - widths[i] } else { 0 }).collect();
    let total: u32 = wants.iter().map(|w| u32::from(*w)).sum();
    if total <= u32::from(spare) {
        for (w, want) in widths.iter_mut().zip(&wants) {
            *w += want;
        }
    } else {
        let mut left = spare;
        for (w, want) in widths.iter_mut().zip(&wants) {
            let share = (u32::from(*want) * u32::from(spare) / total) as u16;
            *w += share;
            left -= share;
        }
        for &i in &by_priority {
            if left == 0 {
                break;
            }
            if chosen[i] && widths[i] < full[i] {
                widths[i] += 1;
                left -= 1;
            }
        }
    }
    let mut x = 0;
    let mut out = Vec::new();
    for i in 0..columns.len() {
        if chosen[i] {
            out.push((i, x, widths[i]));
            x += widths[i] + 1;
        }
    }
    Fitted(out)
}

/// One row to draw: its cells (one per column, in column order), the row's style, and a
/// style per cell that overrides it (state colours).
pub struct RowCells<'a> {
    pub cells: Vec<std::borrow::Cow<'a, str>>,
    pub style: Style,
    pub cell_styles: Vec<Option<Style>>,
    /// Two characters drawn before the first column: cursor and mark.
    pub gutter: [char; 2],
}

/// Width of the gutter before the first column.
pub const GUTTER: u16 = 2;

/// Draw the header line at `area.y` and the rows below it (as many as fit).
pub fn render(buf: &mut Buffer, area: Rect, columns: &[Column], fitted: &Fitted, header: Style, rows: &[RowCells<'_>]) {
    if area.height == 0 || area.width <= GUTTER {
        return;
    }
    let x0 = area.x + GUTTER;
    let line = Rect { height: 1, ..area };
    buf.set_style(line, header);
    for &(c, x, w) in &fitted.0 {
        let s = text::fit(columns[c].title, w as usize, columns[c].right);
        buf.set_stringn(x0 + x, area.y, s, w as usize, header);
    }
    for (n, row) in rows.iter().enumerate().take(area.height.saturating_sub(1) as usize) {
        let y = area.y + 1 + n as u16;
        buf.set_style(Rect { y, height: 1, ..area }, row.style);
        let g: String = row.gutter.iter().collect();
        buf.set_stringn(area.x, y, g, GUTTER as usize, row.style);
        for &(c, x, w) in &fitted.0 {
            let value = row.cells.get(c).map(|s| s.as_ref()).unwrap_or("");
            let s = text::fit(value, w as usize, columns[c].right);
            let style = row.cell_styles.get(c).copied().flatten().map_or(row.style, |st| row.style.patch(st));
            buf.set_stringn(x0 + x, y, s, w as usize, style);
        }
    }
}

/// The rows of `visible` that fit in `height` lines with the cursor at `pos`, scrolled as
/// little as possible from the last frame's `offset`; returns the new offset and the rows.
/// The caller keeps the offset (and the page size) for the next key and frame.
pub fn window(visible: &[u32], pos: usize, offset: usize, height: usize) -> (usize, &[u32]) {
    let offset = scroll(offset, pos, height, visible.len());
    (offset, &visible[offset..(offset + height).min(visible.len())])
}

/// The first row to show so that `cursor` is visible in a window of `height` rows, moving
/// the previous `offset` as little as possible.
pub fn scroll(offset: usize, cursor: usize, height: usize, len: usize) -> usize {
    if height == 0 || len == 0 {
        return 0;
    }
    let mut off = offset.min(len.saturating_sub(1));
    if cursor < off {
        off = cursor;
    } else if cursor >= off + height {
        off = cursor + 1 - height;
    }
    // Do not leave blank space at the bottom when the list got shorter.
    off.min(len.saturating_sub(height))
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLS: [Column; 4] = [
        Column::new("ID", 4, 8, 0),
        Column::new("NAME", 6, 30, 1),
        Column::new("A", 5, 5, 3),
        Column::new("B", 5, 5, 2),
    ];

    #[test]
    fn narrow_widths_drop_low_priority_columns_whole() {
        let f = fit(&COLS, &[8, 30, 5, 5], 80);
        assert_eq!(f.0.len(), 4);
        let f = fit(&COLS, &[8, 30, 5, 5], 17);
        // ID(4) + NAME(6) + B(5) + 2 gaps = 17; A is dropped.
        assert!(f.shows(0) && f.shows(1) && f.shows(3) && !f.shows(2), "{f:?}");
        // No overlap: each starts after the previous one's end plus a gap.
        for pair in f.0.windows(2) {
            assert!(pair[0].1 + pair[0].2 < pair[1].1, "{f:?}");
        }
    }

    #[test]
    fn optional_columns_show_only_with_values() {
        const WITH_COST: [Column; 2] = [Column::new("ID", 4, 8, 0), Column::new("$/H", 4, 8, 6).right().optional()];
        assert!(!fit(&WITH_COST, &[6, 0], 80).shows(1), "no row has a cost: no column");
        let f = fit(&WITH_COST, &[6, 5], 80);
        assert!(f.shows(0) && f.shows(1), "{f:?}");
    }

    #[test]
    fn content_first_columns_fit_their_content_before_the_others_grow() {
        const KUBE: [Column; 2] = [Column::new("ID", 7, 32, 0).content_first(), Column::new("NAME", 16, 50, 0)];
        // `ml:pod:train-0` (14) and a long name, in 40 cells: the id in full, the name the rest.
        let f = fit(&KUBE, &[14, 60], 40);
        assert_eq!(f.0, vec![(0, 0, 14), (1, 15, 25)]);
        // Without the mark the two would share, and the id would be cut.
        const SHARED: [Column; 2] = [Column::new("ID", 7, 32, 0), Column::new("NAME", 16, 50, 0)];
        let f = fit(&SHARED, &[14, 60], 40);
        assert!(f.0[0].2 < 14, "{f:?}");
        // An id that cannot have its full width still gets the spare cells.
        let f = fit(&KUBE, &[32, 60], 30);
        assert_eq!(f.0, vec![(0, 0, 13), (1, 14, 16)]);
        // In full, the id pushes out a lower-priority column rather than being cut.
        const THREE: [Column; 3] = [
            Column::new("ID", 7, 32, 0).content_first(),
            Column::new("NAME", 16, 50, 0),
            Column::new("REASON", 10, 40, 4),
        ];
        let f = fit(&THREE, &[23, 16, 10], 45);
        assert_eq!(f.0, vec![(0, 0, 23), (1, 24, 16)]);
        let f = fit(&THREE, &[23, 16, 10], 52);
        assert!(f.shows(2), "{f:?}");
    }

    #[test]
    fn window_follows_the_cursor() {
        let rows: Vec<u32> = (0..100).collect();
        let (off, w) = window(&rows, 15, 0, 10);
        assert_eq!((off, w.first(), w.len()), (6, Some(&6), 10));
        let (off, w) = window(&rows[..3], 2, 50, 10);
        assert_eq!((off, w.len()), (0, 3));
    }

    #[test]
    fn scroll_keeps_the_cursor_visible() {
        assert_eq!(scroll(0, 5, 10, 100), 0);
        assert_eq!(scroll(0, 15, 10, 100), 6);
        assert_eq!(scroll(20, 15, 10, 100), 15);
        assert_eq!(scroll(95, 3, 10, 5), 0);
        assert_eq!(scroll(90, 99, 10, 100), 90);
    }
}
