//! The vectors of every searchable agent in memory, each int8 row kept as two planes of 4-bit
//! nibbles: its high nibbles (a 4-bit code of the row, read for every row by the first pass of
//! [`Matrix::nearest`]) and its low nibbles (read only for the rows the first pass lets through,
//! to compute their exact similarity). The two planes together are the int8 row, so the exact
//! similarity is the same integer dot product as before, to the bit, and the codes cost no
//! memory beyond the rows themselves. Rows are keyed by the same integer key as the search
//! index; each carries what filters need (`A`).

use std::collections::HashMap;

use crate::{DIM, Quantized};

/// Bytes of one plane of one row: two nibbles a byte.
pub(crate) const HALF: usize = DIM / 2;

/// A row at or above the similarity asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub key: u64,
    /// Cosine similarity to the query, -1..=1.
    pub similarity: f32,
}

pub struct Matrix<A> {
    /// Per row, [`HALF`] bytes: byte `j` holds the high nibble (offset to 0..=15) of dimension
    /// `j` in its low half and that of dimension `j + HALF` in its high half.
    pub(crate) high: Vec<u8>,
    /// The low nibbles (0..=15), packed the same way: `value = 16 × (high − 8) + low`.
    pub(crate) low: Vec<u8>,
    pub(crate) scales: Vec<f32>,
    /// What the first pass needs of each row (see [`Estimate`]), apart so that it reads eight
    /// rows' at once.
    pub(crate) factors: Vec<f32>,
    pub(crate) spreads: Vec<f32>,
    pub(crate) keys: Vec<u64>,
    pub(crate) attrs: Vec<A>,
    slots: HashMap<u64, usize>,
}

/// The first pass reads a row as `ĥ = 16 × (high − 8) + 7.5` (the middle of each nibble's
/// range) and estimates its similarity to `q` as `factor × ⟨q, ĥ⟩ × q.scale`. `factor`
/// (`⟨r, r⟩ / ⟨r, ĥ⟩ × scale`) makes the estimate unbiased: what it misses, `e = r − ĥ × ⟨r, r⟩
/// / ⟨r, ĥ⟩`, is orthogonal to the row, so the error does not grow with the similarity. What is
/// left is the low nibbles' noise, near uniform and independent of meaning, so the error
/// `⟨q, e⟩` has standard deviation `|q| × |e| / √(DIM − 1)`; `spread` is `|e| × scale /
/// √(DIM − 1)`, that deviation per unit of query norm.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Estimate {
    pub factor: f32,
    pub spread: f32,
}

/// One vector as a row of the matrix holds it: its two planes of nibbles and the first pass's
/// factors. Encoding is most of an upsert's cost, so a load encodes rows on every core and
/// only places them under its lock.
pub struct EncodedRow {
    high: [u8; HALF],
    low: [u8; HALF],
    scale: f32,
    estimate: Estimate,
}

impl EncodedRow {
    pub fn of(vector: &Quantized) -> EncodedRow {
        debug_assert_eq!(vector.values.len(), DIM);
        let (high, low, estimate) = encode(&vector.values, vector.scale);
        EncodedRow { high, low, scale: vector.scale, estimate }
    }
}

impl<A> Default for Matrix<A> {
    fn default() -> Self {
        Matrix {
            high: Vec::new(),
            low: Vec::new(),
            scales: Vec::new(),
            factors: Vec::new(),
            spreads: Vec::new(),
            keys: Vec::new(),
            attrs: Vec::new(),
            slots: HashMap::new(),
        }
    }
}

impl<A> Matrix<A> {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Bytes held, about (the key map counted at its capacity).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.high.capacity()
            + self.low.capacity()
            + (self.scales.capacity() + self.factors.capacity() + self.spreads.capacity()) * size_of::<f32>()
            + self.keys.capacity() * size_of::<u64>()
            + self.attrs.capacity() * size_of::<A>()
            + self.slots.capacity() * (size_of::<(u64, usize)>() + 1)
    }

    /// Adds or replaces the row of `key`.
    pub fn upsert(&mut self, key: u64, vector: &Quantized, attrs: A) {
        self.upsert_encoded(key, &EncodedRow::of(vector), attrs);
    }

    /// Room for `additional` more rows without moving the planes as they grow (a load at
    /// start knows how many it reads).
    pub fn reserve(&mut self, additional: usize) {
        self.keys.reserve(additional);
        self.attrs.reserve(additional);
        self.scales.reserve(additional);
        self.factors.reserve(additional);
        self.spreads.reserve(additional);
        self.high.reserve(additional * HALF);
        self.low.reserve(additional * HALF);
        self.slots.reserve(additional);
    }

    /// [`Self::upsert`] of a row encoded beforehand (by [`EncodedRow::of`], on another thread).
    pub fn upsert_encoded(&mut self, key: u64, row: &EncodedRow, attrs: A) {
        let slot = match self.slots.get(&key) {
            Some(&slot) => {
                self.attrs[slot] = attrs;
                slot
            }
            None => {
                let slot = self.keys.len();
                self.keys.push(key);
                self.attrs.push(attrs);
                self.scales.push(0.0);
                self.factors.push(0.0);
                self.spreads.push(0.0);
                self.high.resize(self.high.len() + HALF, 0);
                self.low.resize(self.low.len() + HALF, 0);
                self.slots.insert(key, slot);
                slot
            }
        };
        self.scales[slot] = row.scale;
        self.factors[slot] = row.estimate.factor;
        self.spreads[slot] = row.estimate.spread;
        self.high[slot * HALF..(slot + 1) * HALF].copy_from_slice(&row.high);
        self.low[slot * HALF..(slot + 1) * HALF].copy_from_slice(&row.low);
    }

    /// Removes the row of `key` (the last row takes its place).
    pub fn remove(&mut self, key: u64) {
        let Some(slot) = self.slots.remove(&key) else {
            return;
        };
        let last = self.keys.len() - 1;
        if slot != last {
            let moved = self.keys[last];
            self.keys.swap(slot, last);
            self.attrs.swap(slot, last);
            self.scales.swap(slot, last);
            self.factors.swap(slot, last);
            self.spreads.swap(slot, last);
            for plane in [&mut self.high, &mut self.low] {
                let (head, tail) = plane.split_at_mut(last * HALF);
                head[slot * HALF..(slot + 1) * HALF].copy_from_slice(&tail[..HALF]);
            }
            self.slots.insert(moved, slot);
        }
        self.keys.pop();
        self.attrs.pop();
        self.scales.pop();
        self.factors.pop();
        self.spreads.pop();
        self.high.truncate(last * HALF);
        self.low.truncate(last * HALF);
    }

    pub fn contains(&self, key: u64) -> bool {
        self.slots.contains_key(&key)
    }

    /// The similarity of `key`'s row to `query`, if it has one.
    pub fn similarity(&self, query: &Quantized, key: u64) -> Option<f32> {
        let slot = *self.slots.get(&key)?;
        Some(self.exact::<Plain>(&Query::of(query), slot))
    }

    /// A row put back together, if it has one: for comparing it with many others (a page's
    /// near copies) without unpacking it for each.
    pub fn unpacked(&self, key: u64) -> Option<Unpacked> {
        let slot = *self.slots.get(&key)?;
        Some(Unpacked { row: self.row(slot), scale: self.scales[slot] })
    }

    /// The int8 row of a slot, put back together from its planes.
    pub(crate) fn row(&self, slot: usize) -> [i8; DIM] {
        let mut row = [0i8; DIM];
        let (high, low) =
            (&self.high[slot * HALF..(slot + 1) * HALF], &self.low[slot * HALF..(slot + 1) * HALF]);
        for j in 0..HALF {
            let value = |h: u8, l: u8| (16 * (i32::from(h) - 8) + i32::from(l)) as i8;
            row[j] = value(high[j] & 15, low[j] & 15);
            row[j + HALF] = value(high[j] >> 4, low[j] >> 4);
        }
        row
    }

    /// The exact similarity: the same integer dot product and the same float steps as a plain
    /// int8 scan, so the same value to the bit.
    #[inline(always)]
    pub(crate) fn exact<K: Kernel>(&self, q: &Query, slot: usize) -> f32 {
        let t = K::dot(q, &self.high[slot * HALF..(slot + 1) * HALF]);
        self.exact_given_high::<K>(q, slot, t)
    }

    /// [`Matrix::exact`] when the first pass already has `t = ⟨q, high⟩`: reads the low plane only.
    #[inline(always)]
    pub(crate) fn exact_given_high<K: Kernel>(&self, q: &Query, slot: usize, t: i32) -> f32 {
        let l = K::dot(q, &self.low[slot * HALF..(slot + 1) * HALF]);
        let dot = 16 * t - 128 * q.sum + l;
        dot as f32 * q.scale * self.scales[slot]
    }

    /// Every row with similarity ≥ `threshold` whose attributes pass `keep`, in no order: the
    /// exact scan of every row (both planes). [`Matrix::nearest`] finds the same rows in order
    /// reading about half the bytes.
    pub fn search(&self, query: &Quantized, threshold: f32, keep: impl Fn(&A) -> bool) -> Vec<Hit> {
        #[cfg(all(target_arch = "x86_64", avx512_kernels))]
        if Vnni::detected() {
            // SAFETY: the CPU has AVX-512 with VNNI, checked just above.
            return unsafe { self.scan_vnni(query, threshold, keep) };
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.scan_avx2(query, threshold, keep) };
        }
        self.scan::<Plain>(query, threshold, keep)
    }

    /// [`Matrix::search`] compiled for AVX-512 with VNNI.
    #[cfg(all(target_arch = "x86_64", avx512_kernels))]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vnni")]
    unsafe fn scan_vnni(&self, query: &Quantized, threshold: f32, keep: impl Fn(&A) -> bool) -> Vec<Hit> {
        self.scan::<Vnni>(query, threshold, keep)
    }

    /// [`Matrix::search`] compiled for AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn scan_avx2(&self, query: &Quantized, threshold: f32, keep: impl Fn(&A) -> bool) -> Vec<Hit> {
        self.scan::<Avx2>(query, threshold, keep)
    }

    #[inline(always)]
    fn scan<K: Kernel>(&self, query: &Quantized, threshold: f32, keep: impl Fn(&A) -> bool) -> Vec<Hit> {
        let q = Query::of(query);
        let mut hits = Vec::new();
        for slot in 0..self.len() {
            let similarity = self.exact::<K>(&q, slot);
            if similarity >= threshold && keep(&self.attrs[slot]) {
                hits.push(Hit { key: self.keys[slot], similarity });
            }
        }
        hits
    }
}

/// A query as the planes are read with it.
pub(crate) struct Query {
    /// The values of dimensions `0..HALF` and `HALF..DIM`, matching the nibbles of each byte.
    pub first: [i8; HALF],
    pub second: [i8; HALF],
    /// Σ values.
    pub sum: i32,
    pub scale: f32,
    /// The query's length in similarity units (`|values| × scale`, about 1).
    pub norm: f32,
}

impl Query {
    pub fn of(q: &Quantized) -> Query {
        let mut first = [0i8; HALF];
        let mut second = [0i8; HALF];
        let values = &q.values[..DIM.min(q.values.len())];
        for (i, v) in values.iter().enumerate() {
            if i < HALF {
                first[i] = *v;
            } else {
                second[i - HALF] = *v;
            }
        }
        let sum = values.iter().map(|v| i32::from(*v)).sum();
        let squares: f64 = values.iter().map(|v| f64::from(*v).powi(2)).sum();
        Query { first, second, sum, scale: q.scale, norm: (squares.sqrt() * f64::from(q.scale)) as f32 }
    }
}

/// One way of computing `Σ q[j] × (packed[j] & 15) + q[j + HALF] × (packed[j] >> 4)` over a
/// row's plane: the scans are generic over it so that each is compiled with the kernel the CPU
/// can run, inlined into its loop.
pub(crate) trait Kernel {
    fn dot(q: &Query, packed: &[u8]) -> i32;

    /// The dots of eight consecutive rows (`packed` holds 8 × [`HALF`] bytes).
    fn dot8(q: &Query, packed: &[u8]) -> [i32; 8];
}

/// Plain code, vectorised as the compiler can.
pub(crate) struct Plain;

impl Kernel for Plain {
    #[inline(always)]
    fn dot(q: &Query, packed: &[u8]) -> i32 {
        nibble_dot(q, packed)
    }

    #[inline(always)]
    fn dot8(q: &Query, packed: &[u8]) -> [i32; 8] {
        std::array::from_fn(|i| nibble_dot(q, &packed[i * HALF..(i + 1) * HALF]))
    }
}

/// AVX2: 32 bytes of nibbles at a time, multiplied and summed in pairs (`vpmaddubsw`), then in
/// 32-bit lanes (`vpmaddwd`). Only used once the CPU is known to have AVX2.
#[cfg(target_arch = "x86_64")]
pub(crate) struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Kernel for Avx2 {
    #[inline(always)]
    fn dot(q: &Query, packed: &[u8]) -> i32 {
        // SAFETY: `Avx2` is only used inside functions compiled for AVX2, called after
        // `is_x86_feature_detected!("avx2")`.
        unsafe { nibble_dot_avx2(q, packed) }
    }

    #[inline(always)]
    fn dot8(q: &Query, packed: &[u8]) -> [i32; 8] {
        // SAFETY: as for `dot`.
        unsafe { nibble_dot8_avx2(q, packed) }
    }
}

/// AVX-512 with VNNI: 64 bytes of nibbles at a time, multiplied and summed in fours in one
/// instruction (`vpdpbusd`): about a third of the AVX2 kernel's instructions.
#[cfg(all(target_arch = "x86_64", avx512_kernels))]
pub(crate) struct Vnni;

#[cfg(all(target_arch = "x86_64", avx512_kernels))]
impl Vnni {
    /// Whether this CPU runs it.
    pub fn detected() -> bool {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vnni")
    }
}

#[cfg(all(target_arch = "x86_64", avx512_kernels))]
// Compiled only by Rust 1.89 or newer (`avx512_kernels`, set by build.rs).
#[allow(clippy::incompatible_msrv)]
impl Kernel for Vnni {
    #[inline(always)]
    fn dot(q: &Query, packed: &[u8]) -> i32 {
        // SAFETY: `Vnni` is only used inside functions compiled for AVX-512 with VNNI, called
        // after `Vnni::detected()`.
        unsafe { std::arch::x86_64::_mm512_reduce_add_epi32(row_sums_vnni(q, packed[..HALF].as_ptr())) }
    }

    #[inline(always)]
    fn dot8(q: &Query, packed: &[u8]) -> [i32; 8] {
        use std::arch::x86_64::*;
        let packed = &packed[..8 * HALF];
        let p = packed.as_ptr();
        // SAFETY: as for `dot`; each row is HALF bytes within `packed`.
        unsafe {
            // Sixteen lanes per row folded to eight, then rows paired until each lane is a row.
            let fold =
                |v: __m512i| _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
            let h01 = _mm256_hadd_epi32(fold(row_sums_vnni(q, p)), fold(row_sums_vnni(q, p.add(HALF))));
            let h23 = _mm256_hadd_epi32(
                fold(row_sums_vnni(q, p.add(2 * HALF))),
                fold(row_sums_vnni(q, p.add(3 * HALF))),
            );
            let h45 = _mm256_hadd_epi32(
                fold(row_sums_vnni(q, p.add(4 * HALF))),
                fold(row_sums_vnni(q, p.add(5 * HALF))),
            );
            let h67 = _mm256_hadd_epi32(
                fold(row_sums_vnni(q, p.add(6 * HALF))),
                fold(row_sums_vnni(q, p.add(7 * HALF))),
            );
            let h0123 = _mm256_hadd_epi32(h01, h23);
            let h4567 = _mm256_hadd_epi32(h45, h67);
            let sums = _mm256_add_epi32(
                _mm256_permute2x128_si256(h0123, h4567, 0x20),
                _mm256_permute2x128_si256(h0123, h4567, 0x31),
            );
            let mut out = [0i32; 8];
            _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, sums);
            out
        }
    }
}

/// One row's products with the query in sixteen 32-bit lanes to be added.
#[cfg(all(target_arch = "x86_64", avx512_kernels))]
// Compiled only by Rust 1.89 or newer (`avx512_kernels`, set by build.rs).
#[allow(clippy::incompatible_msrv)]
#[inline(always)]
unsafe fn row_sums_vnni(q: &Query, row: *const u8) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    // SAFETY: the caller gives HALF = 3 × 64 readable bytes at `row`; the query's arrays are
    // HALF bytes each; unaligned loads. No closures: they would not be compiled for AVX-512.
    unsafe {
        let mask = _mm512_set1_epi8(15);
        let (q0, q1) = (q.first.as_ptr() as *const __m512i, q.second.as_ptr() as *const __m512i);
        let row = row as *const __m512i;
        let mut acc = _mm512_setzero_si512();
        macro_rules! chunk {
            ($k:expr) => {{
                let bytes = _mm512_loadu_si512(row.add($k));
                let low = _mm512_and_si512(bytes, mask);
                let high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), mask);
                acc = _mm512_dpbusd_epi32(acc, low, _mm512_loadu_si512(q0.add($k)));
                acc = _mm512_dpbusd_epi32(acc, high, _mm512_loadu_si512(q1.add($k)));
            }};
        }
        chunk!(0);
        chunk!(1);
        chunk!(2);
        acc
    }
}

/// Written with wrapping arithmetic so that a build with overflow checks (debug, tests)
/// vectorises it too; it cannot overflow (|sum| ≤ 384 × 128 × 15).
#[inline(always)]
pub(crate) fn nibble_dot(q: &Query, packed: &[u8]) -> i32 {
    let mut sum = 0i32;
    for ((b, q0), q1) in packed[..HALF].iter().zip(&q.first).zip(&q.second) {
        let pair = i32::from(*q0)
            .wrapping_mul(i32::from(b & 15))
            .wrapping_add(i32::from(*q1).wrapping_mul(i32::from(b >> 4)));
        sum = sum.wrapping_add(pair);
    }
    sum
}

/// Not itself compiled for AVX2 (which would keep it from being inlined): always inlined into
/// the scans that are.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn nibble_dot_avx2(q: &Query, packed: &[u8]) -> i32 {
    use std::arch::x86_64::*;
    let packed = &packed[..HALF];
    // SAFETY: `row_sums` reads HALF bytes of `packed`.
    unsafe {
        let acc = row_sums(q, packed.as_ptr());
        let sum = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        let sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0b01_00_11_10));
        let sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0b10_11_00_01));
        _mm_cvtsi128_si32(sum)
    }
}

/// Eight rows at once: their lane sums added across in one tree (`vphaddd`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn nibble_dot8_avx2(q: &Query, packed: &[u8]) -> [i32; 8] {
    use std::arch::x86_64::*;
    let packed = &packed[..8 * HALF];
    // SAFETY: each `row_sums` reads HALF bytes of its row within `packed`; the store writes 32
    // bytes into `out`.
    unsafe {
        let p = packed.as_ptr();
        let h01 = _mm256_hadd_epi32(row_sums(q, p), row_sums(q, p.add(HALF)));
        let h23 = _mm256_hadd_epi32(row_sums(q, p.add(2 * HALF)), row_sums(q, p.add(3 * HALF)));
        let h45 = _mm256_hadd_epi32(row_sums(q, p.add(4 * HALF)), row_sums(q, p.add(5 * HALF)));
        let h67 = _mm256_hadd_epi32(row_sums(q, p.add(6 * HALF)), row_sums(q, p.add(7 * HALF)));
        let h0123 = _mm256_hadd_epi32(h01, h23);
        let h4567 = _mm256_hadd_epi32(h45, h67);
        // Each 128-bit half holds the four rows' sums over its half of the lanes.
        let sums = _mm256_add_epi32(
            _mm256_permute2x128_si256(h0123, h4567, 0x20),
            _mm256_permute2x128_si256(h0123, h4567, 0x31),
        );
        let mut out = [0i32; 8];
        _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, sums);
        out
    }
}

/// One row's products with the query, in eight 32-bit lanes to be added.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn row_sums(q: &Query, row: *const u8) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    // SAFETY: the caller gives HALF = 6 × 32 readable bytes at `row`; the query's arrays are
    // HALF bytes each; unaligned loads.
    unsafe {
        let mask = _mm256_set1_epi8(15);
        let ones = _mm256_set1_epi16(1);
        let (q0, q1) = (q.first.as_ptr() as *const __m256i, q.second.as_ptr() as *const __m256i);
        let row = row as *const __m256i;
        // No closures here: a closure is not compiled for AVX2 and would not inline the
        // intrinsics. 32 nibbles of each half times the query, summed in pairs (i16).
        macro_rules! chunk {
            ($k:expr) => {{
                let bytes = _mm256_loadu_si256(row.add($k));
                let low = _mm256_and_si256(bytes, mask);
                let high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask);
                _mm256_add_epi16(
                    _mm256_maddubs_epi16(low, _mm256_loadu_si256(q0.add($k))),
                    _mm256_maddubs_epi16(high, _mm256_loadu_si256(q1.add($k))),
                )
            }};
        }
        // Two chunks' pair sums stay within i16: 4 × 2 × 15 × 128 < 32768.
        let a = _mm256_madd_epi16(_mm256_add_epi16(chunk!(0), chunk!(1)), ones);
        let b = _mm256_madd_epi16(_mm256_add_epi16(chunk!(2), chunk!(3)), ones);
        let c = _mm256_madd_epi16(_mm256_add_epi16(chunk!(4), chunk!(5)), ones);
        _mm256_add_epi32(_mm256_add_epi32(a, b), c)
    }
}

/// A row's two planes and its [`Estimate`].
fn encode(values: &[i8], scale: f32) -> ([u8; HALF], [u8; HALF], Estimate) {
    let mut high = [0u8; HALF];
    let mut low = [0u8; HALF];
    let nibbles = |v: i8| (((i32::from(v) >> 4) + 8) as u8, (i32::from(v) & 15) as u8);
    for j in 0..HALF {
        let (h0, l0) = nibbles(values.get(j).copied().unwrap_or(0));
        let (h1, l1) = nibbles(values.get(j + HALF).copied().unwrap_or(0));
        high[j] = h0 | h1 << 4;
        low[j] = l0 | l1 << 4;
    }
    // In halves, so that every sum is an exact integer: 2ĥ = 32 × (v >> 4) + 15. ĥ has the sign
    // of each non-zero value, so ⟨r, ĥ⟩ > 0 whenever ⟨r, r⟩ > 0.
    let (mut rr, mut rh2, mut hh4) = (0i64, 0i64, 0i64);
    for v in values {
        let (v, h2) = (i64::from(*v), 32 * (i64::from(*v) >> 4) + 15);
        rr += v * v;
        rh2 += v * h2;
        hh4 += h2 * h2;
    }
    if rr == 0 || rh2 <= 0 {
        // A zero row: its exact similarity is 0, and so is the estimate, with no error.
        return (high, low, Estimate::default());
    }
    let (rr, rh, hh) = (rr as f64, rh2 as f64 / 2.0, hh4 as f64 / 4.0);
    let g = rr / rh;
    // |r − gĥ|² = rr − 2g⟨r, ĥ⟩ + g²|ĥ|² = g²|ĥ|² − rr, as g⟨r, ĥ⟩ = rr.
    let missed = (g * g * hh - rr).max(0.0);
    let wide = f64::from(scale);
    let estimate = Estimate {
        factor: (g * wide) as f32,
        spread: (missed.sqrt() * wide / ((DIM - 1) as f64).sqrt()) as f32,
    };
    (high, low, estimate)
}

/// A row of the matrix put back together ([`Matrix::unpacked`]).
pub struct Unpacked {
    row: [i8; DIM],
    scale: f32,
}

impl Unpacked {
    /// The similarity of two rows.
    pub fn similarity(&self, other: &Unpacked) -> f32 {
        let dot: i32 = self.row.iter().zip(&other.row).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
        dot as f32 * self.scale * other.scale
    }
}
