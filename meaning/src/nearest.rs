//! The rows nearest a query, nearest first, without reading every row in full: a first pass
//! reads each row's high nibbles (half its bytes) and bounds its similarity; only the rows whose
//! upper bound can still count have their low nibbles read for the exact similarity, lazily, in
//! order of that bound. What comes out is exactly what sorting the exact scan's hits gives
//! (similarity descending, equal similarities by key), as long as no row's first-pass error
//! exceeds [`MARGIN_SIGMAS`] standard deviations (see [`crate::matrix`] for why that error is
//! the low nibbles' noise, near Gaussian with a deviation known for each row and query; at 7
//! deviations a row is misjudged with probability below 10⁻¹¹). Every rescored row checks the
//! bound again: an error past [`SURPRISE_SIGMAS`] is counted ([`surprises`]).
//!
//! The caller says how many rows it expects to take (`want`); the first pass keeps only rows
//! that can be among that many ([`COVER_SIGMAS`]). Taking more is still exact: the stream scans
//! again for the rest, down to the floor.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

#[cfg(target_arch = "x86_64")]
use crate::matrix::Avx2;
#[cfg(all(target_arch = "x86_64", avx512_kernels))]
use crate::matrix::Vnni;
use crate::matrix::{HALF, Hit, Kernel, Matrix, Plain, Query};

/// How many standard deviations of the first pass's error the bounds allow.
pub const MARGIN_SIGMAS: f32 = 7.0;

/// How many standard deviations below its estimate a row's similarity is counted, for the cover
/// (the `want`-th of these lower bounds: rows whose upper bound is below it are not candidates).
/// A cover set too high costs a second pass, never a wrong row: every row yielded is above the
/// cover and above every upper bound not yet rescored (see [`Nearest::next`]). At the full margin
/// the candidates would span 14 deviations below the `want`-th row; at 2 they span 9, and the
/// rows above the cover still outnumber `want` (meaning/SCAN.md).
pub const COVER_SIGMAS: f32 = 2.0;

/// A rescored row whose first-pass error is past this many deviations is counted: the margin
/// assumes such errors happen about once in 26 million rows.
pub const SURPRISE_SIGMAS: f32 = 5.5;

/// From this many rows a query's first pass is split across the cores, when no other query is
/// scanning at the time (with several queries at once, each already has a core).
pub const PARALLEL_ROWS: usize = 200_000;

/// Candidates rescored at a time.
const CHUNK: usize = 256;
/// Rows fetched ahead of their rescoring.
const PREFETCH: usize = 8;

/// Lower bounds are counted in buckets of this width (similarity units) to find the `want`-th.
const BUCKET: f32 = 1.0 / 512.0;
const BUCKETS: usize = 2048;
/// The bottom of the lowest bucket.
const BUCKETS_FROM: f32 = -2.0;

static SURPRISES: AtomicU64 = AtomicU64::new(0);
static SCANNING: AtomicUsize = AtomicUsize::new(0);

/// Rescored rows whose first-pass error was past [`SURPRISE_SIGMAS`], since the start.
pub fn surprises() -> u64 {
    SURPRISES.load(AtomicOrdering::Relaxed)
}

/// What one stream did, for benchmarks and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NearestStats {
    /// First passes over the rows (1, or 2 when more rows were taken than expected).
    pub passes: u32,
    /// Threads of the first pass.
    pub threads: usize,
    /// Rows the first pass let through (passing `keep`, upper bound high enough).
    pub candidates: usize,
    /// Of those, rows whose exact similarity was computed.
    pub rescored: usize,
    /// The largest first-pass error seen, in standard deviations.
    pub max_deviations: f32,
}

/// A row let through by the first pass.
#[derive(Clone, Copy)]
struct Candidate {
    slot: u32,
    /// ⟨q, high nibbles⟩, so the rescoring reads the low plane only.
    high_dot: i32,
    estimate: f32,
    upper: f32,
}

/// Upper bounds are sorted in buckets of this width: the rows rescored past the last one needed
/// are those within two buckets of it.
const PENDING_BUCKET: f32 = 1.0 / 4096.0;
const PENDING_BUCKETS: usize = 16_384;

/// Which bucket of [`PENDING_BUCKET`] holds an upper bound, counted from the top (0 for every
/// bound of 2 or more).
fn pending_bucket(upper: f32) -> usize {
    PENDING_BUCKETS
        - 1
        - (((upper - BUCKETS_FROM) / PENDING_BUCKET) as isize).clamp(0, PENDING_BUCKETS as isize - 1) as usize
}

/// The candidates not yet rescored, highest upper bound first by buckets of
/// [`PENDING_BUCKET`]: sorted once by counting (a need the quick encoder read has tens of
/// thousands of candidates, and a heap's pops cost a tenth of its search), each chunk then
/// taken from the front.
#[derive(Default)]
struct Pending {
    /// By bucket of the upper bound, highest first; within a bucket in row order.
    order: Vec<Candidate>,
    /// The first not yet taken.
    next: usize,
}

impl Pending {
    fn of(candidates: Vec<Candidate>) -> Pending {
        let mut counts = vec![0u32; PENDING_BUCKETS];
        let buckets: Vec<u16> = candidates.iter().map(|c| pending_bucket(c.upper) as u16).collect();
        buckets.iter().for_each(|&b| counts[b as usize] += 1);
        let mut start = 0;
        for n in counts.iter_mut() {
            (*n, start) = (start, start + *n);
        }
        let mut order = vec![Candidate { slot: 0, high_dot: 0, estimate: 0.0, upper: 0.0 }; candidates.len()];
        for (c, b) in candidates.into_iter().zip(buckets) {
            order[counts[b as usize] as usize] = c;
            counts[b as usize] += 1;
        }
        Pending { order, next: 0 }
    }

    fn len(&self) -> usize {
        self.order.len() - self.next
    }

    /// At or above every upper bound not yet taken (−∞ when none): the top of the next
    /// candidate's bucket, plus one bucket for the rounding of the float cast, unbounded for the
    /// top bucket (which holds every bound above it).
    fn bound(&self) -> f32 {
        match self.order.get(self.next).map(|c| pending_bucket(c.upper)) {
            None => f32::NEG_INFINITY,
            Some(0) => f32::INFINITY,
            Some(b) => BUCKETS_FROM + ((PENDING_BUCKETS - b) as f32 + 1.0) * PENDING_BUCKET,
        }
    }

    /// Where in `order` the next `n` candidates are (fewer when fewer wait): the taker's to
    /// reorder, as none is looked at again.
    fn take(&mut self, n: usize) -> std::ops::Range<usize> {
        let from = self.next;
        self.next = (from + n).min(self.order.len());
        from..self.next
    }
}

/// A rescored row, ordered nearest first, equal similarities by key.
struct Ready(Hit);

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    /// The max-heap pops the greatest: the nearest, then the smallest key.
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.similarity.total_cmp(&other.0.similarity).then(other.0.key.cmp(&self.0.key))
    }
}

/// The rows with similarity ≥ the floor that pass `keep`, nearest first (see the module).
pub struct Nearest<'m, A, F> {
    matrix: &'m Matrix<A>,
    threads: Option<usize>,
    keep: F,
    query: Query,
    floor: f32,
    /// How many rows the last first pass kept candidates for.
    want: usize,
    /// Rows whose upper bound is below this are not candidates; at the floor, every row that
    /// can reach the floor is one.
    covered: f32,
    /// The candidates not yet rescored.
    pending: Pending,
    ready: BinaryHeap<Ready>,
    stats: NearestStats,
}

impl<A: Sync> Matrix<A> {
    /// The rows with similarity ≥ `floor` that `keep` takes, nearest first (equal similarities
    /// by key): the hits of [`Matrix::search`] sorted, found reading about half the bytes.
    /// `want` is how many the caller expects to take; taking more costs one more pass.
    pub fn nearest<F>(&self, query: &crate::Quantized, floor: f32, want: usize, keep: F) -> Nearest<'_, A, F>
    where
        F: Fn(&A) -> bool + Sync,
    {
        self.nearest_on(None, query, floor, want, keep)
    }

    /// [`Matrix::nearest`] with its first pass on `threads` threads (`None`: on every core from
    /// [`PARALLEL_ROWS`] rows when no other first pass is under way, else on one).
    pub fn nearest_on<F>(
        &self,
        threads: Option<usize>,
        query: &crate::Quantized,
        floor: f32,
        want: usize,
        keep: F,
    ) -> Nearest<'_, A, F>
    where
        F: Fn(&A) -> bool + Sync,
    {
        let mut stream = Nearest {
            threads,
            matrix: self,
            keep,
            query: Query::of(query),
            floor,
            want: want.max(1),
            covered: floor,
            pending: Pending::default(),
            ready: BinaryHeap::new(),
            stats: NearestStats::default(),
        };
        stream.first_pass(f32::INFINITY);
        stream
    }
}

impl<A: Sync, F: Fn(&A) -> bool + Sync> Nearest<'_, A, F> {
    pub fn stats(&self) -> NearestStats {
        self.stats
    }

    /// Lets through the rows with an upper bound below `below` that can be among the `want`
    /// nearest (all down to the floor when `want` is `usize::MAX`). Rows at or above `below`
    /// are candidates already.
    fn first_pass(&mut self, below: f32) {
        let want = self.want;
        let m = self.matrix;
        let rows = m.len();
        let scanning = Scanning::start();
        let threads = match self.threads {
            Some(n) => n.clamp(1, rows.max(1)),
            None if scanning.alone && rows >= PARALLEL_ROWS => cores().min(rows / (PARALLEL_ROWS / 2)),
            None => 1,
        };
        let pass = Pass { m, q: &self.query, keep: &self.keep, floor: self.floor, below, want };
        let parts: Vec<Part> = if threads <= 1 {
            vec![pass.run(0..rows)]
        } else {
            let per = rows.div_ceil(threads);
            std::thread::scope(|s| {
                let pass = &pass;
                let handles: Vec<_> = (1..threads)
                    .map(|i| s.spawn(move || pass.run((i * per).min(rows)..((i + 1) * per).min(rows))))
                    .collect();
                let mut parts = vec![pass.run(0..per.min(rows))];
                for h in handles {
                    parts.push(h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
                }
                parts
            })
        };
        drop(scanning);
        let mut hist = vec![0u32; if want == usize::MAX { 0 } else { BUCKETS }];
        for p in &parts {
            hist.iter_mut().zip(&p.lower_counts).for_each(|(a, b)| *a += b);
        }
        let covered = if want == usize::MAX { self.floor } else { self.floor.max(kth_lower(&hist, want)) };
        // A first pass is made only when every candidate of the ones before has been rescored.
        debug_assert_eq!(self.pending.len(), 0);
        let candidates: Vec<Candidate> =
            parts.into_iter().flat_map(|p| p.candidates).filter(|c| c.upper >= covered).collect();
        self.stats.candidates += candidates.len();
        self.pending = Pending::of(candidates);
        self.covered = covered;
        self.stats.passes += 1;
        self.stats.threads = self.stats.threads.max(threads);
    }

    /// Rescores the next [`CHUNK`] candidates by upper bound, in the order of their rows (each
    /// row's low plane fetched ahead of its turn).
    fn rescore_chunk(&mut self) {
        let head = self.pending.take(CHUNK);
        self.pending.order[head.clone()].sort_unstable_by_key(|c| c.slot);
        for i in head.clone() {
            if i + PREFETCH < head.end {
                self.prefetch(self.pending.order[i + PREFETCH].slot as usize);
            }
            self.rescore(self.pending.order[i]);
        }
    }

    #[inline(always)]
    fn prefetch(&self, slot: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let low = self.matrix.low[slot * HALF..(slot + 1) * HALF].as_ptr();
            // SAFETY: prefetching has no effect on memory; every address is within the row.
            unsafe {
                for offset in [0, 64, 128, HALF - 1] {
                    _mm_prefetch::<_MM_HINT_T0>(low.add(offset) as *const i8);
                }
                _mm_prefetch::<_MM_HINT_T0>((&self.matrix.scales[slot] as *const f32) as *const i8);
                _mm_prefetch::<_MM_HINT_T0>((&self.matrix.keys[slot] as *const u64) as *const i8);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    fn rescore(&mut self, c: Candidate) {
        let slot = c.slot as usize;
        let low = &self.matrix.low[slot * HALF..(slot + 1) * HALF];
        let l = low_dot(&self.query, low);
        let dot = 16 * c.high_dot - 128 * self.query.sum + l;
        // The same steps as `Matrix::exact`, so the same value.
        let similarity = dot as f32 * self.query.scale * self.matrix.scales[slot];
        let sigma = (c.upper - c.estimate) / MARGIN_SIGMAS;
        if sigma > 0.0 {
            let deviations = (similarity - c.estimate).abs() / sigma;
            self.stats.max_deviations = self.stats.max_deviations.max(deviations);
            if deviations > SURPRISE_SIGMAS {
                SURPRISES.fetch_add(1, AtomicOrdering::Relaxed);
            }
        }
        self.stats.rescored += 1;
        if similarity >= self.floor {
            self.ready.push(Ready(Hit { key: self.matrix.keys[slot], similarity }));
        }
    }
}

impl<A: Sync, F: Fn(&A) -> bool + Sync> Iterator for Nearest<'_, A, F> {
    type Item = Hit;

    fn next(&mut self) -> Option<Hit> {
        loop {
            let bound = self.pending.bound();
            if let Some(Ready(top)) = self.ready.peek()
                && top.similarity > bound
                && top.similarity >= self.covered
            {
                let hit = *top;
                self.ready.pop();
                return Some(hit);
            }
            if self.pending.len() > 0 {
                self.rescore_chunk();
            } else if self.covered > self.floor {
                // More were taken than expected: the rows below the cover that can be among
                // eight times as many (the `want`-th lower bound of the new rows alone is at
                // most that of all rows, so the new cover is safe).
                self.want = self.want.saturating_mul(8);
                if self.want >= self.matrix.len() {
                    self.want = usize::MAX;
                }
                let below = self.covered;
                self.first_pass(below);
            } else {
                return None;
            }
        }
    }
}

/// One first pass over a range of rows.
struct Pass<'a, A, F> {
    m: &'a Matrix<A>,
    q: &'a Query,
    keep: &'a F,
    floor: f32,
    below: f32,
    want: usize,
}

/// What a first pass over a range found.
struct Part {
    candidates: Vec<Candidate>,
    /// Candidates per bucket of their lower bound (empty when `want` is `usize::MAX`).
    lower_counts: Vec<u32>,
}

impl<A: Sync, F: Fn(&A) -> bool + Sync> Pass<'_, A, F> {
    fn run(&self, range: std::ops::Range<usize>) -> Part {
        #[cfg(all(target_arch = "x86_64", avx512_kernels))]
        if Vnni::detected() {
            // SAFETY: the CPU has AVX-512 with VNNI, checked just above.
            return unsafe { self.run_vnni(range) };
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.run_avx2(range) };
        }
        self.run_with::<Plain>(range)
    }

    #[cfg(all(target_arch = "x86_64", avx512_kernels))]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vnni")]
    unsafe fn run_vnni(&self, range: std::ops::Range<usize>) -> Part {
        self.run_with::<Vnni>(range)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2(&self, range: std::ops::Range<usize>) -> Part {
        self.run_with::<Avx2>(range)
    }

    #[inline(always)]
    fn run_with<K: Kernel>(&self, range: std::ops::Range<usize>) -> Part {
        let (m, q) = (self.m, self.q);
        let counting = self.want != usize::MAX;
        let mut lower_counts = vec![0u32; if counting { BUCKETS } else { 0 }];
        let mut candidates = Vec::new();
        let mut counted = 0usize;
        // Rows whose upper bound is below `cover` cannot be among the `want` nearest.
        let mut cover = self.floor;
        let offset = -120.5 * q.sum as f32;
        let widen = MARGIN_SIGMAS * q.norm;
        let counted_widen = COVER_SIGMAS * q.norm;
        let mut consider = |slot: usize, high_dot: i32, estimate: f32, spread: f32, cover: &mut f32| {
            let upper = estimate + widen * spread;
            if upper < *cover || upper >= self.below || !(self.keep)(&m.attrs[slot]) {
                return;
            }
            candidates.push(Candidate { slot: slot as u32, high_dot, estimate, upper });
            if counting {
                lower_counts[bucket(estimate - counted_widen * spread)] += 1;
                counted += 1;
                if counted >= self.want && counted.is_multiple_of(256) {
                    *cover = cover.max(kth_lower(&lower_counts, self.want));
                }
            }
        };
        let mut slot = range.start;
        // Eight rows at a time: their dots, estimates and bounds computed side by side, and
        // only the rows whose bound reaches the cover looked at one by one.
        while slot + 8 <= range.end {
            let dots = K::dot8(q, &m.high[slot * HALF..(slot + 8) * HALF]);
            let (factors, spreads) = (&m.factors[slot..slot + 8], &m.spreads[slot..slot + 8]);
            let mut estimates = [0f32; 8];
            let mut uppers = [0f32; 8];
            for i in 0..8 {
                estimates[i] = ((16 * dots[i]) as f32 + offset) * q.scale * factors[i];
                uppers[i] = estimates[i] + widen * spreads[i];
            }
            if uppers.iter().fold(f32::NEG_INFINITY, |a, b| a.max(*b)) >= cover {
                for i in 0..8 {
                    consider(slot + i, dots[i], estimates[i], spreads[i], &mut cover);
                }
            }
            slot += 8;
        }
        for slot in slot..range.end {
            let high_dot = K::dot(q, &m.high[slot * HALF..(slot + 1) * HALF]);
            let estimate = ((16 * high_dot) as f32 + offset) * q.scale * m.factors[slot];
            consider(slot, high_dot, estimate, m.spreads[slot], &mut cover);
        }
        Part { candidates, lower_counts }
    }
}

fn bucket(lower: f32) -> usize {
    (((lower - BUCKETS_FROM) / BUCKET) as isize).clamp(0, BUCKETS as isize - 1) as usize
}

/// A value at or below the `want`-th largest lower bound counted (−∞ when fewer were counted).
fn kth_lower(counts: &[u32], want: usize) -> f32 {
    let mut seen = 0usize;
    for (b, n) in counts.iter().enumerate().rev() {
        seen += *n as usize;
        if seen >= want {
            // The bottom of the bucket, less one bucket for the rounding of the float cast.
            return BUCKETS_FROM + (b as f32 - 1.0) * BUCKET;
        }
    }
    f32::NEG_INFINITY
}

/// ⟨q, low nibbles⟩ of one row, with AVX-512 or AVX2 where the CPU has it.
fn low_dot(q: &Query, packed: &[u8]) -> i32 {
    #[cfg(all(target_arch = "x86_64", avx512_kernels))]
    if Vnni::detected() {
        #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vnni")]
        unsafe fn fast(q: &Query, packed: &[u8]) -> i32 {
            Vnni::dot(q, packed)
        }
        // SAFETY: the CPU has AVX-512 with VNNI, checked just above.
        return unsafe { fast(q, packed) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        unsafe fn fast(q: &Query, packed: &[u8]) -> i32 {
            Avx2::dot(q, packed)
        }
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { fast(q, packed) };
    }
    Plain::dot(q, packed)
}

/// Counts the first passes under way while it lives.
struct Scanning {
    /// No other first pass was under way when this one started.
    alone: bool,
}

impl Scanning {
    fn start() -> Scanning {
        Scanning { alone: SCANNING.fetch_add(1, AtomicOrdering::AcqRel) == 0 }
    }
}

impl Drop for Scanning {
    fn drop(&mut self) {
        SCANNING.fetch_sub(1, AtomicOrdering::AcqRel);
    }
}

fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
