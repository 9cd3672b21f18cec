//! `--synthetic-vectors K`: every agent's vector without reading every profile with the model
//! (100,000 profiles take ~70 minutes of two cores, 1,000,000 ten times that). K agents' profiles
//! are read by the model for real; every agent then gets the vector of one of those K (its
//! base), plus Gaussian noise that leaves it at cosine ~0.9 to its base, made unit length and
//! stored as the server stores a vector (`agent_vectors`, under the agent's own text hash and
//! the model's id), so `App::open` loads it as its own. Needs then meet profiles at the
//! similarities real profiles give, spread as a corpus of distinct agents spreads them; what
//! the figures measure (how many rows a need is near, what the scan reads) follows from that.

use std::time::Instant;

use agentdir::store::search::{agent_change, call_change};
use agentdir_meaning::{DIM, MODEL_ID, Quantized};
use agentdir_search_index::Change;

use crate::corpus::Rng;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Each component's noise: |noise|² ≈ 384 × 0.0247² ≈ 0.23, so a copy keeps cosine ~0.9 to its
/// base, and two copies of one base ~0.81 (below the near-copy rule's 0.95).
const NOISE: f32 = 0.0247;
/// Agents' vectors written per transaction.
const BATCH: usize = 10_000;

/// Writes a synthetic vector for every listed agent that has none; prints what it took.
pub fn write(dir: &std::path::Path, bases: usize) -> Result<(), Error> {
    let pool = agentdir::store::open(dir, 2).map_err(|e| e.to_string())?;
    let conn = pool.get()?;
    let ids: Vec<i64> = conn
        .prepare(
            "SELECT a.id FROM agents a WHERE a.listed
             AND NOT EXISTS (SELECT 1 FROM agent_vectors v WHERE v.agent_id = a.id) ORDER BY a.id",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if ids.is_empty() {
        println!("\nsynthetic vectors: every listed agent has one already");
        return Ok(());
    }
    let started = Instant::now();
    let texts = |id: i64| -> Result<Option<String>, Error> {
        Ok(match agent_change(&conn, id)? {
            Change::UpsertAgent(doc) => Some(agentdir::domain::agent::profile_text(&doc)),
            _ => None,
        })
    };
    // The bases: K profiles spread over the corpus, read by the model on every core.
    let step = (ids.len() / bases.max(1)).max(1);
    let base_texts: Vec<String> = ids
        .iter()
        .step_by(step)
        .take(bases)
        .filter_map(|id| texts(*id).transpose())
        .collect::<Result<_, _>>()?;
    let base = read_on_every_core(&base_texts)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let read = started.elapsed().as_secs_f64();
    let mut noisy = Noisy::new();
    let mut written = 0;
    for chunk in ids.chunks(BATCH) {
        let tx = conn.unchecked_transaction()?;
        for &id in chunk {
            let Some(text) = texts(id)? else { continue };
            let v = noisy.copy(&base);
            let hash = agentdir::domain::agent::text_hash(&text);
            agentdir::store::vectors::upsert(&tx, id, MODEL_ID, &hash, &Quantized::new(&v))?;
            written += 1;
        }
        tx.commit()?;
    }
    println!(
        "\nsynthetic vectors: {} profiles read by the model in {read:.1} s ({threads} threads), then {written} \
         agents given a noisy copy of one of them (cosine ~0.9 to it) in {:.1} s",
        base.len(),
        started.elapsed().as_secs_f64() - read
    );
    Ok(())
}

/// `write` for calls: K visible calls read by the model (the one-core cost of a call's vector
/// is printed), every visible call without a vector then a noisy copy of one of them, stored as
/// the call worker stores it (`call_vectors`).
pub fn write_calls(dir: &std::path::Path, bases: usize) -> Result<(), Error> {
    let pool = agentdir::store::open(dir, 2).map_err(|e| e.to_string())?;
    let conn = pool.get()?;
    let seqs: Vec<i64> = conn
        .prepare(
            "SELECT p.seq FROM calls p WHERE p.status = 'active'
             AND NOT EXISTS (SELECT 1 FROM call_vectors v WHERE v.call_seq = p.seq) ORDER BY p.seq",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if seqs.is_empty() {
        println!("\nsynthetic call vectors: every call has one already");
        return Ok(());
    }
    let text = |seq: i64| -> Result<Option<String>, Error> {
        Ok(match call_change(&conn, seq)? {
            Change::UpsertCall(doc) => Some(agentdir::domain::call::call_text(&doc)),
            _ => None,
        })
    };
    let step = (seqs.len() / bases.max(1)).max(1);
    let base_texts: Vec<String> = seqs
        .iter()
        .step_by(step)
        .take(bases)
        .filter_map(|s| text(*s).transpose())
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    let base = read_on_every_core(&base_texts)?;
    let read = started.elapsed().as_secs_f64();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut noisy = Noisy::new();
    let mut written = 0;
    for chunk in seqs.chunks(BATCH) {
        let tx = conn.unchecked_transaction()?;
        for &seq in chunk {
            let v = noisy.copy(&base);
            agentdir::store::call_vectors::upsert(&tx, seq, MODEL_ID, &Quantized::new(&v))?;
            written += 1;
        }
        tx.commit()?;
    }
    println!(
        "\nsynthetic call vectors: {} calls read by the model in {read:.1} s on {threads} threads \
         ({:.1} ms of one core each: 1,000,000 calls would take {:.1} h of one core), then {written} \
         calls given a noisy copy of one of them in {:.1} s",
        base.len(),
        read * threads as f64 * 1e3 / base.len().max(1) as f64,
        read * threads as f64 / base.len().max(1) as f64 * 1_000_000.0 / 3600.0,
        started.elapsed().as_secs_f64() - read
    );
    Ok(())
}

/// Reads `texts` as passages with the model, shared over every core.
fn read_on_every_core(texts: &[String]) -> Result<Vec<Vec<f32>>, Error> {
    let weights = agentdir_meaning::built_in_weights().ok_or("this build has no model")?;
    let model = agentdir_meaning::Model::load(weights)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let share = texts.len().div_ceil(threads).max(1);
    let read: Vec<Vec<f32>> = std::thread::scope(|s| {
        let workers: Vec<_> = texts
            .chunks(share)
            .map(|chunk| {
                let model = &model;
                s.spawn(move || {
                    let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                    model.embed_passages(&refs)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().map_err(|_| "a worker failed")?.map_err(Error::from))
            .collect::<Result<Vec<_>, _>>()
    })?
    .into_iter()
    .flatten()
    .collect();
    Ok(read)
}

/// Noisy copies of base vectors, each of a base picked at random.
struct Noisy {
    noise: Rng,
    pick: Rng,
}

impl Noisy {
    fn new() -> Noisy {
        Noisy { noise: Rng::new(41), pick: Rng::new(43) }
    }

    /// A unit vector at cosine ~0.9 to one of `bases`.
    fn copy(&mut self, bases: &[Vec<f32>]) -> Vec<f32> {
        let b = &bases[self.pick.below(bases.len())];
        let mut v: Vec<f32> = b.iter().map(|x| x + NOISE * self.gaussian()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        debug_assert_eq!(v.len(), DIM);
        v
    }

    /// Box–Muller from two uniform draws.
    fn gaussian(&mut self) -> f32 {
        let u = (self.noise.next() >> 11) as f32 / (1u64 << 53) as f32 + f32::EPSILON;
        let v = (self.noise.next() >> 11) as f32 / (1u64 << 53) as f32;
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }
}
