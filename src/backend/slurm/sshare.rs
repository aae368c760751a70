//! Fair share: `sshare -a -P -n -o Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare`,
//! one controller RPC (`REQUEST_SHARE_INFO`), asked by `flightdeck usage` only, never per
//! refresh. The same fields and the same `|`-separated text on 22.05 and 24.11.

use crate::model::usage::FairShare;

/// The fixed command: every association (`-a`), parsable (`-P`), no header (`-n`).
pub fn argv() -> Vec<String> {
    ["sshare", "-a", "-P", "-n", "-o", "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Parse sshare's lines. An account's depth in the tree is its leading spaces (dropped); a
/// field sshare leaves empty or writes in words (`parent` shares) is `None`, not zero. A
/// line with another number of fields is skipped and counted.
pub fn parse(cluster: &str, text: &str) -> (Vec<FairShare>, usize) {
    let mut rows = Vec::new();
    let mut skipped = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('|').collect();
        if f.len() != 7 {
            skipped += 1;
            continue;
        }
        let text_of = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        rows.push(FairShare {
            cluster: cluster.to_string(),
            account: f[0].trim().to_string(),
            user: text_of(f[1]),
            raw_shares: f[2].trim().parse().ok(),
            norm_shares: f[3].trim().parse().ok().filter(|v: &f64| v.is_finite()),
            raw_usage: f[4].trim().parse().ok(),
            effective_usage: f[5].trim().parse().ok().filter(|v: &f64| v.is_finite()),
            fair_share: f[6].trim().parse().ok().filter(|v: &f64| v.is_finite()),
        });
    }
    (rows, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_and_users_parse_with_what_sshare_leaves_out_as_not_known() {
        // As 24.11 prints it with two accounts under root (22.05 prints the same fields).
        let text = "root|||0.000000|8387|1.000000|\n\
                    \x20root|root|1|0.333333|8387|1.000000|1.000000\n\
                    \x20team-a||parent|0.333333|0|0.000000|\n\
                    \x20\x20team-a|alice|1|0.500000|120|0.014308|0.750000\n\
                    garbage line\n";
        let (rows, skipped) = parse("fd24", text);
        assert_eq!(skipped, 1);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].account, "root");
        assert_eq!((rows[0].user.as_deref(), rows[0].raw_shares, rows[0].fair_share), (None, None, None));
        assert_eq!(rows[2].raw_shares, None, "`parent` is not a number of shares");
        let alice = &rows[3];
        assert_eq!((alice.account.as_str(), alice.user.as_deref()), ("team-a", Some("alice")));
        assert_eq!((alice.raw_shares, alice.raw_usage), (Some(1), Some(120)));
        assert_eq!(
            (alice.norm_shares, alice.effective_usage, alice.fair_share),
            (Some(0.5), Some(0.014308), Some(0.75))
        );
    }

    #[test]
    fn the_command_is_fixed() {
        assert_eq!(argv()[..5], ["sshare", "-a", "-P", "-n", "-o"]);
    }
}
