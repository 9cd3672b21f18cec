//! The vector matrix as the server had it before the two-plane layout (`meaning/src/matrix.rs`
//! at 70a6b12): contiguous int8 rows read in full by every search, and the core's selection of
//! the nearest after it (`nearest_first` of `src/service/finding.rs`). Kept here verbatim as the
//! baseline the new search is timed and checked against.

use std::collections::HashMap;

use agentdir_meaning::{DIM, Hit, Quantized};

pub struct Matrix<A> {
    values: Vec<i8>,
    scales: Vec<f32>,
    keys: Vec<u64>,
    attrs: Vec<A>,
    slots: HashMap<u64, usize>,
}

impl<A> Matrix<A> {
    pub fn new() -> Self {
        Matrix {
            values: Vec::new(),
            scales: Vec::new(),
            keys: Vec::new(),
            attrs: Vec::new(),
            slots: HashMap::new(),
        }
    }

    /// Bytes held, counted as `agentdir_meaning::Matrix::bytes` counts them.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.values.capacity()
            + self.scales.capacity() * 4
            + self.keys.capacity() * 8
            + self.attrs.capacity() * size_of::<A>()
            + self.slots.capacity() * (size_of::<(u64, usize)>() + 1)
    }

    pub fn upsert(&mut self, key: u64, vector: &Quantized, attrs: A) {
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
                self.values.resize(self.values.len() + DIM, 0);
                self.slots.insert(key, slot);
                slot
            }
        };
        self.scales[slot] = vector.scale;
        self.values[slot * DIM..(slot + 1) * DIM].copy_from_slice(&vector.values);
    }

    pub fn search(&self, query: &Quantized, threshold: f32, keep: impl Fn(&A) -> bool) -> Vec<Hit> {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.scan_avx2(query, threshold, keep) };
        }
        self.scan(query, threshold, keep)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn scan_avx2(&self, query: &Quantized, threshold: f32, keep: impl Fn(&A) -> bool) -> Vec<Hit> {
        self.scan(query, threshold, keep)
    }

    #[inline(always)]
    fn scan(&self, query: &Quantized, threshold: f32, keep: impl Fn(&A) -> bool) -> Vec<Hit> {
        let mut hits = Vec::new();
        for (slot, row) in self.values.chunks_exact(DIM).enumerate() {
            let similarity = dot(&query.values, row) as f32 * query.scale * self.scales[slot];
            if similarity >= threshold && keep(&self.attrs[slot]) {
                hits.push(Hit { key: self.keys[slot], similarity });
            }
        }
        hits
    }
}

#[inline(always)]
fn dot(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
}

/// Up to `wanted` of `hits` that `accept` takes, nearest first (equal similarities by key).
pub fn nearest_first(hits: &mut [Hit], wanted: usize, accept: impl Fn(&u64) -> bool) -> Vec<Hit> {
    let order = |a: &Hit, b: &Hit| b.similarity.total_cmp(&a.similarity).then(a.key.cmp(&b.key));
    let mut taken = Vec::new();
    let mut rest = hits;
    while taken.len() < wanted && !rest.is_empty() {
        let chunk = (2 * (wanted - taken.len())).max(64).min(rest.len());
        if chunk < rest.len() {
            rest.select_nth_unstable_by(chunk - 1, order);
        }
        let (head, tail) = rest.split_at_mut(chunk);
        head.sort_unstable_by(order);
        taken.extend(head.iter().filter(|hit| accept(&hit.key)).take(wanted - taken.len()));
        rest = tail;
    }
    taken
}
