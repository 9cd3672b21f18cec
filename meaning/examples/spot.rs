//! Quick quality and cost spot check: `cargo run --release -p agentdir-meaning --example spot`.
use std::time::Instant;
fn main() {
    let m = agentdir_meaning::Model::load(agentdir_meaning::built_in_weights().expect("weights")).unwrap();
    let agents = [
        "Audio transcription and translation into Chinese; subtitle files (SRT) for video and podcasts.",
        "代码评审：审查 Rust 和 Go 代码的安全问题",
        "Tax filing for small businesses in Germany.",
        "OCR for scanned invoices and receipts, exported to Excel spreadsheets.",
        "合同审阅与法律风险提示，适用于中小企业",
        "Code review for Python and TypeScript pull requests.",
    ];
    let t = Instant::now();
    let av = m.embed_passages(&agents).unwrap();
    println!("passages: {:.1} ms each", t.elapsed().as_secs_f64() * 1000.0 / agents.len() as f64);
    let needs = ["播客音频转写并翻译成中文字幕", "为视频和播客制作中文字幕", "发票扫描件转成表格", "找人帮我看看合同", "someone who can turn my podcast into Chinese subtitles", "把播客做成中文字幕", "代码审查",
        "I have a pile of scanned invoices and want them in a spreadsheet", "contract review", "审查我的代码", "review my pull request"];
    for n in needs {
        let t = Instant::now();
        let q = m.embed_query(n).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let s: Vec<String> = av.iter().map(|a| format!("{:.3}", a.iter().zip(&q).map(|(x, y)| x * y).sum::<f32>())).collect();
        println!("{ms:5.1} ms  {n}: {}", s.join(" "));
    }
}
