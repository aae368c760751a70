//! The submit form: one line per field, labelled as the target cluster calls it (the first
//! problem shown under its field), and the target's own form of the job (an sbatch script, a
//! Job manifest …), live, with what it will not carry; and where the job could start: every
//! cluster ranked ([`crate::fleet::advice`]), the target marked `▸` — in a panel under the
//! form when the screen is wide, in the form's spare lines when it is not.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use super::{block, put};
use crate::fleet::advice::Verdict;
use crate::tui::app::App;
use crate::tui::app::form::{Field, SubmitForm, TargetFields};
use crate::tui::theme::Slot;
use crate::tui::widgets::text;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let theme = app.theme();
    let form = app.form();
    let target = app.fleet().cluster(form.value(Field::Cluster).trim());
    let fields =
        target.map(|c| TargetFields { spec: c.spec_fields.clone(), shape: c.shape_fields.clone() }).unwrap_or_default();
    let side_by_side = area.width >= 110;
    let form_h = Field::ALL.len() as u16 + 5;
    let [left, right] = if side_by_side {
        Layout::horizontal([Constraint::Length(area.width / 2), Constraint::Min(10)]).areas(area)
    } else {
        Layout::vertical([Constraint::Length(form_h.min(area.height.saturating_sub(4))), Constraint::Min(3)])
            .areas(area)
    };
    // Wide and tall enough: the advice gets a panel of its own under the form.
    let (left, panel) = if side_by_side && left.height >= form_h + 4 && !form.advice.is_empty() {
        let [form_area, panel] = Layout::vertical([Constraint::Length(form_h), Constraint::Min(4)]).areas(left);
        (form_area, Some(panel))
    } else {
        (left, None)
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
        put(buf, inner.x, y, label_w, &text::fit(field.label_on(&fields), label_w as usize, false), label_style);
        let x = inner.x + label_w + 1;
        if *field == Field::Command
            && let Some(script) = &form.script
        {
            let n = script.lines().count();
            let first = script.lines().find(|l| !l.starts_with("#!")).unwrap_or("");
            let lines = crate::model::words::counted(n as u64, "line", "lines");
            let shown = format!("script, {lines}: {first}   (backspace: write a command instead)");
            put(buf, x, y, value_w, &shown, theme.style(Slot::Base));
        } else {
            let input = &form.values[i];
            let value = input.text();
            if value.is_empty() && !focused {
                let hint = field.hint_on(&fields);
                if !hint.is_empty() {
                    put(buf, x, y, value_w, &format!("({hint})"), theme.style(Slot::Dim));
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
    // No panel: the advice takes the form's spare lines, one per cluster.
    if panel.is_none() {
        for (i, (line, style)) in
            advice_lines(app, form).into_iter().take(bottom.saturating_sub(y) as usize).enumerate()
        {
            let label = if i == 0 { "placement" } else { "" };
            put(buf, inner.x, y, label_w, label, theme.style(Slot::Dim));
            put(buf, inner.x + label_w + 1, y, value_w, &line, style);
            y += 1;
        }
    }
    if let Some(pos) = cursor
        && pos.x < inner.x + inner.width
        && app.dialog().is_none()
        && app.input().is_none()
        && !app.help_open()
    {
        super::text_cursor(frame, pos);
    }

    if let Some(panel) = panel {
        let b = block(app, " placement · where it could start ", false);
        let inner = b.inner(panel);
        frame.render_widget(b, panel);
        let buf = frame.buffer_mut();
        let mut y = inner.y;
        let bottom = inner.y + inner.height;
        for (advice, (line, style)) in form.advice.iter().zip(advice_lines(app, form)) {
            if y >= bottom {
                break;
            }
            put(buf, inner.x, y, inner.width, &line, style);
            y += 1;
            for caveat in &advice.caveats {
                if y >= bottom {
                    break;
                }
                put(
                    buf,
                    inner.x + 4,
                    y,
                    inner.width.saturating_sub(4),
                    &format!("note: {caveat}"),
                    theme.style(Slot::Dim),
                );
                y += 1;
            }
        }
    }

    let updating = if form.render.is_open() { " · updating" } else { "" };
    let (ptitle, lines) = match &form.preview {
        Ok(native) => {
            let mut lines: Vec<Line> = native
                .warnings
                .iter()
                .map(|w| Line::styled(format!("! {}", text::clean(w)), theme.style(Slot::Warning)))
                .collect();
            lines.extend(
                native.text.lines().map(|l| Line::styled(text::clean(l).into_owned(), theme.style(Slot::Base))),
            );
            (format!(" {}{updating} ", native.dialect.title()), lines)
        }
        Err(e) if e.is_empty() && form.render.is_open() => {
            let cluster = text::clean(form.value(Field::Cluster)).into_owned();
            (" preview ".to_string(), vec![Line::styled(format!("asking {cluster}…"), theme.style(Slot::Dim))])
        }
        Err(e) => {
            let b = block(app, format!(" preview · not ready{updating} "), false);
            let inner = b.inner(right);
            frame.render_widget(b, right);
            // The whole message, wrapped: it says what to fix.
            let p =
                Paragraph::new(text::clean(e).into_owned()).style(theme.style(Slot::Error)).wrap(Wrap { trim: false });
            frame.render_widget(p, inner);
            return;
        }
    };
    let b = block(app, ptitle, false);
    let inner = b.inner(right);
    frame.render_widget(b, right);
    let lines: Vec<Line> = lines
        .into_iter()
        .take(inner.height as usize)
        .map(|l| {
            let style = l.style;
            Line::styled(text::truncate(&l.to_string(), inner.width as usize).into_owned(), style)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// One line per cluster, best first: `▸1 now    fd22  4 of 4 a100 idle in partition gpu`, the
/// price where there is one; styled by verdict. The target cluster is marked `▸`.
fn advice_lines(app: &App, form: &SubmitForm) -> Vec<(String, Style)> {
    let theme = app.theme();
    let target = form.value(Field::Cluster).trim();
    let width = form.advice.iter().map(|a| text::width(&a.cluster)).max().unwrap_or(0);
    form.advice
        .iter()
        .map(|a| {
            let mark = if a.cluster == target { "▸" } else { " " };
            let price =
                a.price_per_hour.map(|p| format!(" · ${}/h", crate::columns::format::cost(p))).unwrap_or_default();
            let cluster = text::fit(&a.cluster, width, false);
            let line = format!("{mark}{} {:<7} {cluster}  {}{price}", a.rank, a.verdict.as_str(), a.reason);
            let slot = match a.verdict {
                Verdict::Now => Slot::JobRunning,
                Verdict::Queued => Slot::JobPending,
                Verdict::Cannot | Verdict::Unknown => Slot::Dim,
            };
            (line, theme.style(slot))
        })
        .collect()
}
