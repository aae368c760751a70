//! Colours as theme files write them, the terminal's colour depth, and the mapping of
//! 24-bit colours onto the xterm 256-colour palette.

use ratatui::style::Color;

/// How many colours the terminal shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColorDepth {
    /// 24-bit colour: `#rrggbb` is sent as is.
    TrueColor,
    /// The xterm 256-colour palette: `#rrggbb` becomes the nearest palette entry.
    Ansi256,
    /// No colour at all (`NO_COLOR`, `TERM=dumb`): only bold, reversed, underline, dim, italic.
    None,
}

impl ColorDepth {
    /// [`detect_color_depth`] over this process's environment.
    pub fn from_env() -> ColorDepth {
        detect_color_depth(|name| std::env::var(name).ok())
    }
}

/// The colour depth the environment asks for: `NO_COLOR` set and non-empty, or `TERM=dumb`:
/// none; `COLORTERM=truecolor` or `24bit`: true colour; otherwise the 256-colour palette.
pub fn detect_color_depth(env: impl Fn(&str) -> Option<String>) -> ColorDepth {
    if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return ColorDepth::None;
    }
    if env("TERM").is_some_and(|t| t.trim() == "dumb") {
        return ColorDepth::None;
    }
    match env("COLORTERM").map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if v == "truecolor" || v == "24bit" => ColorDepth::TrueColor,
        _ => ColorDepth::Ansi256,
    }
}

/// A colour as written in a theme file, before the depth is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThemeColor {
    /// `"reset"`: the terminal's own default colour.
    Reset,
    /// One of the 16 named colours; the terminal decides how they look.
    Named(Color),
    /// `"ansi:NN"`: an entry of the 256-colour palette.
    Indexed(u8),
    /// `"#rrggbb"`.
    Rgb(u8, u8, u8),
}

/// Named colours (after dropping `_`, `-` and spaces, lower case). `gray` is ANSI 7,
/// `dark_gray` ANSI 8, `white` ANSI 15 (bright white), as in ratatui.
const NAMED: &[(&str, Color)] = &[
    ("black", Color::Black),
    ("red", Color::Red),
    ("green", Color::Green),
    ("yellow", Color::Yellow),
    ("blue", Color::Blue),
    ("magenta", Color::Magenta),
    ("cyan", Color::Cyan),
    ("gray", Color::Gray),
    ("grey", Color::Gray),
    ("darkgray", Color::DarkGray),
    ("darkgrey", Color::DarkGray),
    ("lightred", Color::LightRed),
    ("lightgreen", Color::LightGreen),
    ("lightyellow", Color::LightYellow),
    ("lightblue", Color::LightBlue),
    ("lightmagenta", Color::LightMagenta),
    ("lightcyan", Color::LightCyan),
    ("white", Color::White),
];

/// What a colour may be, for error messages.
pub(crate) const COLOR_HELP: &str = "expected \"#rrggbb\", a colour name (black, red, green, yellow, blue, magenta, \
     cyan, gray, dark_gray, light_red, light_green, light_yellow, light_blue, light_magenta, light_cyan, white), \
     \"ansi:0\"..\"ansi:255\" or \"reset\"";

impl ThemeColor {
    pub fn parse(text: &str) -> Option<ThemeColor> {
        let text = text.trim();
        if let Some(hex) = text.strip_prefix('#') {
            if hex.len() != 6 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
            return Some(ThemeColor::Rgb(byte(0)?, byte(2)?, byte(4)?));
        }
        let lower = text.to_ascii_lowercase();
        if let Some(index) = lower.strip_prefix("ansi:") {
            return index.trim().parse::<u8>().ok().map(ThemeColor::Indexed);
        }
        if lower == "reset" || lower == "default" {
            return Some(ThemeColor::Reset);
        }
        let squashed: String = lower.chars().filter(|c| !matches!(c, '_' | '-' | ' ')).collect();
        NAMED.iter().find(|(name, _)| *name == squashed).map(|(_, color)| ThemeColor::Named(*color))
    }

    /// The colour to draw with at `depth`; `None` draws no colour at all.
    pub fn at_depth(self, depth: ColorDepth) -> Option<Color> {
        match (self, depth) {
            (_, ColorDepth::None) => None,
            (ThemeColor::Reset, _) => Some(Color::Reset),
            (ThemeColor::Named(color), _) => Some(color),
            (ThemeColor::Indexed(index), _) => Some(Color::Indexed(index)),
            (ThemeColor::Rgb(r, g, b), ColorDepth::TrueColor) => Some(Color::Rgb(r, g, b)),
            (ThemeColor::Rgb(r, g, b), ColorDepth::Ansi256) => Some(Color::Indexed(rgb_to_ansi256(r, g, b))),
        }
    }
}

/// The channel values of the 6×6×6 cube (palette entries 16..=231).
const CUBE: [u8; 6] = [0, 95, 135, 175, 215, 255];

/// The xterm-256 palette entry nearest to a 24-bit colour, from the 6×6×6 colour cube
/// (16..=231) and the 24-step grey ramp (232..=255, 8 to 238 in steps of 10). The 16 named
/// colours (0..=15) are left out: terminals redefine them.
pub fn rgb_to_ansi256(r: u8, g: u8, b: u8) -> u8 {
    // Nearest cube level per channel (levels are 0, 95, then every 40).
    let level = |v: u8| -> usize {
        match v {
            0..48 => 0,
            48..115 => 1,
            v => usize::from((v - 35) / 40),
        }
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube_index = 16 + 36 * ri + 6 * gi + bi;
    let cube = (CUBE[ri], CUBE[gi], CUBE[bi]);

    // Nearest grey on the ramp, from the average.
    let average = (u32::from(r) + u32::from(g) + u32::from(b)) / 3;
    let grey_step = if average > 238 { 23 } else { average.saturating_sub(3) / 10 }.min(23);
    let grey_value = (8 + 10 * grey_step) as u8;
    let grey_index = 232 + grey_step as usize;

    let distance = |(cr, cg, cb): (u8, u8, u8)| -> u32 {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).unsigned_abs().pow(2);
        d(r, cr) + d(g, cg) + d(b, cb)
    };
    if distance((grey_value, grey_value, grey_value)) < distance(cube) { grey_index as u8 } else { cube_index as u8 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn depth_from_environment() {
        assert_eq!(detect_color_depth(env(&[])), ColorDepth::Ansi256);
        assert_eq!(detect_color_depth(env(&[("NO_COLOR", "1"), ("COLORTERM", "truecolor")])), ColorDepth::None);
        assert_eq!(detect_color_depth(env(&[("NO_COLOR", ""), ("COLORTERM", "truecolor")])), ColorDepth::TrueColor);
        assert_eq!(detect_color_depth(env(&[("TERM", "dumb"), ("COLORTERM", "24bit")])), ColorDepth::None);
        assert_eq!(detect_color_depth(env(&[("TERM", "xterm-256color")])), ColorDepth::Ansi256);
        assert_eq!(detect_color_depth(env(&[("COLORTERM", "24bit")])), ColorDepth::TrueColor);
        assert_eq!(detect_color_depth(env(&[("COLORTERM", "TrueColor")])), ColorDepth::TrueColor);
        assert_eq!(detect_color_depth(env(&[("COLORTERM", "yes")])), ColorDepth::Ansi256);
    }

    #[test]
    fn known_palette_entries() {
        assert_eq!(rgb_to_ansi256(0xff, 0, 0), 196);
        assert_eq!(rgb_to_ansi256(0, 0, 0), 16);
        assert_eq!(rgb_to_ansi256(0x80, 0x80, 0x80), 244);
        assert_eq!(rgb_to_ansi256(0xff, 0xff, 0xff), 231);
        assert_eq!(rgb_to_ansi256(0, 0xff, 0), 46);
        assert_eq!(rgb_to_ansi256(0, 0, 0xff), 21);
        assert_eq!(rgb_to_ansi256(0x5f, 0x87, 0xaf), 67, "exact cube colour");
        assert_eq!(rgb_to_ansi256(0xee, 0xee, 0xee), 255, "top of the grey ramp");
        assert_eq!(rgb_to_ansi256(0x08, 0x08, 0x08), 232, "bottom of the grey ramp");
        assert_eq!(rgb_to_ansi256(0x1c, 0x1c, 0x1c), 234);
    }

    #[test]
    fn every_cube_and_grey_entry_maps_to_itself() {
        for (ri, r) in CUBE.iter().enumerate() {
            for (gi, g) in CUBE.iter().enumerate() {
                for (bi, b) in CUBE.iter().enumerate() {
                    assert_eq!(usize::from(rgb_to_ansi256(*r, *g, *b)), 16 + 36 * ri + 6 * gi + bi);
                }
            }
        }
        for step in 0..24u8 {
            let v = 8 + 10 * step;
            assert_eq!(rgb_to_ansi256(v, v, v), 232 + step, "grey {v}");
        }
    }

    #[test]
    fn parsing() {
        assert_eq!(ThemeColor::parse("#FF8000"), Some(ThemeColor::Rgb(255, 128, 0)));
        assert_eq!(ThemeColor::parse("red"), Some(ThemeColor::Named(Color::Red)));
        assert_eq!(ThemeColor::parse("light_blue"), Some(ThemeColor::Named(Color::LightBlue)));
        assert_eq!(ThemeColor::parse("dark-grey"), Some(ThemeColor::Named(Color::DarkGray)));
        assert_eq!(ThemeColor::parse("ansi:208"), Some(ThemeColor::Indexed(208)));
        assert_eq!(ThemeColor::parse("reset"), Some(ThemeColor::Reset));
        for bad in ["#ff00", "#gg0000", "ansi:256", "ansi:", "purple", "", "#ff00001"] {
            assert_eq!(ThemeColor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn depth_applies() {
        let orange = ThemeColor::Rgb(255, 135, 0);
        assert_eq!(orange.at_depth(ColorDepth::TrueColor), Some(Color::Rgb(255, 135, 0)));
        assert_eq!(orange.at_depth(ColorDepth::Ansi256), Some(Color::Indexed(208)));
        assert_eq!(orange.at_depth(ColorDepth::None), None);
        assert_eq!(ThemeColor::Named(Color::Red).at_depth(ColorDepth::Ansi256), Some(Color::Red));
        assert_eq!(ThemeColor::Reset.at_depth(ColorDepth::None), None);
    }
}
