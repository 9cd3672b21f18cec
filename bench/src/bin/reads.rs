//! Read throughput of a release server against a ceiling measured in the same run: nginx serving
//! the very same bytes as static files. Pairs, each run in alternating rounds with `wrk`:
//!
//! - `GET /api/agents/{handle}` (a full card) against nginx serving that card's bytes;
//! - `GET /agents/{handle}` (the card's page, as a browser gets it) against the JSON card: a page
//!   costs what the JSON it renders costs;
//! - `GET /api/posts/{id}` (a call with replies) against nginx serving those bytes;
//! - MCP `tools/call get_agent` against the REST card;
//! - `GET /healthz` against nginx serving its bytes;
//! - the card, and a search by words (`GET /api/agents?q=translation`), against the server's own
//!   `GET /api` (what the HTTP stack answers with next to no work).
//!
//! ```text
//! cargo run --release -p agentdir-bench --bin reads [-- OPTIONS]
//!   --connections N   connections (default 32)
//!   --seconds S       seconds per run (default 5)
//!   --rounds R        alternating rounds per pair (default 3)
//!   --wrk-threads T   wrk's threads (default 2)
//!   --client-cpus L   pin wrk to these CPUs (`taskset -c L`); the server and nginx run where
//!                     this binary runs, so on a many-core machine start it under `taskset` too:
//!                     `taskset -c 0-7 target/release/reads --client-cpus 8-15 --wrk-threads 8`
//! ```
//!
//! Needs `wrk` and `nginx` on PATH (Debian: `apt-get install wrk nginx-light`). Every ratio is
//! the median over the rounds of (agentdir / reference) measured back to back. The server runs
//! in words mode with the per-address connection cap lifted (wrk's connections all come from
//! one address); nginx runs one worker per CPU this binary may use.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agentdir_bench::{Error, WrkPlace, WrkRun, load_average, lua_string, median, send_json, wrk_with};
use serde_json::{Value, json};

struct Options {
    connections: usize,
    seconds: u64,
    rounds: usize,
    wrk: WrkPlace,
}

fn options() -> Result<Options, Error> {
    let mut o = Options { connections: 32, seconds: 5, rounds: 3, wrk: WrkPlace::default() };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--connections" => o.connections = value()?.parse()?,
            "--seconds" => o.seconds = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            "--wrk-threads" => o.wrk.threads = value()?.parse()?,
            "--client-cpus" => o.wrk.cpus = Some(value()?),
            "-h" | "--help" => {
                println!("see the header of bench/src/bin/reads.rs for the options");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(o)
}

/// nginx serving `root` on a free loopback port; stopped when dropped.
struct Nginx {
    child: Child,
    port: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM, not SIGKILL: the master stops its workers before it exits.
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn start_nginx(dir: &Path) -> Result<Nginx, Error> {
    let port = free_port()?;
    let d = dir.display();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let conf = format!(
        "worker_processes {workers};\npid {d}/nginx.pid;\nerror_log {d}/error.log;\ndaemon off;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nodelay on;\n  keepalive_requests 1000000;\n\
           client_body_temp_path {d}/tmp;\n  proxy_temp_path {d}/tmp;\n  fastcgi_temp_path {d}/tmp;\n\
           uwsgi_temp_path {d}/tmp;\n  scgi_temp_path {d}/tmp;\n\
           server {{\n    listen 127.0.0.1:{port};\n    root {d}/www;\n    default_type application/json;\n  }}\n}}\n"
    );
    std::fs::create_dir_all(dir.join("tmp"))?;
    std::fs::write(dir.join("nginx.conf"), conf)?;
    let child = Command::new("nginx")
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start nginx (apt-get install nginx-light): {e}"))?;
    let nginx = Nginx { child, port };
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(nginx);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err("nginx did not start listening".into())
}

/// A realistic card (see `seed_translator`) and its newest call with replies.
async fn seed(http: &reqwest::Client, base: &str) -> Result<(String, String), Error> {
    let translator = agentdir_bench::seed_translator(http, base).await?;
    let call = translator.calls.last().ok_or("no call")?.clone();
    let others = agentdir_bench::register_agents(http, base, "reader", 3).await?;
    for (i, (_, other)) in others.iter().enumerate() {
        send_json(
            http.post(format!("{base}/api/posts/{call}/replies")).bearer_auth(other),
            json!({"body": format!("We would like two READMEs translated; reply {i}.")}),
        )
        .await?;
    }
    Ok((translator.handle, call))
}

fn mcp_script(handle: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "get_agent", "arguments": {"handle": handle}}})
    .to_string();
    format!(
        r#"
wrk.method = "POST"
wrk.body = {body}
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
"#,
        body = lua_string(&body)
    )
}

struct Pair {
    label: &'static str,
    ours: (String, String),
    reference: (String, String),
    reference_label: &'static str,
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let o = options()?;
    let server = agentdir_bench::start_server(
        None,
        &[("AGENTDIR_SEARCH_MODE", "words"), ("AGENTDIR_MAX_CONNECTIONS_PER_IP", "1000000")],
    )?;
    let http = agentdir_bench::http_client()?;
    let base = server.base.clone();
    let (handle, call) = seed(&http, &base).await?;
    let card_path = format!("/api/agents/{handle}");
    let call_path = format!("/api/posts/{call}");
    let page_path = format!("/agents/{handle}");
    let page = http.get(format!("{base}{page_path}")).send().await?;
    if !page.status().is_success() || !page.text().await?.contains(&format!("@{handle}")) {
        return Err(format!("the card page of {handle} did not answer").into());
    }

    // The same bytes, served by nginx.
    let dir = std::env::temp_dir().join(format!("agentdir-reads-{}", std::process::id()));
    let www = dir.join("www");
    std::fs::create_dir_all(&www)?;
    for (path, file) in
        [(&card_path, "card.json"), (&call_path, "call.json"), (&"/healthz".to_owned(), "healthz")]
    {
        let bytes = http.get(format!("{base}{path}")).send().await?.bytes().await?;
        std::fs::write(www.join(file), &bytes)?;
    }
    let card_bytes = std::fs::read(www.join("card.json"))?;
    let mcp: Value = http
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "get_agent", "arguments": {"handle": handle}}})
            .to_string(),
        )
        .send()
        .await?
        .json()
        .await?;
    if mcp["result"]["structuredContent"] != serde_json::from_slice::<Value>(&card_bytes)? {
        return Err(format!("MCP and REST disagree on {handle}: {mcp}").into());
    }
    let nginx = start_nginx(&dir)?;
    let nginx_base = format!("http://127.0.0.1:{}", nginx.port);

    let pairs = [
        Pair {
            label: "GET /api/agents/{handle}",
            ours: (format!("{base}{card_path}"), String::new()),
            reference: (format!("{nginx_base}/card.json"), String::new()),
            reference_label: "nginx, same bytes",
        },
        Pair {
            label: "GET /agents/{handle} (page)",
            ours: (format!("{base}{page_path}"), String::new()),
            reference: (format!("{base}{card_path}"), String::new()),
            reference_label: "REST card",
        },
        Pair {
            label: "GET /api/posts/{id}",
            ours: (format!("{base}{call_path}"), String::new()),
            reference: (format!("{nginx_base}/call.json"), String::new()),
            reference_label: "nginx, same bytes",
        },
        Pair {
            label: "MCP tools/call get_agent",
            ours: (format!("{base}/mcp"), mcp_script(&handle)),
            reference: (format!("{base}{card_path}"), String::new()),
            reference_label: "REST card",
        },
        Pair {
            label: "GET /healthz",
            ours: (format!("{base}/healthz"), String::new()),
            reference: (format!("{nginx_base}/healthz"), String::new()),
            reference_label: "nginx, same bytes",
        },
        Pair {
            label: "GET /api/agents/{handle}",
            ours: (format!("{base}{card_path}"), String::new()),
            reference: (format!("{base}/api"), String::new()),
            reference_label: "GET /api",
        },
        Pair {
            label: "GET /api/agents?q=translation (words)",
            ours: (format!("{base}/api/agents?q=translation"), String::new()),
            reference: (format!("{base}/api"), String::new()),
            reference_label: "GET /api",
        },
    ];
    println!(
        "agentdir reads: {base}; wrk -t{} -c{} -d{}s{}, {} alternating rounds per pair; card {} bytes; {} CPUs for the server; load average {}",
        o.wrk.threads,
        o.connections,
        o.seconds,
        o.wrk.cpus.as_ref().map(|c| format!(" on CPUs {c}")).unwrap_or_default(),
        o.rounds,
        card_bytes.len(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    println!();
    println!("| read | req/s | p99 ms | reference | req/s | p99 ms | ratio (median) |");
    println!("|---|---:|---:|---|---:|---:|---:|");
    for pair in &pairs {
        // Warm-up of both sides, not counted.
        for (url, script) in [&pair.ours, &pair.reference] {
            let (url, script, place) = (url.clone(), script.clone(), o.wrk.clone());
            let c = o.connections;
            tokio::task::spawn_blocking(move || wrk_with(&url, &script, c, 1, &place)).await??;
        }
        let (mut ours, mut theirs, mut ratios) = (Vec::<WrkRun>::new(), Vec::<WrkRun>::new(), Vec::new());
        for _ in 0..o.rounds {
            let run = |(url, script): &(String, String)| {
                let (url, script, c, s) = (url.clone(), script.clone(), o.connections, o.seconds);
                let place = o.wrk.clone();
                std::thread::spawn(move || wrk_with(&url, &script, c, s, &place))
                    .join()
                    .map_err(|_| "wrk thread panicked")?
            };
            let a = run(&pair.ours)?;
            let b = run(&pair.reference)?;
            if a.non_2xx + a.errors + b.non_2xx + b.errors > 0 {
                return Err(format!("{}: failed requests in a run ({a:?} / {b:?})", pair.label).into());
            }
            ratios.push(a.ok_per_second() / b.ok_per_second());
            ours.push(a);
            theirs.push(b);
        }
        let m = |runs: &[WrkRun], f: fn(&WrkRun) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        println!(
            "| {} | {:.0} | {:.2} | {} | {:.0} | {:.2} | {:.2} |",
            pair.label,
            m(&ours, WrkRun::ok_per_second),
            m(&ours, |r| r.p99_ms),
            pair.reference_label,
            m(&theirs, WrkRun::ok_per_second),
            m(&theirs, |r| r.p99_ms),
            median(&ratios)
        );
    }
    println!();
    println!("load average at the end: {}", load_average());
    drop(nginx);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
