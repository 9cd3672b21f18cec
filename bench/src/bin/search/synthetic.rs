//! `--synthetic-vectors K`: every agent's vector without reading every profile with the model
//! (100,000 profiles take ~70 minutes of two cores, 1,000,000 ten times that). K agents' profiles
//! are read by the model for real; every agent then gets the vector of one of those K (its
//! base), plus Gaussian noise that leaves it at cosine ~0.9 to its base, made unit length and
//! stored as the server stores a vector (`agent_vectors`, under the agent's own text hash and
//! the model's id), so `App::open` loads it as its own. Needs then meet profiles at the
//! similarities real profiles give, spread as a corpus of distinct agents spreads them; what
//! the figures measure (how many rows a need is near, what the scan reads) follows from that.

use std::time::Instant;

use agentdir::store::search::agent_change;
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
    let weights = agentdir_meaning::built_in_weights().ok_or("this build has no model")?;
    let model = agentdir_meaning::Model::load(weights)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let share = base_texts.len().div_ceil(threads).max(1);
    let base: Vec<Vec<f32>> = std::thread::scope(|s| {
        let workers: Vec<_> = base_texts
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
    let read = started.elapsed().as_secs_f64();
    let mut rng = Rng::new(41);
    let mut gaussian = move || {
        // Box–Muller from two uniform draws.
        let u = (rng.next() >> 11) as f32 / (1u64 << 53) as f32 + f32::EPSILON;
        let v = (rng.next() >> 11) as f32 / (1u64 << 53) as f32;
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    };
    let mut pick = Rng::new(43);
    let mut written = 0;
    for chunk in ids.chunks(BATCH) {
        let tx = conn.unchecked_transaction()?;
        for &id in chunk {
            let Some(text) = texts(id)? else { continue };
            let b = &base[pick.below(base.len())];
            let mut v: Vec<f32> = b.iter().map(|x| x + NOISE * gaussian()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            debug_assert_eq!(v.len(), DIM);
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
