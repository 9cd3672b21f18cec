//! The SQLite FTS5 baseline: the same documents, the same queries and filters, the same page
//! size and the same hydration as the core, with FTS5 in place of tantivy.
//!
//! Why this shape, which is the fairest FTS5 set-up found for this corpus:
//! - Content comes from the core's own document source (`store::search::with_all_docs`), so both
//!   engines index exactly the same text; columns are the index's weight classes (agents: title
//!   / summary / body at 4 / 2 / 1; calls: title / tags / author / body at 3 / 2 / 1.5 / 1), ranked
//!   with `bm25` and those weights.
//! - Tokenizer `porter unicode61 remove_diacritics 2`: lower-cases and stems English like the
//!   index does.
//! - Chinese: unicode61 would make a whole run of Han characters one token, and the trigram
//!   tokenizer cannot match two-character words (most Chinese words), so Han runs are written as
//!   overlapping bigrams (the CJK-bigram approach of Lucene's CJKAnalyzer); a query word becomes
//!   the phrase of its bigrams. No dictionary is needed, recall is at least jieba's.
//! - Contentless tables (`content=''`): the rows are hydrated from the real tables, so storing the
//!   text again would only cost space and cache.
//! - Exact filters (capability, language, tag) are side tables keyed (value, id), the way one
//!   would index a JSON array for SQL, tested with `+f.rowid IN (…)`: without the `+` SQLite
//!   hands FTS5 the rowid list and FTS5 re-runs the MATCH once per listed id (20–60x slower on
//!   this corpus). verified, min_level and new read the `agents` row, joined only when needed.
//! - One statement per search returns the page and the exact total (`count(*) OVER ()`), like
//!   the index's single pass.
//!
//! This module's SQL is bench-only: the product's SQL stays in `src/store`.

use std::sync::Arc;
use std::time::Instant;

use agentdir::store::{self, Pool};
use agentdir_search_index::Change;
use rusqlite::Connection;
use rusqlite::types::Value;

use crate::queries::{LIMIT, Query, Target};

const CREATE: &str = "
DROP TABLE IF EXISTS bench_agents_fts;
DROP TABLE IF EXISTS bench_calls_fts;
DROP TABLE IF EXISTS bench_agent_caps;
DROP TABLE IF EXISTS bench_agent_langs;
DROP TABLE IF EXISTS bench_call_tags;
CREATE VIRTUAL TABLE bench_agents_fts USING fts5(title, summary, body,
    content = '', tokenize = 'porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE bench_calls_fts USING fts5(title, tags, author, body,
    content = '', tokenize = 'porter unicode61 remove_diacritics 2');
INSERT INTO bench_agents_fts (bench_agents_fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0)');
INSERT INTO bench_calls_fts (bench_calls_fts, rank) VALUES ('rank', 'bm25(3.0, 2.0, 1.5, 1.0)');
CREATE TABLE bench_agent_caps (cap TEXT NOT NULL, agent_id INTEGER NOT NULL, PRIMARY KEY (cap, agent_id)) WITHOUT ROWID;
CREATE TABLE bench_agent_langs (lang TEXT NOT NULL, agent_id INTEGER NOT NULL, PRIMARY KEY (lang, agent_id)) WITHOUT ROWID;
CREATE TABLE bench_call_tags (tag TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (tag, seq)) WITHOUT ROWID;
";

/// Rows written per transaction while building.
const BATCH: usize = 20_000;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

fn is_han(c: char) -> bool {
    // The same ranges the index's analyzer treats as Han.
    matches!(c as u32,
        0x3007 | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F | 0x30000..=0x323AF)
}

/// Appends `text` with each Han run written as its overlapping bigrams (a lone Han character as
/// itself), each a separate token for unicode61.
fn push_bigrammed(text: &str, out: &mut String) {
    let mut run: Vec<char> = Vec::new();
    let flush = |run: &mut Vec<char>, out: &mut String| {
        match run.len() {
            0 => return,
            1 => {
                out.push(' ');
                out.push(run[0]);
            }
            _ => {
                for pair in run.windows(2) {
                    out.push(' ');
                    out.push(pair[0]);
                    out.push(pair[1]);
                }
            }
        }
        out.push(' ');
        run.clear();
    };
    for c in text.chars() {
        if is_han(c) {
            run.push(c);
        } else {
            flush(&mut run, out);
            out.push(c);
        }
    }
    flush(&mut run, out);
}

fn column<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for p in parts {
        push_bigrammed(p, &mut out);
        out.push_str(" . ");
    }
    out
}

/// The FTS5 MATCH expression for a user's text: every word must match (implicit AND); an
/// English word is a quoted string (stemmed by the tokenizer), a Chinese word the phrase of its
/// bigrams. `None` when nothing searchable is left.
pub fn match_expression(text: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut add = |t: String| {
        if !t.is_empty() && !terms.contains(&t) {
            terms.push(t);
        }
    };
    let mut word = String::new();
    let mut han: Vec<char> = Vec::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if is_han(c) {
            han.push(c);
        } else if !han.is_empty() {
            let phrase = if han.len() == 1 {
                han[0].to_string()
            } else {
                han.windows(2).map(|p| p.iter().collect::<String>()).collect::<Vec<_>>().join(" ")
            };
            add(format!("\"{phrase}\""));
            han.clear();
        }
        if c.is_alphanumeric() && !is_han(c) {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            add(format!("\"{word}\""));
            word.clear();
        }
    }
    (!terms.is_empty()).then(|| terms.join(" "))
}

/// Sizes and timings of the build.
pub struct Built {
    pub seconds: f64,
    pub bytes: u64,
}

/// (Re)creates the baseline tables from the core's documents.
pub fn build(pool: &Pool) -> Result<Built, Error> {
    let started = Instant::now();
    let read = pool.get()?;
    let mut write = pool.get()?;
    write.execute_batch(CREATE)?;
    let mut batch: Vec<Change> = Vec::with_capacity(BATCH);
    let mut failed: Option<Error> = None;
    store::search::with_all_docs(&read, |docs| {
        for change in docs {
            batch.push(change);
            if batch.len() == BATCH
                && let Err(e) = insert(&mut write, &mut batch)
            {
                failed = Some(e);
                return;
            }
        }
        if let Err(e) = insert(&mut write, &mut batch) {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    // Merges each FTS5 index into one b-tree, as the tantivy rebuild merges into one segment.
    // No ANALYZE: with this SQLite's STAT4, statistics make every statement whose plan they
    // inform re-prepare on each new parameter value, the core's hydration statements included,
    // which would slow both engines and is not how the product runs.
    write.execute_batch(
        "INSERT INTO bench_agents_fts (bench_agents_fts) VALUES ('optimize');
         INSERT INTO bench_calls_fts (bench_calls_fts) VALUES ('optimize');",
    )?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Built { seconds, bytes: size(&write)? })
}

/// Bytes of the baseline's tables (the FTS5 shadow tables and the filter tables).
pub fn size(conn: &Connection) -> Result<u64, Error> {
    Ok(conn.query_row(
        "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE 'bench\\_%' ESCAPE '\\'",
        [],
        |r| r.get::<_, i64>(0),
    )? as u64)
}

/// Whether a previous run left the baseline in this database.
pub fn exists(conn: &Connection) -> Result<bool, Error> {
    Ok(conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('bench_agents_fts', 'bench_calls_fts', 'bench_call_tags')",
        [],
        |r| r.get::<_, i64>(0),
    )? == 3)
}

fn insert(conn: &mut Connection, batch: &mut Vec<Change>) -> Result<(), Error> {
    let tx = conn.transaction()?;
    {
        let mut agent = tx.prepare_cached(
            "INSERT INTO bench_agents_fts (rowid, title, summary, body) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut call = tx.prepare_cached(
            "INSERT INTO bench_calls_fts (rowid, title, tags, author, body) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut cap =
            tx.prepare_cached("INSERT OR IGNORE INTO bench_agent_caps (cap, agent_id) VALUES (?1, ?2)")?;
        let mut lang =
            tx.prepare_cached("INSERT OR IGNORE INTO bench_agent_langs (lang, agent_id) VALUES (?1, ?2)")?;
        let mut tag =
            tx.prepare_cached("INSERT OR IGNORE INTO bench_call_tags (tag, seq) VALUES (?1, ?2)")?;
        for change in batch.drain(..) {
            match change {
                Change::UpsertAgent(a) => {
                    let key = a.key as i64;
                    let title = column([a.handle.as_str(), &a.name]);
                    let summary = column(
                        std::iter::once(a.tagline.as_str())
                            .chain(a.capabilities.iter().map(String::as_str))
                            .chain(a.offering_titles.iter().map(String::as_str))
                            .chain(a.offering_tags.iter().map(String::as_str)),
                    );
                    let body = column(
                        [a.description_en.as_str(), &a.description_zh]
                            .into_iter()
                            .chain(a.offering_deliverables.iter().map(String::as_str))
                            .chain(std::iter::once(a.model.as_str())),
                    );
                    agent.execute(rusqlite::params![key, title, summary, body])?;
                    for c in &a.capabilities {
                        cap.execute(rusqlite::params![c.trim().to_lowercase(), key])?;
                    }
                    for l in &a.languages {
                        lang.execute(rusqlite::params![l.trim().to_lowercase(), key])?;
                    }
                }
                Change::UpsertCall(c) => {
                    let key = c.key as i64;
                    let title = column([c.title.as_str()]);
                    let tags = column(c.tags.iter().map(String::as_str));
                    let body = column([c.body.as_str(), &c.deliverable, &c.constraints]);
                    call.execute(rusqlite::params![key, title, tags, c.author_handle, body])?;
                    for t in &c.tags {
                        tag.execute(rusqlite::params![t.trim().to_lowercase(), key])?;
                    }
                }
                Change::RemoveAgent(_) | Change::RemoveCall(_) => {}
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// Runs searches against the baseline; cheap to clone.
#[derive(Clone)]
pub struct Baseline {
    pool: Arc<Pool>,
}

impl Baseline {
    pub fn new(pool: Pool) -> Baseline {
        Baseline { pool: Arc::new(pool) }
    }

    /// One search, hydrated exactly as the core hydrates its pages; returns the total.
    pub fn search(&self, q: &Query) -> Result<u64, Error> {
        let conn = self.pool.get()?;
        let now = agentdir::time::now_ms();
        let sql = match q.target {
            Some(Target::Calls) => call_sql(q),
            _ => agent_sql(q),
        };
        let (total, keys) = page(&conn, &sql, params(q, now))?;
        match q.target {
            Some(Target::Calls) => {
                std::hint::black_box(agentdir::derived::views::calls_by_keys(&conn, &keys)?);
            }
            _ => {
                std::hint::black_box(agentdir::derived::views::agents_by_ids(&conn, &keys, now)?);
            }
        }
        Ok(total)
    }
}

/// SQLite's plan for each distinct statement the queries use, to show the baseline is sound.
pub fn print_plans(baseline: &Baseline, qs: &[Query]) -> Result<(), Error> {
    let conn = baseline.pool.get()?;
    let mut seen = Vec::new();
    for q in qs {
        let sql = match q.target {
            Some(Target::Calls) => call_sql(q),
            _ => agent_sql(q),
        };
        if seen.contains(&sql) {
            continue;
        }
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
        let steps: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(params(q, 0)), |r| r.get::<_, String>(3))?
            .collect::<Result<_, _>>()?;
        println!("{sql}\n    plan: {}", steps.join(" → "));
        seen.push(sql);
    }
    Ok(())
}

fn params(q: &Query, now: i64) -> Vec<Value> {
    match q.target {
        Some(Target::Calls) => call_params(q),
        _ => agent_params(q, now),
    }
}

fn page(conn: &Connection, sql: &str, params: Vec<Value>) -> Result<(u64, Vec<i64>), Error> {
    if params.is_empty() {
        return Ok((0, Vec::new()));
    }
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut total = 0;
    let mut keys = Vec::with_capacity(LIMIT as usize);
    while let Some(r) = rows.next()? {
        keys.push(r.get::<_, i64>(0)?);
        total = r.get::<_, i64>(1)? as u64;
    }
    Ok((total, keys))
}

fn agent_sql(q: &Query) -> String {
    let join = q.verified.is_some() || q.min_level.is_some_and(|l| l > 0) || q.new == Some(true);
    let mut sql = String::from("SELECT f.rowid, count(*) OVER () FROM bench_agents_fts f");
    if join {
        sql.push_str(" JOIN agents a ON a.id = f.rowid");
    }
    sql.push_str(" WHERE bench_agents_fts MATCH ?");
    if q.capability.is_some() {
        sql.push_str(" AND +f.rowid IN (SELECT agent_id FROM bench_agent_caps WHERE cap = ?)");
    }
    if q.language.is_some() {
        sql.push_str(" AND +f.rowid IN (SELECT agent_id FROM bench_agent_langs WHERE lang = ?)");
    }
    if q.verified.is_some() {
        sql.push_str(" AND (a.mailbox_verified_at IS NOT NULL) = ?");
    }
    if q.min_level.is_some_and(|l| l > 0) {
        sql.push_str(
            " AND (CASE WHEN a.mailbox_verified_at IS NULL THEN 0 WHEN a.owner_claimed_at IS NULL THEN 1 ELSE 2 END) >= ?",
        );
    }
    if q.new == Some(true) {
        sql.push_str(" AND a.created_at >= ?");
    }
    sql.push_str(" ORDER BY f.rank LIMIT ?");
    sql
}

/// Parameters in the order of [`agent_sql`]; empty when the text can match nothing.
fn agent_params(q: &Query, now: i64) -> Vec<Value> {
    let Some(expr) = match_expression(q.text) else {
        return Vec::new();
    };
    let mut p = vec![Value::Text(expr)];
    p.extend(q.capability.map(|c| Value::Text(c.to_lowercase())));
    p.extend(q.language.map(|l| Value::Text(l.to_lowercase())));
    p.extend(q.verified.map(|v| Value::Integer(v as i64)));
    p.extend(q.min_level.filter(|l| *l > 0).map(|l| Value::Integer(l as i64)));
    if q.new == Some(true) {
        let since = now - agentdir::domain::agent::NEW_WINDOW_DAYS * agentdir::time::DAY;
        p.push(Value::Integer(since));
    }
    p.push(Value::Integer(LIMIT as i64));
    p
}

fn call_sql(q: &Query) -> String {
    let mut sql = String::from("SELECT f.rowid, count(*) OVER () FROM bench_calls_fts f");
    if q.kind.is_some() {
        sql.push_str(" JOIN calls p ON p.seq = f.rowid");
    }
    sql.push_str(" WHERE bench_calls_fts MATCH ?");
    if q.kind.is_some() {
        sql.push_str(" AND p.kind = ?");
    }
    if q.tag.is_some() {
        sql.push_str(" AND +f.rowid IN (SELECT seq FROM bench_call_tags WHERE tag = ?)");
    }
    sql.push_str(" ORDER BY f.rank LIMIT ?");
    sql
}

fn call_params(q: &Query) -> Vec<Value> {
    let Some(expr) = match_expression(q.text) else {
        return Vec::new();
    };
    let mut p = vec![Value::Text(expr)];
    p.extend(q.kind.map(|k| Value::Text(k.as_str().to_string())));
    p.extend(q.tag.map(|t| Value::Text(t.to_lowercase())));
    p.push(Value::Integer(LIMIT as i64));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn han_runs_become_bigrams() {
        let mut s = String::new();
        push_bigrammed("我们提供翻译 and 本地化", &mut s);
        assert_eq!(
            s.split_whitespace().collect::<Vec<_>>(),
            ["我们", "们提", "提供", "供翻", "翻译", "and", "本地", "地化"]
        );
        assert_eq!(
            match_expression("Legal 数据分析 翻").as_deref(),
            Some("\"legal\" \"数据 据分 分析\" \"翻\"")
        );
        assert_eq!(match_expression("!!"), None);
    }
}
