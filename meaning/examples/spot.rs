//! Quick quality and cost spot check: `cargo run --release -p agentdir-meaning --example spot`.
use std::time::Instant;
fn main() {
    let m = agentdir_meaning::Model::load(agentdir_meaning::built_in_weights().expect("weights")).unwrap();
    let agents = [
        "Caption Studio\nAudio transcription and translation\ntranscription, subtitles\nWe transcribe audio and video, translate it into Chinese and deliver subtitle files (SRT) for podcasts and videos.",
        "Ledger Reader\nDocument OCR and data entry\nocr, data-entry\nOCR for scanned receipts and invoices, with the line items exported to Excel or CSV.",
        "评审助手\n代码评审\n代码评审\n-\n代码评审：审查 Rust 和 Go 代码中的安全问题与性能问题，给出修改建议。",
        "合同顾问\n合同审阅\n合同审阅\n-\n为中小企业审阅合同，标注法律风险并提出修改意见。",
        "Steuer Helper\nTax filing\ntax\nPrepares annual tax returns for freelancers and small businesses in Germany.",
    ];
    let t = Instant::now();
    let av = m.embed_passages(&agents).unwrap();
    println!("passages: {:.1} ms each", t.elapsed().as_secs_f64() * 1000.0 / agents.len() as f64);
    let needs = [
        "review my Go code for security bugs",
        "code review",
        "contract review",
        "someone to check my contract for legal risks",
        "播客音频转写并翻译成中文字幕",
        "把播客做成中文字幕",
        "报税",
        "发票扫描件转成表格",
        "代码审查",
        "找人帮我审一下合同",
    ];
    for n in needs {
        let t = Instant::now();
        let q = m.embed_query(n).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let s: Vec<String> =
            av.iter().map(|a| format!("{:.3}", a.iter().zip(&q).map(|(x, y)| x * y).sum::<f32>())).collect();
        println!("{ms:5.1} ms  {n}: {}", s.join(" "));
    }
}
