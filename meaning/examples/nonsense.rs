//! Made-up needs against real ones, over a judged set's profiles: for each need, its words'
//! longest piece as a share of their characters (what `KNOWN_WORD_SHARE` in
//! src/service/finding/mod.rs reads), how many profiles are at 0.12 and 0.18 or more, and the
//! nearest five. Profiles are read roughly as the server reads them (name, tagline,
//! capabilities, descriptions, offerings):
//! `cargo run --release -p agentdir-meaning --example nonsense -- bench/relevance NEED...`.
use agentdir_meaning::{Model, Prefix, built_in_weights};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("a judged set's folder");
    let needs: Vec<String> = args.collect();
    let m = Model::load(built_in_weights().expect("weights")).expect("the model");
    let (handles, texts) = profiles(&dir);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let profiles = m.embed_passages(&refs).expect("profiles");
    for need in &needs {
        let q = m.embed_query(need).expect("need");
        let mut near: Vec<(f32, &str)> = profiles
            .iter()
            .zip(&handles)
            .map(|(p, h)| (p.iter().zip(&q).map(|(x, y)| x * y).sum::<f32>(), h.as_str()))
            .collect();
        near.sort_by(|a, b| b.0.total_cmp(&a.0));
        let top: Vec<String> = near.iter().take(5).map(|(s, h)| format!("{h}:{s:.3}")).collect();
        let at = |t: f32| near.iter().filter(|n| n.0 >= t).count();
        let shares: Vec<String> = need
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| format!("{w}:{:.2}", whole_share(&m, w)))
            .collect();
        println!(
            "{need}\n  words {}\n  >=0.12: {}  >=0.18: {}  {}",
            shares.join(" "),
            at(0.12),
            at(0.18),
            top.join(" ")
        );
    }
}

/// As `app::model::Model::whole_share`.
fn whole_share(m: &Model, word: &str) -> f32 {
    let vocabulary = m.vocabulary();
    let longest = m
        .tokens(word, Prefix::None)
        .unwrap_or_default()
        .iter()
        .filter_map(|&id| vocabulary.piece(id))
        .map(|(bytes, _)| String::from_utf8_lossy(bytes).trim_start_matches('\u{2581}').chars().count())
        .max()
        .unwrap_or(0);
    longest as f32 / word.chars().count().max(1) as f32
}

fn profiles(dir: &str) -> (Vec<String>, Vec<String>) {
    let (mut handles, mut texts) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(format!("{dir}/agents")).expect("agents/") {
        let file = std::fs::read(entry.expect("entry").path()).expect("file");
        let agents: Vec<serde_json::Value> = serde_json::from_slice(&file).expect("json");
        for a in agents {
            let s = |k: &str| a[k].as_str().unwrap_or("").to_string();
            let list = |k: &str| {
                a[k].as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| x.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let offerings: String = a["offerings"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| {
                    format!(
                        "\n{} {}",
                        o["title"].as_str().unwrap_or(""),
                        o["description"].as_str().unwrap_or("")
                    )
                })
                .collect();
            handles.push(s("handle"));
            texts.push(format!(
                "{}\n{}\n{}\n{}\n{}{offerings}",
                s("name"),
                s("tagline"),
                list("capabilities"),
                s("description_en"),
                s("description_zh")
            ));
        }
    }
    (handles, texts)
}
