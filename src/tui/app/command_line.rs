//! The `:` command line: parsing and Tab completion.

/// Commands, whether they take an argument, and what they do.
pub const COMMANDS: &[(&str, bool, &str)] = &[
    ("overview", false, "overview screen"),
    ("jobs", false, "jobs screen"),
    ("nodes", false, "nodes screen"),
    ("gpus", false, "GPU map screen"),
    ("usage", true, "who holds the GPUs, now and the GPU-hours of the last 7 d (`:usage 1d` for another span)"),
    ("history", true, "finished jobs of the last 24 h (`:history 6h`, `2d`, `1w` for another span)"),
    ("cluster", true, "show one cluster (`:cluster all` for every one)"),
    ("user", true, "show one user's jobs (`:user all` for everyone)"),
    ("idle", false, "show only jobs whose GPUs are allocated but idle (again: every job)"),
    ("theme", true, "switch theme"),
    ("keymap", true, "switch keymap (default, vim)"),
    ("submit", false, "open the submit form"),
    ("help", false, "show every key binding"),
    ("quit", false, "quit flightdeck"),
];

/// A parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Screen(&'static str),
    /// The history screen, looking back this far (`None`: as far as last time, else 24 h).
    History(Option<chrono::Duration>),
    /// The usage screen, its GPU-hours looking back this far (`None`: as last time, else 7 d).
    Usage(Option<chrono::Duration>),
    /// `None`: every cluster.
    Cluster(Option<String>),
    /// `None`: every user.
    User(Option<String>),
    /// Toggle the idle-GPU filter of the jobs table.
    Idle,
    Theme(String),
    Keymap(String),
    Submit,
    Help,
    Quit,
}

fn find(word: &str) -> Result<&'static (&'static str, bool, &'static str), String> {
    if word == "q" || word == "q!" {
        return Ok(COMMANDS.iter().find(|c| c.0 == "quit").expect("quit"));
    }
    // `:h` stays help, as in vim, though `:history` starts the same.
    if word == "h" {
        return Ok(COMMANDS.iter().find(|c| c.0 == "help").expect("help"));
    }
    if let Some(exact) = COMMANDS.iter().find(|c| c.0 == word) {
        return Ok(exact);
    }
    let found: Vec<_> = COMMANDS.iter().filter(|c| c.0.starts_with(word)).collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "unknown command `:{word}` (commands: {})",
            COMMANDS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
        )),
        many => Err(format!(
            "`:{word}` is ambiguous: {}",
            many.iter().map(|c| format!(":{}", c.0)).collect::<Vec<_>>().join(", ")
        )),
    }
}

pub fn parse(text: &str) -> Result<Parsed, String> {
    let text = text.trim().trim_start_matches(':');
    let (word, arg) = match text.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (text, ""),
    };
    if word.is_empty() {
        return Err(
            "type a command: :jobs, :nodes, :gpus, :overview, :history [AGE], :cluster NAME, :user NAME, :theme NAME, :keymap NAME, :quit".into()
        );
    }
    let (name, takes_arg, _) = *find(word)?;
    if !takes_arg && !arg.is_empty() {
        return Err(format!("`:{name}` takes no argument"));
    }
    let all_or = |a: &str| if a.is_empty() || a == "all" || a == "*" { None } else { Some(a.to_string()) };
    Ok(match name {
        "overview" | "jobs" | "nodes" | "gpus" => Parsed::Screen(name),
        "usage" if arg.is_empty() => Parsed::Usage(None),
        "usage" => Parsed::Usage(Some(super::history::parse_age(arg)?)),
        "history" if arg.is_empty() => Parsed::History(None),
        "history" => Parsed::History(Some(super::history::parse_age(arg)?)),
        "cluster" => Parsed::Cluster(all_or(arg)),
        "user" => Parsed::User(all_or(arg)),
        "idle" => Parsed::Idle,
        "theme" if arg.is_empty() => return Err("`:theme` needs a theme name".into()),
        "theme" => Parsed::Theme(arg.to_string()),
        "keymap" if arg.is_empty() => return Err("`:keymap` needs a keymap name".into()),
        "keymap" => Parsed::Keymap(arg.to_string()),
        "submit" => Parsed::Submit,
        "help" => Parsed::Help,
        _ => Parsed::Quit,
    })
}

/// Complete the text typed so far. Returns the new text and the candidates that remain (for
/// display when more than one).
pub fn complete(text: &str, clusters: &[String], users: &[String], themes: &[&str]) -> (String, Vec<String>) {
    let Some((word, arg)) = text.split_once(' ') else {
        let found: Vec<String> = COMMANDS.iter().filter(|c| c.0.starts_with(text)).map(|c| c.0.to_string()).collect();
        return match found.as_slice() {
            [one] => {
                let takes_arg = COMMANDS.iter().any(|c| c.0 == one && c.1);
                (if takes_arg { format!("{one} ") } else { one.clone() }, found)
            }
            [] => (text.to_string(), found),
            many => (common_prefix(many).unwrap_or_else(|| text.to_string()), found),
        };
    };
    let Ok((name, true, _)) = find(word).copied() else {
        return (text.to_string(), Vec::new());
    };
    let pool: Vec<String> = match name {
        "cluster" => clusters.iter().cloned().chain(std::iter::once("all".to_string())).collect(),
        "user" => users.iter().cloned().chain(std::iter::once("all".to_string())).collect(),
        "keymap" => crate::tui::keymap::Keymap::names().iter().map(|k| k.to_string()).collect(),
        "history" | "usage" => ["1h", "6h", "24h", "2d", "1w"].iter().map(|a| a.to_string()).collect(),
        _ => themes.iter().map(|t| t.to_string()).collect(),
    };
    let arg = arg.trim_start();
    let found: Vec<String> = pool.into_iter().filter(|c| c.starts_with(arg)).collect();
    let completed = match found.as_slice() {
        [one] => one.clone(),
        [] => arg.to_string(),
        many => common_prefix(many).unwrap_or_else(|| arg.to_string()),
    };
    (format!("{name} {completed}"), found)
}

fn common_prefix(words: &[String]) -> Option<String> {
    let mut prefix: &str = words.first()?;
    for w in &words[1..] {
        while !w.starts_with(prefix) {
            prefix = &prefix[..prefix.char_indices().last().map_or(0, |(i, _)| i)];
        }
    }
    Some(prefix.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing() {
        assert_eq!(parse("nodes"), Ok(Parsed::Screen("nodes")));
        assert_eq!(parse(":no"), Ok(Parsed::Screen("nodes")));
        assert_eq!(parse("cluster fd22"), Ok(Parsed::Cluster(Some("fd22".into()))));
        assert_eq!(parse("cluster all"), Ok(Parsed::Cluster(None)));
        assert_eq!(parse("cluster"), Ok(Parsed::Cluster(None)));
        assert_eq!(parse("q"), Ok(Parsed::Quit));
        assert_eq!(parse("h"), Ok(Parsed::Help));
        assert_eq!(parse("history"), Ok(Parsed::History(None)));
        assert_eq!(parse("hist 6h"), Ok(Parsed::History(Some(chrono::Duration::hours(6)))));
        assert!(parse("history yesterday").unwrap_err().contains("no age"));
        assert!(parse("jobs x").is_err());
        assert!(parse("frobnicate").unwrap_err().contains("unknown command"));
        assert!(parse("").is_err());
    }

    #[test]
    fn completion() {
        let clusters = vec!["fd22".to_string(), "fd24".to_string(), "hpc".to_string()];
        assert_eq!(complete("no", &clusters, &[], &[]).0, "nodes");
        assert_eq!(complete("cl", &clusters, &[], &[]).0, "cluster ");
        assert_eq!(complete("cluster f", &clusters, &[], &[]).0, "cluster fd2");
        assert_eq!(complete("cluster h", &clusters, &[], &[]).0, "cluster hpc");
        let (text, found) = complete("cluster fd2", &clusters, &[], &[]);
        assert_eq!((text.as_str(), found.len()), ("cluster fd2", 2));
        assert_eq!(complete("theme li", &[], &[], &["dark", "light"]).0, "theme light");
        assert_eq!(complete("", &[], &[], &[]).1.len(), COMMANDS.len());
    }
}
