//! Progress of long operator commands (`admin reindex`, `admin backup`): a bar on stderr when
//! it is a terminal; otherwise plain lines at each tenth of the work and at least every
//! `LINE_EVERY`, so a log file or a cron mail stays readable. The server's own rebuilds report
//! nothing through it.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Without a terminal, a line at least this often while the work goes on.
pub const LINE_EVERY: Duration = Duration::from_secs(10);
/// Without a terminal, a line each time the work passes another tenth.
const LINE_STEPS: u64 = 10;

/// What the counts count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Search-index documents (agents and calls).
    Documents,
    Bytes,
}

impl Unit {
    fn amount(self, n: u64) -> String {
        match self {
            Unit::Documents => n.to_string(),
            Unit::Bytes => HumanBytes(n).to_string(),
        }
    }

    fn bar_template(self) -> &'static str {
        match self {
            Unit::Documents => "{prefix}: [{wide_bar}] {pos}/{len} documents ({percent}%) {elapsed}",
            Unit::Bytes => "{prefix}: [{wide_bar}] {bytes}/{total_bytes} ({percent}%) {elapsed}",
        }
    }
}

pub struct Progress {
    sink: Sink,
    task: &'static str,
    unit: Unit,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
    last_step: Option<u64>,
}

enum Sink {
    Bar(ProgressBar),
    Lines,
    Silent,
}

impl Progress {
    /// Reports `task` on stderr: a bar on a terminal, lines otherwise.
    pub fn stderr(task: &'static str, unit: Unit) -> Progress {
        let sink = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(unit.bar_template())
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(task);
            Sink::Bar(bar)
        } else {
            Sink::Lines
        };
        Progress::with_sink(sink, task, unit)
    }

    /// Reports nothing.
    pub fn silent() -> Progress {
        Progress::with_sink(Sink::Silent, "", Unit::Documents)
    }

    fn with_sink(sink: Sink, task: &'static str, unit: Unit) -> Progress {
        let now = Instant::now();
        Progress { sink, task, unit, total: 0, done: 0, started: now, last_line: now, last_step: None }
    }

    /// Whether anything is reported (else the caller may skip counting the work).
    pub fn reports(&self) -> bool {
        !matches!(self.sink, Sink::Silent)
    }

    /// How much work there is; reports the start.
    pub fn start(&mut self, total: u64) {
        self.total = total;
        if let Sink::Bar(bar) = &self.sink {
            bar.set_length(total);
        }
        self.set(0);
    }

    /// How much of the work is done.
    pub fn set(&mut self, done: u64) {
        self.done = done.min(self.total);
        match &self.sink {
            Sink::Bar(bar) => bar.set_position(self.done),
            Sink::Lines => {
                let step = (self.done * LINE_STEPS).checked_div(self.total).unwrap_or(LINE_STEPS);
                if self.last_step != Some(step) || self.last_line.elapsed() >= LINE_EVERY {
                    self.last_step = Some(step);
                    self.line();
                }
            }
            Sink::Silent => {}
        }
    }

    pub fn inc(&mut self, n: u64) {
        self.set(self.done.saturating_add(n));
    }

    /// The work is done (everything counted); the bar leaves the terminal clean.
    pub fn finish(&mut self) {
        match &self.sink {
            Sink::Bar(bar) => bar.finish_and_clear(),
            Sink::Lines if self.last_step != Some(LINE_STEPS) || self.done != self.total => {
                self.done = self.total;
                self.last_step = Some(LINE_STEPS);
                self.line();
            }
            Sink::Lines | Sink::Silent => {}
        }
    }

    fn line(&mut self) {
        self.last_line = Instant::now();
        let percent = (self.done * 100).checked_div(self.total).unwrap_or(100);
        let of = match self.unit {
            Unit::Documents => " documents",
            Unit::Bytes => "",
        };
        eprintln!(
            "agentdir {}: {} of {}{of} ({percent}%), {:.1} s",
            self.task,
            self.unit.amount(self.done),
            self.unit.amount(self.total),
            self.started.elapsed().as_secs_f64()
        );
    }
}
