//! Proportional bars: `[████▒▒░░░░]`, one segment per kind of GPU (allocated, unavailable,
//! idle), each with its own symbol so the bar reads without colour too.

use ratatui::style::Style;
use ratatui::text::Span;

/// One part of a bar.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    pub value: u64,
    pub symbol: char,
    pub style: Style,
}

/// Cells per segment for a bar `width` cells wide: proportional (largest remainder), and a
/// segment with a non-zero value gets at least one cell whenever the bar has room for all.
pub fn split(values: &[u64], width: usize) -> Vec<usize> {
    let total: u64 = values.iter().sum();
    if total == 0 || width == 0 {
        return vec![0; values.len()];
    }
    let mut cells: Vec<usize> = values.iter().map(|v| (*v as u128 * width as u128 / total as u128) as usize).collect();
    let mut used: usize = cells.iter().sum();
    // Largest remainders first.
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(values[i] as u128 * width as u128 % total as u128));
    for &i in order.iter().cycle().take(values.len() * 2) {
        if used >= width {
            break;
        }
        if values[i] > 0 {
            cells[i] += 1;
            used += 1;
        }
    }
    // Visible minimum: borrow from the widest segment.
    let nonzero = values.iter().filter(|v| **v > 0).count();
    if nonzero <= width {
        for i in 0..values.len() {
            if values[i] > 0 && cells[i] == 0 {
                let widest = (0..cells.len()).max_by_key(|&j| cells[j]).unwrap_or(i);
                if cells[widest] > 1 {
                    cells[widest] -= 1;
                    cells[i] = 1;
                }
            }
        }
    }
    cells
}

/// The spans of a bar `width` cells wide (brackets not included).
pub fn bar(segments: &[Segment], width: usize) -> Vec<Span<'static>> {
    let values: Vec<u64> = segments.iter().map(|s| s.value).collect();
    split(&values, width)
        .into_iter()
        .zip(segments)
        .filter(|(n, _)| *n > 0)
        .map(|(n, seg)| Span::styled(seg.symbol.to_string().repeat(n), seg.style))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_proportional_and_fills_the_width() {
        assert_eq!(split(&[5, 5], 10), vec![5, 5]);
        assert_eq!(split(&[1, 2], 9), vec![3, 6]);
        assert_eq!(split(&[0, 0], 9), vec![0, 0]);
        assert_eq!(split(&[1, 1, 1], 10).iter().sum::<usize>(), 10);
        // A single unavailable GPU out of 1000 is still visible.
        assert_eq!(split(&[999, 1], 10), vec![9, 1]);
        assert_eq!(split(&[1, 1, 1], 2).iter().sum::<usize>(), 2);
    }
}
