//! A table that fits its columns to the width it gets and draws only the rows it is handed.
//!
//! Columns carry a priority: when the terminal is narrow, the least important ones are left
//! out whole rather than squeezed, so two columns never run into each other (there is always
//! one blank cell between them) and long values end in `…`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use super::text;

/// One column's shape.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub title: &'static str,
    /// Never narrower than this (the column is dropped instead).
    pub min: u16,
    /// Never wider than this, however long its values.
    pub max: u16,
    /// 0 is the most important; higher numbers are dropped first when space runs out.
    pub priority: u8,
    /// Right-aligned (numbers).
    pub right: bool,
}

impl Column {
    pub const fn new(title: &'static str, min: u16, max: u16, priority: u8) -> Self {
        Self { title, min, max, priority, right: false }
    }

    pub const fn right(mut self) -> Self {
        self.right = true;
        self
    }
}

/// Where each shown column goes: `(column index, x offset, width)` in column order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fitted(pub Vec<(usize, u16, u16)>);

impl Fitted {
    pub fn shows(&self, column: usize) -> bool {
        self.0.iter().any(|(c, _, _)| *c == column)
    }
}

/// Choose and size columns for `width` cells. `natural[i]` is the widest value of column `i`
/// among the rows about to be drawn (the header counts too).
pub fn fit(columns: &[Column], natural: &[usize], width: u16) -> Fitted {
    let mut by_priority: Vec<usize> = (0..columns.len()).collect();
    by_priority.sort_by_key(|&i| (columns[i].priority, i));
    let mut chosen = vec![false; columns.len()];
    let mut used: u16 = 0;
    for &i in &by_priority {
        let gap = u16::from(used > 0);
        let need = columns[i].min + gap;
        if used.saturating_add(need) <= width {
            chosen[i] = true;
            used += need;
        }
    }
    // Grow towards each column's natural width: everyone in full when there is room, else
    // in proportion to what each still wants (leftover cells by priority).
    let mut widths: Vec<u16> = columns.iter().map(|c| c.min).collect();
    let spare = width - used;
    let wants: Vec<u16> = (0..columns.len())
        .map(|i| {
            let c = &columns[i];
            let want = (natural.get(i).copied().unwrap_or(0).max(c.title.len()) as u16).clamp(c.min, c.max);
            if chosen[i] { want - c.min } else { 0 }
        })
        .collect();
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
            if chosen[i] && widths[i] < columns[i].min + wants[i] {
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

/// The rows of `cursor` that fit in `height` lines, scrolled as little as possible to keep
/// the cursor in view; records the page size and offset for the next key and frame.
pub fn window(cursor: &crate::tui::app::lists::Cursor, height: usize) -> (usize, &[u32]) {
    cursor.height.set(height);
    let offset = scroll(cursor.offset.get(), cursor.pos, height, cursor.len());
    cursor.offset.set(offset);
    (offset, &cursor.visible[offset..(offset + height).min(cursor.len())])
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
    fn scroll_keeps_the_cursor_visible() {
        assert_eq!(scroll(0, 5, 10, 100), 0);
        assert_eq!(scroll(0, 15, 10, 100), 6);
        assert_eq!(scroll(20, 15, 10, 100), 15);
        assert_eq!(scroll(95, 3, 10, 5), 0);
        assert_eq!(scroll(90, 99, 10, 100), 90);
    }
}
