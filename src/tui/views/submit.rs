//! The submit form: one line per field (the first problem shown under its field), and the
//! sbatch script it makes, live.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use super::{block, put};
use crate::tui::app::App;
use crate::tui::app::form::Field;
use crate::tui::theme::Slot;
use crate::tui::widgets::text;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let form = app.form();
    let side_by_side = area.width >= 110;
    let form_h = Field::ALL.len() as u16 + 5;
    let [left, right] = if side_by_side {
        Layout::horizontal([Constraint::Length(area.width / 2), Constraint::Min(10)]).areas(area)
    } else {
        Layout::vertical([Constraint::Length(form_h.min(area.height.saturating_sub(4))), Constraint::Min(3)])
            .areas(area)
    };

    let mut title = " New job ".to_string();
    if let Some(from) = &form.loaded_from {
        title = format!(" New job · from {} ", text::truncate(from, 40));
    }
    let b = block(app, title, true);
    let inner = b.inner(left);
    frame.render_widget(b, left);
    let label_w = 11u16;
    let value_w = inner.width.saturating_sub(label_w + 1);
    let mut y = inner.y;
    let bottom = inner.y + inner.height;
    let mut cursor = None;
    let buf = frame.buffer_mut();
    for (i, field) in Field::ALL.iter().enumerate() {
        if y >= bottom {
            break;
        }
        let focused = i == form.focus && form.path_prompt.is_none();
        let label_style = if focused { theme.style(Slot::Selection) } else { theme.style(Slot::Dim) };
        put(buf, inner.x, y, label_w, &text::fit(field.label(), label_w as usize, false), label_style);
        let x = inner.x + label_w + 1;
        if *field == Field::Command
            && let Some(script) = &form.script
        {
            let n = script.lines().count();
            let first = script.lines().find(|l| !l.starts_with("#!")).unwrap_or("");
            let shown = format!("script, {n} lines: {first}   (backspace: write a command instead)");
            put(buf, x, y, value_w, &shown, theme.style(Slot::Base));
        } else {
            let input = &form.values[i];
            let value = input.text();
            if value.is_empty() && !focused {
                if !field.hint().is_empty() {
                    put(buf, x, y, value_w, &format!("({})", field.hint()), theme.style(Slot::Dim));
                }
            } else {
                // Keep the cursor in view for long values.
                let before: String = value.chars().take(input.cursor()).collect();
                let bw = text::width(&before);
                let skip = bw.saturating_sub(value_w.saturating_sub(1) as usize);
                let shown: String = if skip > 0 { value.chars().skip(skip).collect() } else { value.to_string() };
                put(buf, x, y, value_w, &shown, theme.style(Slot::Base));
                if focused {
                    cursor = Some(Position { x: x + (bw - skip) as u16, y });
                }
            }
        }
        y += 1;
        if let Some(problem) = form.problem_on(*field)
            && y < bottom
        {
            put(buf, x, y, value_w, &format!("↑ {problem}"), theme.style(Slot::Error));
            y += 1;
        }
    }
    if let Some(p) = form.problem.as_ref().filter(|p| p.field.is_none())
        && y < bottom
    {
        put(buf, inner.x, y, inner.width, &p.message, theme.style(Slot::Error));
        y += 1;
    }
    if let Some(prompt) = &form.path_prompt
        && y < bottom
    {
        let label = "load spec: ";
        put(buf, inner.x, y, inner.width, label, theme.style(Slot::FooterKey));
        let x = inner.x + label.len() as u16;
        put(buf, x, y, inner.width.saturating_sub(label.len() as u16), prompt.text(), theme.style(Slot::Base));
        cursor = Some(Position {
            x: x + text::width(&prompt.text().chars().take(prompt.cursor()).collect::<String>()) as u16,
            y,
        });
    }
    if let Some(pos) = cursor
        && pos.x < inner.x + inner.width
        && app.dialog().is_none()
        && app.input().is_none()
        && !app.help_open()
    {
        super::text_cursor(frame, pos);
    }

    let (ptitle, body, style) = match &form.preview {
        Ok(script) => (" sbatch script ", script.clone(), theme.style(Slot::Base)),
        Err(e) => (" sbatch script · not ready ", e.clone(), theme.style(Slot::Error)),
    };
    let b = block(app, ptitle, false);
    let inner = b.inner(right);
    frame.render_widget(b, right);
    if form.preview.is_err() {
        // The whole message, wrapped: it says what to fix.
        let p = Paragraph::new(text::clean(&body).into_owned()).style(style).wrap(Wrap { trim: false });
        frame.render_widget(p, inner);
        return;
    }
    let lines: Vec<Line> = body
        .lines()
        .take(inner.height as usize)
        .map(|l| Line::styled(text::truncate(l, inner.width as usize).into_owned(), style))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
