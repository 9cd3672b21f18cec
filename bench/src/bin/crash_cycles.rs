//! Crash cycles against a release server: 20 times, writers register agents, post calls, reply,
//! update profiles and delete calls until the server is killed with SIGKILL mid-stream; after
//! each restart every write acknowledged so far is looked up (present, searchable, deletions
//! gone), SQLite's integrity and counts are checked against the API, the search index and the
//! change feed. See `bench/src/crash.rs` for the checks; `tests/crash_cycles.rs` runs a short
//! form in the suite.
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin crash_cycles [-- OPTIONS]
//!   --cycles N     SIGKILL cycles (default 20)
//!   --writers W    concurrent writers (default 4)
//!   --min-acks A   each cycle kills after A to 2A acknowledged writes (default 100)
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentdir_bench::crash::{self, Crashable, CycleReport, Settings};
use agentdir_bench::{Error, OwnServer, load_average, start_server};

struct Release {
    dir: PathBuf,
    server: Option<OwnServer>,
}

impl Crashable for Release {
    fn base_url(&self) -> String {
        self.server.as_ref().map(|s| s.base.clone()).unwrap_or_default()
    }
    fn kill_now(&mut self) {
        if let Some(s) = self.server.as_mut() {
            s.kill();
        }
        self.server = None;
    }
    fn start_again(&mut self) {
        self.server = Some(start_server(Some(&self.dir), &[]).expect("restart the server"));
    }
    fn database(&self) -> PathBuf {
        self.dir.join("agentdir.sqlite3")
    }
}

fn options() -> Result<Settings, Error> {
    let mut o = Settings { cycles: 20, writers: 4, min_acks: 100 };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--cycles" => o.cycles = value()?.parse()?,
            "--writers" => o.writers = value()?.parse()?,
            "--min-acks" => o.min_acks = value()?.parse()?,
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/crash_cycles.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(o)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let o = options()?;
    let dir = std::env::temp_dir().join(format!("agentdir-crash-cycles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut target = Release { dir: dir.clone(), server: None };
    target.start_again();
    println!(
        "agentdir crash cycles: {} SIGKILL cycles, {} writers, kill after {}-{} acknowledged writes, load average {}",
        o.cycles,
        o.writers,
        o.min_acks,
        2 * o.min_acks - 1,
        load_average()
    );
    println!();
    println!(
        "| cycle | acked | acked so far | restart ms | check ms | agents | calls | replies | feed entries |"
    );
    println!(
        "|------:|------:|-------------:|-----------:|---------:|-------:|------:|--------:|-------------:|"
    );
    let started = Instant::now();
    let print = |r: &CycleReport| {
        println!(
            "| {:>5} | {:>5} | {:>12} | {:>10.0} | {:>8.0} | {:>6} | {:>5} | {:>7} | {:>12} |",
            r.cycle + 1,
            r.acked,
            r.acked_total,
            ms(r.restart),
            ms(r.check),
            r.agents,
            r.calls,
            r.replies,
            r.feed_entries
        )
    };
    let result = crash::run(&mut target, &o, print).await;
    drop(target);
    let _ = std::fs::remove_dir_all(&dir);
    let reports = result?;
    let last = reports.last().ok_or("no cycle ran")?;
    println!();
    println!(
        "{} cycles in {:.0} s: all {} acknowledged writes present and searchable after every restart; \
         SQLite, /api/stats, the list totals, the search index and the change feed agreed every time",
        reports.len(),
        started.elapsed().as_secs_f64(),
        last.acked_total
    );
    Ok(())
}
