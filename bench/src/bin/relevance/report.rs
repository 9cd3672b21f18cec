//! The printed report: one Markdown table of nDCG@10, Recall@10 and MRR per kind of need with
//! the modes side by side, then the trust measures and what each run cost.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use super::judged::{CHINESE_ONLY, ENGLISH_ONLY, JudgedSet, Need, NeedType};
use super::metrics::{self, DEPTH, SPAM_DEPTH};
use super::{Mode, ModeRun, Skipped};

/// A row of the table: a label and the needs (by index) it averages over.
struct Group {
    label: String,
    needs: Vec<usize>,
}

fn groups(set: &JudgedSet) -> Vec<Group> {
    let pick = |f: &dyn Fn(&Need) -> bool| -> Vec<usize> {
        set.needs.iter().enumerate().filter(|(_, n)| f(n)).map(|(i, _)| i).collect()
    };
    let mut out = Vec::new();
    for kind in NeedType::ALL {
        out.push(Group { label: kind.label().into(), needs: pick(&|n| n.kind == kind) });
        if kind == NeedType::Cross {
            out.push(Group {
                label: "↳ English need, Chinese-only agents".into(),
                needs: pick(&|n| n.kind == kind && !n.in_chinese()),
            });
            out.push(Group {
                label: "↳ Chinese need, English-only agents".into(),
                needs: pick(&|n| n.kind == kind && n.in_chinese()),
            });
        }
    }
    out.push(Group { label: "**all**".into(), needs: (0..set.needs.len()).collect() });
    out.retain(|g| !g.needs.is_empty());
    out
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { f64::NAN } else { sum / n as f64 }
}

type Measure = fn(&Need, &[String]) -> f64;

/// The cells of one measure for one group, a mode per column ("—" for a mode that did not run).
fn cells(set: &JudgedSet, runs: &[ModeRun], g: &Group, measure: Measure) -> Vec<String> {
    Mode::ALL
        .iter()
        .map(|m| match runs.iter().find(|r| r.mode == *m) {
            Some(r) => format!("{:.2}", mean(g.needs.iter().map(|&i| measure(&set.needs[i], &r.ranked[i])))),
            None => "—".into(),
        })
        .collect()
}

/// One cell per mode from a function of the run.
fn per_mode(runs: &[ModeRun], f: impl Fn(&ModeRun) -> String) -> String {
    Mode::ALL
        .iter()
        .map(|m| runs.iter().find(|r| r.mode == *m).map_or_else(|| "—".into(), &f))
        .collect::<Vec<_>>()
        .join(" | ")
}

pub fn print(set: &JudgedSet, runs: &[ModeRun], skipped: &[Skipped], set_dir: &Path) {
    let langs: Vec<String> =
        super::judged::description_languages(set).iter().map(|(k, n)| format!("{n} {k}")).collect();
    let stuffed = set.agents.iter().filter(|a| a.stuffed).count();
    println!(
        "Relevance of `GET /api/agents?q=…&limit={DEPTH}` on the judged set {} ({} agents described in: {}; {stuffed} of them keyword-stuffed fresh sign-ups; {} needs)",
        set_dir.display(),
        set.agents.len(),
        langs.join(", "),
        set.needs.len()
    );
    println!("{}, commit {}, load average {} at the end", today(), commit(), agentdir_bench::load_average());
    println!();
    println!(
        "| need (count) | nDCG@10 words | meaning | combined | Recall@10 words | meaning | combined | MRR words | meaning | combined |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for g in groups(set) {
        let mut row = vec![format!("{} ({})", g.label, g.needs.len())];
        for measure in [metrics::ndcg as Measure, metrics::recall, metrics::reciprocal_rank] {
            row.extend(cells(set, runs, &g, measure));
        }
        println!("| {} |", row.join(" | "));
    }
    println!();
    print_trust(set, runs);
    for s in skipped {
        println!("- {} mode did not run: {}", s.mode.name(), s.why);
    }
    for r in runs {
        println!("- {} mode: /readyz says {}", r.mode.name(), r.readiness);
    }
}

fn print_trust(set: &JudgedSet, runs: &[ModeRun]) {
    let targets: Vec<usize> = (0..set.needs.len()).filter(|&i| set.needs[i].spam_target).collect();
    let (made_up, real): (Vec<usize>, Vec<usize>) =
        (0..set.needs.len()).partition(|&i| set.needs[i].expects_nothing());
    println!("| | words | meaning | combined |");
    println!("|---|---:|---:|---:|");
    println!(
        "| needs answered with no agent at all (of {}{}) | {} |",
        real.len(),
        if made_up.is_empty() { "" } else { " that an agent meets" },
        per_mode(runs, |r| real.iter().filter(|&&i| r.ranked[i].is_empty()).count().to_string())
    );
    if !made_up.is_empty() {
        println!(
            "| made-up needs answered with nothing | {} |",
            per_mode(runs, |r| format!(
                "{} of {}",
                made_up.iter().filter(|&&i| r.ranked[i].is_empty()).count(),
                made_up.len()
            ))
        );
    }
    println!(
        "| stuffed sign-ups in the first {SPAM_DEPTH}, mean over the {} needs they were written against | {} |",
        targets.len(),
        per_mode(runs, |r| format!(
            "{:.2}",
            mean(targets.iter().map(|&i| metrics::stuffed_on_top(set, &r.ranked[i]) as f64))
        ))
    );
    println!(
        "| of those needs, a stuffed sign-up above the best verified fit | {} |",
        per_mode(runs, |r| format!(
            "{} of {}",
            targets
                .iter()
                .filter(|&&i| metrics::stuffed_above_verified(set, &set.needs[i], &r.ranked[i]))
                .count(),
            targets.len()
        ))
    );
    println!(
        "| equal fits with different evidence, ranked in evidence order | {} |",
        per_mode(runs, |r| {
            let (pairs, ordered) = (0..set.needs.len())
                .map(|i| metrics::evidence_pairs(set, &set.needs[i], &r.ranked[i]))
                .fold((0, 0), |(p, o), (dp, d_o)| (p + dp, o + d_o));
            format!("{ordered} of {pairs}")
        })
    );
    print_strangers(set, runs, &real);
    println!(
        "| mean time per query (one client) | {} |",
        per_mode(runs, |r| format!("{:.1} ms", r.query_ms))
    );
    println!(
        "| seeding (register, offerings, evidence) | {} |",
        per_mode(runs, |r| format!("{:.1} s", r.seed_seconds))
    );
    println!();
}

/// A hub is in the first ten of at least this share of the needs an agent meets, each time
/// with nothing to do with the need.
const HUB_SHARE: f64 = 0.05;

/// Hubs (a few profiles near every need) and drift (needs in one language met by agents of
/// unrelated trades described only in the other), from the agents graded 0 on each page.
fn print_strangers(set: &JudgedSet, runs: &[ModeRun], real: &[usize]) {
    let at_least = (HUB_SHARE * real.len() as f64).ceil() as usize;
    println!(
        "| hubs: agents in the first ten of {at_least} or more needs ({:.0} %) unrelated to each, the most frequent | {} |",
        HUB_SHARE * 100.0,
        per_mode(runs, |r| {
            let mut counts: HashMap<&str, usize> = HashMap::new();
            for &i in real {
                for h in metrics::strangers(set, &set.needs[i], &r.ranked[i]) {
                    *counts.entry(h).or_default() += 1;
                }
            }
            let hubs = counts.values().filter(|&&n| n >= at_least).count();
            let top = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)));
            match top {
                Some((h, n)) => format!("{hubs} ({h}: {n})"),
                None => "0".into(),
            }
        })
    );
    let english: Vec<usize> = real.iter().copied().filter(|&i| !set.needs[i].in_chinese()).collect();
    let chinese: Vec<usize> = real
        .iter()
        .copied()
        .filter(|&i| set.needs[i].in_chinese() && set.needs[i].kind != NeedType::Mixed)
        .collect();
    let share_of = |language: &str| {
        set.agents.iter().filter(|a| !a.stuffed && a.described_in() == language).count() as f64
            / set.agents.iter().filter(|a| !a.stuffed).count().max(1) as f64
    };
    for (needs, other, label) in [
        (&english, CHINESE_ONLY, "English needs: unrelated agents described only in Chinese"),
        (
            &chinese,
            ENGLISH_ONLY,
            "Chinese needs (mixed ones aside): unrelated agents described only in English",
        ),
    ] {
        println!(
            "| drift: {label}, of all unrelated agents, in the first ten, mean of {} needs ({:.0} % of the agents are so described) | {} |",
            needs.len(),
            share_of(other) * 100.0,
            per_mode(runs, |r| {
                let of_needs = |f: &dyn Fn(&str) -> bool| {
                    mean(needs.iter().map(|&i| {
                        metrics::strangers(set, &set.needs[i], &r.ranked[i]).filter(|h| f(h)).count() as f64
                    }))
                };
                let drifted = of_needs(&|h| set.agent(h).is_some_and(|a| a.described_in() == other));
                format!("{drifted:.2} of {:.2}", of_needs(&|_| true))
            })
        );
    }
}

/// Each need's nDCG@10 per mode, worst combined first.
pub fn per_need(set: &JudgedSet, runs: &[ModeRun]) {
    println!();
    println!("| need | kind | {} |", runs.iter().map(|r| r.mode.name()).collect::<Vec<_>>().join(" | "));
    println!("|---|---|{}", "---:|".repeat(runs.len()));
    let last = runs.len() - 1;
    let mut order: Vec<usize> = (0..set.needs.len()).collect();
    order.sort_by(|&a, &b| {
        let score = |i: usize| metrics::ndcg(&set.needs[i], &runs[last].ranked[i]);
        score(a).total_cmp(&score(b))
    });
    for i in order {
        let n = &set.needs[i];
        let scores: Vec<String> =
            runs.iter().map(|r| format!("{:.2}", metrics::ndcg(n, &r.ranked[i]))).collect();
        println!("| {} `{}` | {} | {} |", n.id, n.q, n.kind.name(), scores.join(" | "));
    }
}

/// The agents no one judged for a need that some mode put in its first ten (stuffed ones
/// aside: they are judged 0 by construction). Reading these and judging them is how the set
/// stays complete as search changes. Made-up needs are left out: they judge no agent, and any
/// agent on their page is a miss the measures count already.
pub fn pool(set: &JudgedSet, runs: &[ModeRun]) {
    println!();
    println!("Unjudged agents in a first page (read them, then judge them in needs.json):");
    for (i, n) in set.needs.iter().enumerate().filter(|(_, n)| !n.expects_nothing()) {
        let mut seen: Vec<(&str, Vec<&str>)> = Vec::new();
        for r in runs {
            for h in &r.ranked[i] {
                if n.judged.contains_key(h) || set.agent(h).is_none_or(|a| a.stuffed) {
                    continue;
                }
                match seen.iter_mut().find(|(x, _)| x == h) {
                    Some((_, modes)) => modes.push(r.mode.name()),
                    None => seen.push((h, vec![r.mode.name()])),
                }
            }
        }
        if !seen.is_empty() {
            let list: Vec<String> = seen.iter().map(|(h, m)| format!("{h} ({})", m.join("+"))).collect();
            println!("- {} `{}`: {}", n.id, n.q, list.join(", "));
        }
    }
}

/// The first page of each need in `ids`, per mode: rank, handle, grade, and the agent's
/// trust level, `stuffed` marked.
pub fn pages(set: &JudgedSet, runs: &[ModeRun], ids: &[String]) {
    for (i, n) in set.needs.iter().enumerate().filter(|(_, n)| ids.contains(&n.id)) {
        println!();
        println!("{} `{}` ({}):", n.id, n.q, n.kind.name());
        for r in runs {
            let page: Vec<String> = r.ranked[i]
                .iter()
                .map(|h| {
                    let a = set.agent(h);
                    let trust = a.map_or(0, |a| a.evidence.level);
                    let stuffed = if a.is_some_and(|a| a.stuffed) { " stuffed" } else { "" };
                    format!("{h} [{} L{trust}{stuffed}]", n.grade(h))
                })
                .collect();
            println!("- {}: {}", r.mode.name(), page.join(", "));
        }
    }
}

/// The commit the benchmark was built from, `+changes` when the work tree differs from it.
fn commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(["-C", env!("CARGO_MANIFEST_DIR")])
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(c) if git(&["status", "--porcelain"]).is_some_and(|s| !s.is_empty()) => format!("{c}+changes"),
        Some(c) => c,
        None => "unknown".into(),
    }
}

/// Today's date (UTC) as YYYY-MM-DD.
fn today() -> String {
    let now = agentdir::time::Timestamp(agentdir::time::now_ms()).rfc3339();
    now[..10].to_owned()
}

/// Under load: nDCG@10 per kind of need with one column per flood size, how the judged
/// searches were matched, and what the flood got.
pub fn under_load(set: &JudgedSet, runs: &[(usize, ModeRun)], set_dir: &Path, quick: bool) {
    println!(
        "Relevance under load on {} ({} needs): combined mode, the judged needs searched one at a time from one client while N connections search distinct needs from random addresses of 10.0.0.0/8 (one /24 each), all through a trusted proxy; a fresh server per N{}",
        set_dir.display(),
        set.needs.len(),
        if quick { "; every need read by the quick encoder" } else { "" }
    );
    println!("{}, commit {}, load average {} at the end", today(), commit(), agentdir_bench::load_average());
    println!();
    let columns: Vec<String> = runs.iter().map(|(n, _)| format!("N = {n}")).collect();
    println!("| nDCG@10 | {} |", columns.join(" | "));
    println!("|---|{}", "---:|".repeat(runs.len()));
    for g in groups(set) {
        let cells: Vec<String> = runs
            .iter()
            .map(|(_, r)| {
                format!("{:.3}", mean(g.needs.iter().map(|&i| metrics::ndcg(&set.needs[i], &r.ranked[i]))))
            })
            .collect();
        println!("| {} ({}) | {} |", g.label, g.needs.len(), cells.join(" | "));
    }
    let row = |label: &str, f: &dyn Fn(&ModeRun) -> String| {
        let cells: Vec<String> = runs.iter().map(|(_, r)| f(r)).collect();
        println!("| {label} | {} |", cells.join(" | "));
    };
    let matched = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
    };
    row("judged searches matched by", &|r| matched(&r.matched));
    row("judged search, mean time", &|r| format!("{:.1} ms", r.query_ms));
    row("flood searches a second", &|r| {
        r.flood.as_ref().map_or("—".into(), |f| format!("{:.0}", f.searches as f64 / f.seconds.max(1e-9)))
    });
    row("flood answers by status", &|r| {
        r.flood.as_ref().map_or("—".into(), |f| {
            f.statuses.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")
        })
    });
    row("flood searches matched by", &|r| {
        r.flood.as_ref().map_or("—".into(), |f| {
            let total: u64 = f.matched.values().sum();
            f.matched
                .iter()
                .map(|(k, v)| format!("{k} {:.0} %", 100.0 * *v as f64 / total.max(1) as f64))
                .collect::<Vec<_>>()
                .join(", ")
        })
    });
}
