//! Crash cycles, the short form: three SIGKILLs of a real server under mixed write load, each
//! followed by a restart and a look-up of every write acknowledged so far (present, searchable,
//! deletions gone) and a comparison of SQLite with the API's counts, the search index and the
//! change feed. The checks live in `bench/src/crash.rs`, shared with the 20-cycle benchmark
//! (`cargo run --release -p agentdir-bench --bin crash_cycles`).

mod common;

#[path = "../bench/src/crash.rs"]
#[allow(dead_code)]
mod crash;

use std::path::PathBuf;

use common::{RELAXED_LIMITS, Server};
use crash::{Crashable, Settings};

impl Crashable for Server {
    fn base_url(&self) -> String {
        self.base.clone()
    }
    fn kill_now(&mut self) {
        self.kill();
    }
    fn start_again(&mut self) {
        self.restart();
    }
    fn database(&self) -> PathBuf {
        self.data_dir.join("agentdir.sqlite3")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_three_sigkills() {
    let mut s = Server::start_with(RELAXED_LIMITS).await;
    let settings = Settings { cycles: 3, writers: 3, min_acks: 40 };
    let reports =
        crash::run(&mut s, &settings, |r| eprintln!("{r:?}")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reports.len(), 3);
    let last = &reports[2];
    // Every cycle wrote before its kill, and the checks covered all of it.
    assert!(reports.iter().all(|r| r.acked >= settings.min_acks), "{reports:?}");
    assert!(last.agents > 0 && last.calls > 0 && last.replies > 0, "{last:?}");
}
