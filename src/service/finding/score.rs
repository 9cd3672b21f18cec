//! How a search with `q` scores the agents that match: relevance (words and meaning fused),
//! weighed by the evidence the directory holds about each agent. Every weight is declared here,
//! once; the docs (docs/search.md) state them.
//!
//! - **Words**: an agent that holds every word of `q` scores `WORD_FLOOR`, plus up to
//!   `1 - WORD_FLOOR` by its place among the first [`WORD_WINDOW`](super::WORD_WINDOW) word
//!   matches (BM25 order).
//!   Matching every word is what counts; repeating them buys little (a stuffed profile is at most
//!   `1 - WORD_FLOOR` ahead).
//! - **Meaning**: cosine similarity of the centred vectors (see `agentdir_meaning::MODEL_ID`)
//!   mapped from [`MEANING_FLOOR`]..[`MEANING_FULL`] to 0..1; for a need the quick encoder read,
//!   whose similarities run lower, from [`QUICK_MEANING_FLOOR`]..[`QUICK_MEANING_FULL`].
//! - **Relevance** = `WORDS_WEIGHT × max(words, meaning) + MEANING_WEIGHT × meaning` (words
//!   alone when the model is not used): holding the words adds to a meaning match, and missing
//!   one of them ("my", a synonym) costs a strong meaning match nothing.
//! - **Fit** = `min(1, relevance / FIT_FULL)`: past `FIT_FULL` an agent fits the need, and a
//!   profile that repeats the need's words fits no better than one that describes the same
//!   service in its own words.
//! - **Score** = `evidence × fit + TIE_BREAK × (relevance + words)`: among agents that fit,
//!   evidence decides; relevance orders the rest and breaks ties, holding the words first (a
//!   rare term or a name the agent holds beats a vaguely similar profile of equal evidence). An agent whose whole handle is `q`
//!   comes first (`EXACT_HANDLE_BONUS`) when no other agent holds the words of `q`: whoever
//!   typed such a handle wants that agent. A handle that is a common word of the need
//!   (`translator`) earns nothing by being typed, so a fresh sign-up cannot take that word's
//!   top place from agents with evidence.
//! - **Near copies**: among the first [`COPY_WINDOW`] of that order, an agent whose profile is
//!   nearly the same as that of one ranked above it (similarity ≥ [`COPY_SIMILARITY`]; distinct
//!   agents of one trade stay below 0.85 on the judged set) has its score multiplied by
//!   [`COPY_FACTOR`]: thirty registrations of one stuffed profile do not fill the top places
//!   ahead of fresh agents that fit as well.
//! - **Newcomers yield**: among the first [`NEWCOMER_WINDOW`] places at most
//!   [`NEWCOMERS_AT_MOST`] go to newcomers (level 0, no confirmed collaboration, joined in the
//!   last 30 days; a link proof costs a sign-up only a page of its own, so it does not vouch)
//!   while a vouched agent (level 1 or more, or a confirmed collaboration) that fits
//!   (fit ≥ [`VOUCHED_FIT`]) is ranked below them: the best of those moves up. However many
//!   keyword-stuffed sign-ups arrive, they never take over the top of a need that agents with
//!   evidence meet.
//! - **Evidence** multiplies fit: `EVIDENCE_BASE` for an agent nobody vouches for, up to
//!   `EVIDENCE_BASE + EVIDENCE_TRUST` with trust (level, live link proofs, confirmed
//!   collaborations), plus a little for recent activity, less for operator actions (hidden calls,
//!   suspensions). Reports are never read: anyone can file one.

use crate::derived::vectors::Facts;
use crate::domain::agent::NEW_WINDOW_DAYS;
use crate::domain::ranking::{MatchedBy, Ranking, Signals};
use crate::time::DAY;

/// Profiles at least this similar count as copies of each other.
pub const COPY_SIMILARITY: f32 = 0.95;
/// How far down the ranked order copies are looked for.
pub const COPY_WINDOW: usize = 50;
/// A near copy's score is multiplied by this: below a fresh sign-up that fits as well, still
/// above an unverified agent when the copy is of a verified one.
pub const COPY_FACTOR: f32 = 0.9;
/// Similarity mapped to 0 and to 1 of the meaning signal.
pub const MEANING_FLOOR: f32 = 0.10;
pub const MEANING_FULL: f32 = 0.45;
/// The same for a need the quick encoder read: its similarities to the agents that fit run at
/// about 0.6 of the full model's (meaning/STATIC.md), measured on the relevance benchmark with
/// every need read by it (docs/search.md).
pub const QUICK_MEANING_FLOOR: f32 = 0.02;
pub const QUICK_MEANING_FULL: f32 = 0.30;
pub const WORD_FLOOR: f32 = 0.8;
pub const WORDS_WEIGHT: f32 = 0.4;
pub const MEANING_WEIGHT: f32 = 0.6;
pub const FIT_FULL: f32 = 0.7;
pub const EXACT_HANDLE_BONUS: f32 = 10.0;
/// Of the first `NEWCOMER_WINDOW` places, newcomers hold at most `NEWCOMERS_AT_MOST` while a
/// vouched agent with fit at least `VOUCHED_FIT` is ranked below them.
pub const NEWCOMER_WINDOW: usize = 5;
pub const NEWCOMERS_AT_MOST: usize = 2;
pub const VOUCHED_FIT: f64 = 0.6;
pub const TIE_BREAK: f32 = 0.05;
pub const EVIDENCE_BASE: f32 = 0.6;
pub const EVIDENCE_TRUST: f32 = 0.4;
/// Trust from the level (0, 1, 2), then from each live link proof and confirmed collaboration.
pub const TRUST_BY_LEVEL: [f32; 3] = [0.0, 0.5, 0.75];
pub const TRUST_PER_PROOF: f32 = 0.1;
pub const TRUST_PER_COLLABORATION: f32 = 0.1;
/// Activity within this many days adds up to `ACTIVITY_BONUS`, fading to 0 at `ACTIVITY_FADE_DAYS`.
pub const ACTIVITY_RECENT_DAYS: i64 = 30;
pub const ACTIVITY_FADE_DAYS: i64 = 180;
pub const ACTIVITY_BONUS: f32 = 0.05;
/// Taken off per call an operator hid (at most three count) and per suspension (at most two).
pub const PENALTY_PER_HIDDEN_CALL: f32 = 0.05;
pub const PENALTY_PER_SUSPENSION: f32 = 0.15;

/// What is the same for every agent one search scores.
pub struct Scoring<'a> {
    /// The handle `q` names, if it names one and no other agent holds its words.
    pub handle: Option<&'a str>,
    /// The time of the search (unix ms), for the days since each agent was active.
    pub now: i64,
    /// How `q` was matched: by meaning (either encoder), relevance fuses words and meaning.
    pub matched_by: MatchedBy,
}

/// An agent's place among the word matches (BM25 order): `place` of the first `window`.
#[derive(Debug, Clone, Copy)]
pub struct WordPlace {
    pub place: usize,
    pub window: usize,
}

/// What the search knew about one agent it scores.
pub struct Candidate<'a> {
    /// Its place among the word matches, if it holds every word of `q`.
    pub words: Option<WordPlace>,
    /// Its profile's similarity to the need, if the need was read and it has a vector.
    pub similarity: Option<f32>,
    pub facts: Option<&'a Facts>,
}

/// The signals of relevance of one match, agent or call.
#[derive(Debug, Clone, Copy)]
pub struct Relevance {
    pub words: f32,
    pub meaning: f32,
    /// Words and meaning fused.
    pub relevance: f32,
}

/// Words and meaning fused, as the module docs state: the same for agents and calls.
pub fn relevance(matched_by: MatchedBy, words: Option<WordPlace>, similarity: Option<f32>) -> Relevance {
    let words = words
        .map_or(0.0, |w| WORD_FLOOR + (1.0 - WORD_FLOOR) * (1.0 - w.place as f32 / w.window.max(1) as f32));
    let (floor, full) = if matched_by.quick() {
        (QUICK_MEANING_FLOOR, QUICK_MEANING_FULL)
    } else {
        (MEANING_FLOOR, MEANING_FULL)
    };
    let meaning = similarity.map_or(0.0, |s| ((s - floor) / (full - floor)).clamp(0.0, 1.0));
    let relevance = if matched_by.by_meaning() {
        WORDS_WEIGHT * words.max(meaning) + MEANING_WEIGHT * meaning
    } else {
        words
    };
    Relevance { words, meaning, relevance }
}

/// A call's score: its relevance, holding the words breaking ties (calls carry no evidence).
pub fn call_score(r: &Relevance) -> f32 {
    r.relevance + TIE_BREAK * r.words
}

pub fn score(s: &Scoring<'_>, c: &Candidate<'_>) -> Ranking {
    let Relevance { words, meaning, relevance } = relevance(s.matched_by, c.words, c.similarity);
    let f = c.facts;
    let level = f.map_or(0, |f| f.level);
    let e = f.map(|f| f.evidence).unwrap_or_default();
    let trust = (TRUST_BY_LEVEL[usize::from(level.min(2))]
        + TRUST_PER_PROOF * e.live_proofs.min(2) as f32
        + TRUST_PER_COLLABORATION * e.collaborations.min(3) as f32)
        .min(1.0);
    let days = f.map_or(i64::MAX / DAY, |f| (s.now - f.last_active_at).max(0) / DAY);
    let activity = if days <= ACTIVITY_RECENT_DAYS {
        ACTIVITY_BONUS
    } else if days < ACTIVITY_FADE_DAYS {
        ACTIVITY_BONUS * (ACTIVITY_FADE_DAYS - days) as f32
            / (ACTIVITY_FADE_DAYS - ACTIVITY_RECENT_DAYS) as f32
    } else {
        0.0
    };
    let penalty = PENALTY_PER_HIDDEN_CALL * e.hidden_calls.min(3) as f32
        + PENALTY_PER_SUSPENSION * e.suspensions.min(2) as f32;
    let evidence = (EVIDENCE_BASE + EVIDENCE_TRUST * trust + activity - penalty).max(0.1);
    let fit = (relevance / FIT_FULL).min(1.0);
    let exact_handle = f.is_some_and(|f| s.handle == Some(&*f.handle));
    // A link proof costs a sign-up no more than its own web page: it does not vouch for it.
    let vouched = level > 0 || e.collaborations > 0;
    let newcomer = !vouched && f.is_some_and(|f| s.now - f.joined_at < NEW_WINDOW_DAYS * DAY);
    let bonus = if exact_handle { EXACT_HANDLE_BONUS } else { 0.0 };
    Ranking {
        score: shown(evidence * fit + TIE_BREAK * (relevance + words) + bonus),
        signals: Signals {
            words: shown(words),
            similarity: c.similarity.map(shown),
            meaning: shown(meaning),
            relevance: shown(relevance),
            fit: shown(fit),
            evidence: shown(evidence),
            trust_level: level,
            live_link_proofs: e.live_proofs,
            confirmed_collaborations: e.collaborations,
            days_since_active: days,
            exact_handle,
            newcomer,
            near_copy: false,
            matched_by: s.matched_by,
            matched_fields: Vec::new(),
        },
    }
}

/// Four decimals: what a reader needs, and the same digits whichever way the JSON is written.
fn shown(x: f32) -> f64 {
    (f64::from(x) * 1e4).round() / 1e4
}

/// Marks near copies among the first [`COPY_WINDOW`] of a ranked order (each against the agents
/// above it that are not copies), multiplies their scores by [`COPY_FACTOR`] and orders the
/// window again; `similar` gives the profile similarity of the agents at two places of the order.
pub fn demote_near_copies(order: &mut [(u64, Ranking)], similar: impl Fn(usize, usize) -> Option<f32>) {
    let n = order.len().min(COPY_WINDOW);
    let window = &mut order[..n];
    let mut firsts: Vec<usize> = Vec::new();
    for (place, (_, ranking)) in window.iter_mut().enumerate() {
        if firsts.iter().any(|first| similar(*first, place).is_some_and(|s| s >= COPY_SIMILARITY)) {
            ranking.signals.near_copy = true;
            ranking.score = shown(ranking.score as f32 * COPY_FACTOR);
        } else {
            firsts.push(place);
        }
    }
    window.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
}

/// Moves vouched agents that fit up past newcomers, so that of the first [`NEWCOMER_WINDOW`]
/// places at most [`NEWCOMERS_AT_MOST`] are newcomers while such an agent is below them; each
/// keeps its score (the order is no longer by score only there), the others keep their order.
pub fn newcomers_yield(order: &mut [(u64, Ranking)]) {
    let vouched_fit = |r: &Ranking| {
        r.signals.fit >= VOUCHED_FIT && (r.signals.trust_level > 0 || r.signals.confirmed_collaborations > 0)
    };
    let mut newcomers = 0;
    for place in 0..order.len().min(NEWCOMER_WINDOW) {
        if order[place].1.signals.newcomer && newcomers >= NEWCOMERS_AT_MOST {
            let Some(below) = order[place..].iter().position(|(_, r)| vouched_fit(r)) else { return };
            order[place..=place + below].rotate_right(1);
        }
        newcomers += usize::from(order[place].1.signals.newcomer);
    }
}
