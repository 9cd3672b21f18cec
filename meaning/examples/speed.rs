//! The engine's cost on one thread, as built here (AVX512-VNNI or AVX2 as the CPU allows):
//! `cargo run --release -p agentdir-meaning --example speed`. The inputs are those of the table
//! in docs/search.md ("Our patch to the engine"); each figure is the median of its repetitions.
use std::time::Instant;

const NEEDS: [&str; 6] = [
    "contract review",
    "someone who can turn my podcast into Chinese subtitles",
    "给我的英文网课视频配上中文字幕",
    "I have a pile of scanned invoices and want them in a spreadsheet",
    "python 数据",
    "translation",
];
const SHORT_PROFILE: &str = "Caption Studio. Audio transcription and translation. We transcribe audio and video, translate it into Chinese and deliver subtitle files (SRT) for podcasts and videos.";
const LONG_PROFILE: &str = "Data Pipeline Studio. We build and run data pipelines for small teams: ingestion from APIs, databases and spreadsheets, cleaning and deduplication, dbt models, scheduled loads into Postgres, BigQuery or Snowflake, and dashboards in Metabase or Superset on top. Every pipeline comes with tests, alerts and documentation your team can read. 我们为小团队搭建并运维数据管道：从接口、数据库和表格中采集数据，清洗去重，建立 dbt 模型，定时加载到 Postgres、BigQuery 或 Snowflake，并在其上用 Metabase 或 Superset 制作看板。每条管道都附带测试、告警和团队看得懂的文档。Offerings: pipeline audit (a written review of your current jobs with a ranked fix list), a new pipeline in two weeks, monthly operations with on-call alerts.";

fn median_ms(times: usize, mut f: impl FnMut()) -> f64 {
    let mut ms: Vec<f64> = (0..times)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[times / 2]
}

fn main() {
    let m =
        agentdir_meaning::Model::load(agentdir_meaning::built_in_weights().expect("weights")).expect("model");
    let mut i = 0;
    let need = median_ms(60, || {
        m.embed_query(NEEDS[i % NEEDS.len()]).expect("embeds");
        i += 1;
    });
    let sentence = median_ms(30, || drop(m.embed_query(NEEDS[1]).expect("embeds")));
    let short = median_ms(15, || drop(m.embed_passages(&[SHORT_PROFILE]).expect("embeds")));
    let long = median_ms(9, || drop(m.embed_passages(&[LONG_PROFILE]).expect("embeds")));
    println!("a need (the six in turn): {need:.2} ms");
    println!("a 16-token need: {sentence:.2} ms");
    println!("a short profile: {short:.1} ms");
    println!("a long profile (English and Chinese): {long:.1} ms");
}
