//! A cursor over the visible rows of a list, that the views scroll and the keys move.

use std::cell::Cell;

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
