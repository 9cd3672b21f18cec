//! Finding agents with `q`: word matches (the search index) and meaning matches (the vector
//! matrix) fused, weighed by evidence, paged with an exact total. The rule, stated in
//! docs/search.md:
//!
//! - An agent matches when it holds every word of `q` (the index's rule) or its profile's
//!   similarity to `q` is at least [`MEANING_THRESHOLD`]; every filter applies to both.
//!   Of the meaning matches, the [`MEANING_CANDIDATES`] nearest count. When fewer than
//!   [`NEAREST_FILL`] agents match, the nearest others with similarity at least
//!   [`NEAREST_FLOOR`] match too, up to [`NEAREST_FILL`] in all, unless the agents that match
//!   all hold the words (a precise need: a rare term, a name). A need with no known word and few
//!   near ones ([`KNOWN_WORD_SHARE`]) gets no fill; a made-up one (gibberish, keyboard mashes,
//!   no function word either: [`NeedWords`]) matches by meaning alone only at
//!   [`MADE_UP_THRESHOLD`].
//!   `total` counts the agents matching either way, each once.
//! - The first [`WORD_WINDOW`] word matches and every meaning-only match are ordered by
//!   `score::score`; the remaining word matches follow in word order.
//! - `--search-mode words` never uses meaning; `meaning` uses meaning alone (no word matching).
//! - How a need is read: remembered (`app::needs`); else, within its client network's fair
//!   share of the model (`app::shares`, charged by the need's tokens), by the full model; else
//!   by the quick encoder (`app::quick_encoder`), whose similarities have their own thresholds
//!   ([`QUICK_MEANING_THRESHOLD`], [`QUICK_NEAREST_FLOOR`]); else by words alone. The answer
//!   says which (`matched_by`).

pub mod calls;
pub mod fields;
pub mod score;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::Instant;

use agentdir_meaning::{Hit, NeedTokens, Quantized};
use agentdir_search_index::{AgentQuery, Page as IndexPage, STOP_WORDS, SearchIndex, holds_chinese_word};
use rustc_hash::FxHashSet;

use self::score::{Candidate, Scoring, WordPlace};
use crate::app::App;
use crate::app::model::SearchMode;
use crate::app::needs::ReadNeed;
use crate::app::runtime::Bound;
use crate::app::shares::Refused;
use crate::derived::vector_rows::RowFilter;
use crate::derived::vectors::State;
use crate::domain::agent::{self, AgentHit, AgentList, AgentSearch};
use crate::domain::list::Page;
use crate::domain::notice::NOTICE;
use crate::domain::ranking::{MatchedBy, Ranking};
use crate::error::{Error, Result};
use crate::telemetry;
use crate::time::{DAY, SECOND, now_ms};

/// Word matches ranked together with meaning; later ones follow in word order.
pub const WORD_WINDOW: usize = 100;
/// Cosine similarity at or above which an agent matches `q` by meaning.
pub const MEANING_THRESHOLD: f32 = 0.18;
/// Agents matched by meaning alone per search: the nearest this many at or above
/// [`MEANING_THRESHOLD`] that pass the filters and do not hold the words (those are word
/// matches). A broad need over a large directory is near tens of thousands of profiles; ranking
/// them all would cost far more than the scan, and nobody pages that far.
pub const MEANING_CANDIDATES: usize = 1_000;
/// When fewer than `NEAREST_FILL` agents match by words or by [`MEANING_THRESHOLD`], the nearest
/// others down to `NEAREST_FLOOR` match too, up to `NEAREST_FILL` in all, unless agents match
/// only by holding the words (a rare term, a name): a need stated far from
/// every profile's words (a platform's name, the other language) still meets the agents nearest
/// it, where the strict rule found none (on the judged set, cross-language nDCG@10 0.76 → 0.82).
pub const NEAREST_FILL: usize = 10;
pub const NEAREST_FLOOR: f32 = 0.12;
/// A need is made up unless one of its first [`KNOWN_WORDS_READ`] words is a known word (a word
/// in Chinese that holds a word of jieba's dictionary or of the lists `need_part` reads, one the
/// model's vocabulary holds whole as one piece, or one some agent's profile holds by the index's
/// word rule: `invoice`, `kubernetes` are spelled in pieces) or more than
/// half of them are near words: the vocabulary holds them nearly whole, their longest piece at
/// least this share of their characters (`captions` is `▁caption` + `s`, 7 of 8; `bugs` 3 of 4).
/// Made-up words and keyboard mashes are spelled out in short pieces (`flurbix` is `▁flu` `rbi`
/// `x`, 3 of 7; `qwerty` 4 of 6; `zq86207b2b` 2 of 10) and held by nobody, but a short one can
/// be a near word by chance (`plugh` is `▁plug` + `h`, `florp` `▁flor` + `p`): one near word
/// beside gibberish (`xyzzy plugh`) does not make a need real, while a need of real words in
/// pieces (`tidy bugs`) is. A number, or a word of [`SHORT_WORD_CHARACTERS`], is near only when
/// some profile holds it (`4471` in `ZX-4471-QP` is not). A made-up need gets no fill, and
/// matches by meaning alone only at
/// [`MADE_UP_THRESHOLD`]: its vector is noise, near a few profiles at up to ~0.25 on the judged
/// sets (mostly those written in Chinese), while a misspelling of a real need stays near the
/// agents that meet it (`subtitel translaton` 0.45, docs/search.md).
pub const KNOWN_WORD_SHARE: f32 = 0.75;
/// Function words, which say nothing of what a need is about: the index's English
/// [`STOP_WORDS`] but [`STOP_WORDS_KEPT`], and these. They are not read for the rule of
/// [`KNOWN_WORD_SHARE`] (neither known nor counted), and a single letter is read the same way. A
/// need whose words are these and words nobody knows is [`NeedWords::Framed`]: a misspelt need
/// (`scaned invoises to exel`) and gibberish in a sentence's frame (`the flurbix of zandor`) read
/// alike. Words that name a thing as well (`us`, `will`, `can`, `am`) are not among them.
pub const FUNCTION_WORDS: [&str; 38] = [
    "but", "nor", "onto", "about", "than", "then", "so", "if", "was", "were", "been", "being", "this",
    "these", "those", "i", "me", "my", "mine", "we", "our", "ours", "you", "your", "yours", "he", "him",
    "his", "she", "her", "hers", "they", "them", "their", "its", "some", "any", "please",
];
/// Words that ask for something without saying what: a need of gibberish in them
/// (`glarbnok service`, `help me with my zibberflax`) met the agents nearest its noise as a real
/// one. Read as [`FUNCTION_WORDS`] are: they frame a need and are neither known nor counted.
pub const REQUEST_WORDS: [&str; 22] = [
    "agent",
    "agents",
    "service",
    "services",
    "help",
    "helper",
    "need",
    "needs",
    "needed",
    "want",
    "wants",
    "wanted",
    "find",
    "looking",
    "someone",
    "somebody",
    "anyone",
    "anybody",
    "something",
    "hire",
    "get",
    "who",
];
/// The index's stop words that are read as words of a need: `it` names a trade as well, `not`
/// turns a need around.
pub const STOP_WORDS_KEPT: [&str; 2] = ["it", "not"];
/// Filler that people type where a need would go: the placeholder text of page layouts and the
/// names of examples in programming. The vocabulary holds each whole (`lorem`, `ipsum` and
/// `dolor` are Latin; `sit` and `bar` English), so `lorem ipsum dolor sit amet` and `foo bar baz`
/// read as real needs and met ten agents each through the nearest fill. Like
/// [`FUNCTION_WORDS`] they are not read for the rule of [`KNOWN_WORD_SHARE`], but they do not
/// frame a need either. Only meaning is ruled by this: an agent that holds `bar` still matches
/// `bar` by words.
pub const PLACEHOLDER_WORDS: [&str; 16] = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "foo",
    "bar",
    "baz",
    "qux",
    "quux",
    "foobar",
    "abc",
    "xyz",
];
/// A word of one character typed this many times or more (`aaaa`, `ooooo`, `哈哈哈`, `啊啊啊`) is
/// a key held down or a laugh, not a word, whatever the vocabulary holds (it holds `aaaa` whole,
/// and every Chinese character); known only when a profile holds it. Two is a word often enough
/// (`妈妈`, `看看`). So is Chinese babble, a pair of characters said twice or more (`阿巴阿巴`,
/// `咕噜咕噜`), unless it is a name of the lists `need_part` reads (`哔哩哔哩`).
pub const REPEATED_CHARACTERS: usize = 3;
/// An ASCII word of this many characters or fewer (`xj`, `k7`) is spelled whole by the
/// vocabulary whatever it is: like a number, a near word when a profile holds it (`AI`, `HR`,
/// `3D`), else neither known nor near.
pub const SHORT_WORD_CHARACTERS: usize = 2;
/// Words of a need read for a known one: each may cost a word search, so a long need of
/// gibberish costs no more than a short one.
pub const KNOWN_WORDS_READ: usize = 16;
/// The similarity at which a made-up need matches an agent by meaning alone.
pub const MADE_UP_THRESHOLD: f32 = 0.30;
/// The same for a need the quick encoder read, at its scale (about 0.6 of the full model's).
pub const QUICK_MADE_UP_THRESHOLD: f32 = 0.18;
/// The similarity at which a [`NeedWords::Framed`] need matches an agent by meaning alone:
/// between gibberish in a frame (at most 0.20 on the judged sets; `help me with my zibberflax`
/// 0.19) and a misspelt need near the agent it means (0.27–0.45).
pub const FRAMED_THRESHOLD: f32 = 0.24;
/// The same for a need the quick encoder read.
pub const QUICK_FRAMED_THRESHOLD: f32 = 0.14;
/// [`MEANING_THRESHOLD`] and [`NEAREST_FLOOR`] for a need the quick encoder read: its
/// similarities run lower than the full model's (meaning/STATIC.md: at 0.10 it lets as many
/// agents that do not fit through as the full model does at 0.18), chosen on the relevance
/// benchmark with every need read by it (docs/search.md).
pub const QUICK_MEANING_THRESHOLD: f32 = 0.10;
pub const QUICK_NEAREST_FLOOR: f32 = 0.05;
const MINUTE: i64 = 60 * SECOND;

/// What a need's words say of it, by the rule of [`KNOWN_WORD_SHARE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeedWords {
    /// A known word, or near words for more than half of them: the whole rule applies.
    Real,
    /// No word known, some [`FUNCTION_WORDS`] or [`REQUEST_WORDS`] and other words: a misspelt
    /// need or gibberish in a sentence's frame, which no word rule tells apart. Matched by
    /// meaning at [`FRAMED_THRESHOLD`], with no nearest agents to fill.
    Framed,
    /// No word known, nor any function word, or no word at all but function words and
    /// [`PLACEHOLDER_WORDS`] (`the`, `lorem ipsum`): matched by meaning alone only at
    /// [`MADE_UP_THRESHOLD`], with no nearest agents to fill.
    MadeUp,
}

impl NeedWords {
    /// The similarity at which the need matches an agent by meaning alone.
    fn threshold(self, rule: &Similarities) -> f32 {
        match self {
            NeedWords::Real => rule.threshold,
            NeedWords::Framed => rule.framed,
            NeedWords::MadeUp => rule.made_up,
        }
    }

    /// Whether the nearest agents may fill a thin result.
    fn fills(self) -> bool {
        self == NeedWords::Real
    }
}

/// A page's total and its keys in order, each with its ranking (none when listed by recency).
type OrderedPage = (u64, Vec<(u64, Option<Ranking>)>);

/// The need of a search as it was read.
pub enum Need {
    /// No `q`, no model, or the mode is words.
    Words,
    /// Neither encoder could read it now: words alone this time.
    Busy,
    /// Read by the full model (or remembered from it).
    Full(ReadNeed),
    /// Read by the quick encoder.
    Quick(ReadNeed),
}

/// A search the index could not answer (agents or calls): logged, and a 500 to the client.
fn index_failed(e: impl std::fmt::Display) -> Error {
    tracing::error!(error = %e, "search index query failed");
    Error::Internal
}

impl App {
    /// `GET /api/agents` and MCP `search_agents`, for `client` (the address the rate limits
    /// count). A need read lately is remembered; else its tokens are counted (the tokenizer, no
    /// model run) and the client's network asks its share for a turn at the model; refused
    /// (over its share, or the model busy past the wait), the quick encoder reads it; when that
    /// knows none of its words, the search is by words alone. See `app::shares`.
    pub async fn find_agents(&self, q: AgentSearch, client: IpAddr) -> Result<AgentList> {
        let text = q.q.clone();
        self.with_need(text, client, move |app, need| app.search_agents_now(q, need)).await
    }

    /// Reads the need of a search with text `text` for `client`, then runs `search` with it
    /// (the agents' and the calls' searches read needs alike, with the same shares): see
    /// [`App::find_agents`].
    pub(crate) async fn with_need<T, F>(&self, text: Option<String>, client: IpAddr, search: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&App, Need) -> Result<T> + Send + 'static,
    {
        let text = text.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string);
        let text = text.filter(|_| self.model.enabled() && self.model.mode != SearchMode::Words);
        let Some(text) = text else {
            return self.bounded(Bound::Search, move |app| search(app, Need::Words)).await;
        };
        if let Some(read) = self.needs.get(&text) {
            metrics::counter!(telemetry::MEANING_REMEMBERED).increment(1);
            return self.bounded(Bound::Search, move |app| search(app, Need::Full(read))).await;
        }
        // The cheap part first: what reading the need would cost.
        let counted = text.clone();
        let Some(tokens) = self.blocking(move |app| Ok(app.model.need_tokens(&counted))).await? else {
            return self.bounded(Bound::Search, move |app| search(app, Need::Words)).await;
        };
        let asked = Instant::now();
        let turn = self.shares.turn(client, tokens.cost()).await;
        metrics::histogram!(telemetry::SHARE_WAIT).record(asked.elapsed().as_secs_f64());
        match turn {
            // The reading and the search are one job, outside the search permits: the turn
            // already bounds these jobs, and a need that has had its turn should not then queue
            // behind every search by words. The turn is given back as soon as the model is done.
            Ok(turn) => {
                self.blocking(move |app| {
                    let need = app.read_need(&text, &tokens);
                    drop(turn);
                    search(app, need)
                })
                .await
            }
            Err(refused) => {
                let tokens = tokens.cost();
                self.bounded(Bound::Search, move |app| {
                    let need = app.read_quickly(&text, tokens, refused);
                    search(app, need)
                })
                .await
            }
        }
    }

    /// The need's vector from the full model, remembered for the next page and noted for the
    /// quick encoder's table; words alone when the model fails.
    fn read_need(&self, text: &str, tokens: &NeedTokens) -> Need {
        match self.model.embed_need(tokens) {
            Some(vector) => {
                metrics::counter!(telemetry::NEEDS_READ, "by" => "full", "reason" => "within_share")
                    .increment(1);
                let read = ReadNeed { vector, tokens: tokens.cost() };
                self.needs.put(text, &read);
                self.model.learn(text);
                Need::Full(read)
            }
            None => Need::Words,
        }
    }

    /// The need's vector from the quick encoder, for a need the shares refused; words alone
    /// when it knows none of the need's tokens.
    fn read_quickly(&self, text: &str, tokens: u32, refused: Refused) -> Need {
        let reason: &'static str = refused.into();
        match self.model.quick_need(text) {
            Some(vector) => {
                metrics::counter!(telemetry::NEEDS_READ, "by" => "quick", "reason" => reason).increment(1);
                Need::Quick(ReadNeed { vector, tokens })
            }
            None => {
                metrics::counter!(telemetry::NEEDS_READ, "by" => "words_busy", "reason" => reason)
                    .increment(1);
                metrics::counter!(telemetry::MEANING_BUSY).increment(1);
                Need::Busy
            }
        }
    }

    /// A search by words alone (or recency without `q`), weighed by evidence, whatever the
    /// mode (the benchmarks compare it with `find_agents`).
    pub async fn search_agents(&self, q: AgentSearch) -> Result<AgentList> {
        self.bounded(Bound::Search, move |app| app.search_agents_now(q, Need::Words)).await
    }

    fn search_agents_now(&self, q: AgentSearch, need: Need) -> Result<AgentList> {
        self.catch_up()?;
        let page = Page::new(q.limit, q.offset);
        let explain = q.explain == Some(true);
        // Whole minutes: the same `new=true` search then has the same index cache key for a
        // minute instead of a millisecond.
        let now = now_ms();
        let joined_since = (now - agent::NEW_WINDOW_DAYS * DAY).div_euclid(MINUTE) * MINUTE;
        let handle = q.q.as_deref().and_then(agent::as_handle);
        let query = AgentQuery {
            text: q.q.as_deref(),
            handle: handle.as_deref(),
            capability: q.capability.as_deref(),
            language: q.language.as_deref(),
            mailbox_verified: q.verified,
            live: q.live,
            min_level: q.min_level.map(u64::from),
            joined_since: (q.new == Some(true)).then_some(joined_since),
            limit: page.limit as usize,
            offset: page.offset as usize,
        };
        let text = q.q.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let (total, ordered, matched_by) = match text {
            None => {
                let found = self.index.search_agents(&query).map_err(index_failed)?;
                let listed = found.keys.iter().map(|k| (*k, None)).collect();
                (found.total, listed, MatchedBy::Recency)
            }
            Some(text) => {
                let matched_by = self.matched_by(&need);
                let (total, ordered) =
                    self.ordered_page(&query, text, handle.as_deref(), need, matched_by, now)?;
                (total, ordered, matched_by)
            }
        };
        let ids: Vec<i64> = ordered.iter().map(|(k, _)| *k as i64).collect();
        let mut rankings: HashMap<String, Ranking> = HashMap::new();
        if explain {
            let state = self.vectors.read();
            let recency = Scoring { handle: None, now, matched_by: MatchedBy::Recency };
            for (key, ranking) in ordered {
                let ranking = ranking.unwrap_or_else(|| scored(&state, &recency, key, None, None).1);
                if let Some(f) = state.facts.get(&key) {
                    rankings.insert(f.handle.to_string(), ranking);
                }
            }
        }
        // Which parts of each profile hold the need's words: asked only with `explain`.
        let check = text.filter(|_| explain).map(|t| self.index.word_check(t));
        let agents = self
            .agent_items(&ids)?
            .into_iter()
            .map(|agent| {
                let mut ranking = rankings.remove(&agent.handle);
                if let (Some(ranking), Some(check)) = (ranking.as_mut(), check.as_ref()) {
                    ranking.signals.matched_fields = fields::matched_fields(&self.index, check, &agent);
                }
                AgentHit { agent, ranking }
            })
            .collect();
        Ok(AgentList { notice: NOTICE, matched_by, agents, total, limit: page.limit, offset: page.offset })
    }

    /// How a search with text is matched, by how its need was read and the mode.
    fn matched_by(&self, need: &Need) -> MatchedBy {
        let meaning_mode = self.model.mode == SearchMode::Meaning;
        match need {
            Need::Full(_) if meaning_mode => MatchedBy::Meaning,
            Need::Full(_) => MatchedBy::Combined,
            Need::Quick(_) if meaning_mode => MatchedBy::MeaningQuick,
            Need::Quick(_) => MatchedBy::CombinedQuick,
            Need::Busy => MatchedBy::WordsBusy,
            Need::Words => MatchedBy::Words,
        }
    }

    /// The page of a search with text: its total and its keys in order, each with its ranking.
    /// The rule's steps, in order: the word window; the meaning matches, and the nearest to fill
    /// a thin result; both fused and scored; near copies demoted; newcomers yielding; the page;
    /// and past the fused part, the word matches after the window.
    fn ordered_page(
        &self,
        query: &AgentQuery,
        text: &str,
        handle: Option<&str>,
        need: Need,
        matched_by: MatchedBy,
        now: i64,
    ) -> Result<OrderedPage> {
        let (vector, rule) = match need {
            Need::Full(r) => (Some(r.vector), FULL_MODEL.for_need_of(r.tokens)),
            Need::Quick(r) => (Some(r.vector), QUICK_ENCODER.for_need_of(r.tokens)),
            Need::Busy | Need::Words => (None, FULL_MODEL),
        };
        // Meaning mode without a vector (no model, or no encoder for the need) falls back to
        // words.
        let use_words = self.model.mode != SearchMode::Meaning || vector.is_none();
        let window = self.word_window(query, use_words)?;
        let words_total = if use_words { window.total } else { 0 };
        let state = self.vectors.read();
        let meaning_only = match &vector {
            Some(v) => {
                let words = WordMatches {
                    window: window.keys.iter().copied().collect(),
                    beyond: (window.total as usize > window.keys.len()).then_some(Beyond {
                        index: &self.index,
                        query,
                        handle,
                    }),
                };
                let read = self.need_words(text);
                meaning_matches(&state, query, v, &rule, &words, words_total, read)?
            }
            None => Vec::new(),
        };
        let total = words_total + meaning_only.len() as u64;
        // The handle bonus counts only for a handle no other agent's words match (see `score`).
        let handle = handle.filter(|_| !use_words || window.total <= 1);
        let scoring = Scoring { handle, now, matched_by };
        let mut fused = fuse(&state, &scoring, vector.as_ref(), &window.keys, &meaning_only);
        // Each of the window's rows is put back together once, not once for each pair.
        let rows: Vec<_> =
            fused.iter().take(score::COPY_WINDOW).map(|(k, _)| state.matrix.unpacked(*k)).collect();
        score::demote_near_copies(&mut fused, |a, b| Some(rows[a].as_ref()?.similarity(rows[b].as_ref()?)));
        score::newcomers_yield(&mut fused);
        let (offset, limit) = (query.offset, query.limit);
        let mut page: Vec<(u64, Option<Ranking>)> =
            fused.into_iter().skip(offset).take(limit).map(|(k, r)| (k, Some(r))).collect();
        let fused_len = window.keys.len() + meaning_only.len();
        if page.len() < limit && use_words && window.total as usize > window.keys.len() {
            drop(state);
            let wanted = limit - page.len();
            page.extend(self.word_tail(query, &scoring, vector.as_ref(), fused_len, wanted)?);
        }
        Ok((total, page))
    }

    /// What the need's words say of it ([`NeedWords`], by the rule of [`KNOWN_WORD_SHARE`]):
    /// one of its first [`KNOWN_WORDS_READ`] words known, or more than half of them near words,
    /// its [`FUNCTION_WORDS`], [`PLACEHOLDER_WORDS`] and single letters left out, a word of
    /// [`REPEATED_CHARACTERS`] known only when a profile holds it. Word by word until the first
    /// known one (the first, for most needs): the tokenizer first, a word search only for a word
    /// it does not hold whole.
    fn need_words(&self, text: &str) -> NeedWords {
        let held = |word: &str| {
            let query = AgentQuery {
                text: Some(word),
                handle: None,
                capability: None,
                language: None,
                mailbox_verified: None,
                live: None,
                min_level: None,
                joined_since: None,
                limit: 1,
                offset: 0,
            };
            self.index.search_agents(&query).is_ok_and(|found| found.total > 0)
        };
        let among = |list: &[&str], word: &str| list.iter().any(|f| f.eq_ignore_ascii_case(word));
        let says_nothing = |word: &str| {
            word.is_ascii()
                && (word.len() == 1
                    || (among(STOP_WORDS, word) && !among(&STOP_WORDS_KEPT, word))
                    || among(&FUNCTION_WORDS, word)
                    || among(&REQUEST_WORDS, word))
        };
        let repeated = |word: &str, chinese: bool| {
            let chars: Vec<char> = word.chars().collect();
            let said_over = |unit: usize, times: usize| {
                chars.len() >= unit * times
                    && chars.len().is_multiple_of(unit)
                    && chars.iter().enumerate().all(|(i, &c)| c == chars[i % unit])
            };
            said_over(1, REPEATED_CHARACTERS) || (chinese && said_over(2, 2))
        };
        let (mut words, mut near, mut framed) = (0usize, 0usize, false);
        for word in
            agentdir_meaning::need_part(text).split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
        {
            if says_nothing(word) {
                framed = true;
                continue;
            }
            if among(&PLACEHOLDER_WORDS, word) {
                continue;
            }
            if words == KNOWN_WORDS_READ {
                break;
            }
            words += 1;
            let chinese = agentdir_meaning::chinese_share(word) > 0.0;
            let listed = || chinese && agentdir_meaning::names_in_chinese(word);
            if repeated(word, chinese) && !listed() {
                if held(word) {
                    return NeedWords::Real;
                }
                continue;
            }
            // A number is spelled in the vocabulary's digit pieces whatever it is (`4471` is
            // `▁44` `71`), a short word whole: near when a profile holds it (`1099`, `AI`), but
            // one beside gibberish does not make a need real (`99` in `QWERTY-99-XJ`).
            if word.chars().all(|c| c.is_ascii_digit())
                || (word.is_ascii() && word.len() <= SHORT_WORD_CHARACTERS)
            {
                near += usize::from(held(word));
                continue;
            }
            // A word in Chinese is known when it holds a dictionary word, is one character, or
            // names a platform or service of the lists (jieba's dictionary predates `微信`);
            // characters drawn at random are known only when a profile holds them.
            if chinese {
                let one_character = word.chars().filter(|c| !c.is_ascii()).count() == 1;
                if one_character || listed() || holds_chinese_word(word) || held(word) {
                    return NeedWords::Real;
                }
                continue;
            }
            let share = self.model.whole_share(word);
            if share.is_some_and(|share| share >= 1.0) || held(word) {
                return NeedWords::Real;
            }
            near += usize::from(share.is_some_and(|share| share >= KNOWN_WORD_SHARE));
        }
        if near * 2 > words {
            NeedWords::Real
        } else if framed && words > 0 {
            NeedWords::Framed
        } else {
            NeedWords::MadeUp
        }
    }

    /// The word window: the first [`WORD_WINDOW`] word matches in BM25 order, with how many agents
    /// hold the words; none in meaning mode.
    fn word_window(&self, query: &AgentQuery, use_words: bool) -> Result<IndexPage> {
        if !use_words {
            return Ok(IndexPage::default());
        }
        self.index
            .search_agents(&AgentQuery { limit: WORD_WINDOW, offset: 0, ..*query })
            .map_err(index_failed)
    }

    /// Past the fused part: the word matches after the window, in word order, scored where they
    /// stand among the word matches.
    fn word_tail(
        &self,
        query: &AgentQuery,
        scoring: &Scoring<'_>,
        vector: Option<&Quantized>,
        fused_len: usize,
        wanted: usize,
    ) -> Result<Vec<(u64, Option<Ranking>)>> {
        let start = query.offset.max(fused_len) - fused_len;
        let tail = self
            .index
            .search_agents(&AgentQuery { offset: WORD_WINDOW + start, limit: wanted, ..*query })
            .map_err(index_failed)?;
        let state = self.vectors.read();
        Ok(tail
            .keys
            .into_iter()
            .enumerate()
            .map(|(j, key)| {
                let place = WORD_WINDOW + start + j;
                let words = WordPlace { place, window: place + 1 };
                let similarity = vector.and_then(|v| state.matrix.similarity(v, key));
                let (key, ranking) = scored(&state, scoring, key, Some(words), similarity);
                (key, Some(ranking))
            })
            .collect())
    }
}

/// The one place an agent is made a candidate and scored.
fn scored(
    state: &State,
    scoring: &Scoring<'_>,
    key: u64,
    words: Option<WordPlace>,
    similarity: Option<f32>,
) -> (u64, Ranking) {
    let candidate = Candidate { words, similarity, facts: state.facts.get(&key).map(|f| &**f) };
    (key, score::score(scoring, &candidate))
}

/// The similarities a need's vector is matched by: the full model's and the quick encoder's
/// run on different scales.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Similarities {
    /// An agent this similar or more matches by meaning.
    pub threshold: f32,
    /// The nearest agents this similar or more fill a thin result.
    pub nearest_floor: f32,
    /// A made-up need matches an agent by meaning alone this similar or more.
    pub made_up: f32,
    /// A framed need (no word known) matches an agent by meaning alone this similar or more.
    pub framed: f32,
}

pub const FULL_MODEL: Similarities = Similarities {
    threshold: MEANING_THRESHOLD,
    nearest_floor: NEAREST_FLOOR,
    made_up: MADE_UP_THRESHOLD,
    framed: FRAMED_THRESHOLD,
};
pub const QUICK_ENCODER: Similarities = Similarities {
    threshold: QUICK_MEANING_THRESHOLD,
    nearest_floor: QUICK_NEAREST_FLOOR,
    made_up: QUICK_MADE_UP_THRESHOLD,
    framed: QUICK_FRAMED_THRESHOLD,
};

/// Tokens the model reads for a need (its prefix and two specials included) up to which the
/// thresholds hold as they are: a sentence of need. Past it a need says more than any profile
/// does, and its similarity to the agent that meets it runs lower (on the judged sets the best
/// fit of a 2–4 sentence situation, ~60 tokens, is at 0.15–0.20; of a sentence, 0.31–0.35).
pub const LONG_NEED_TOKENS: u32 = 28;
/// The most the thresholds of a long need are divided by.
pub const LONG_NEED_RELIEF: f32 = 1.5;

impl Similarities {
    /// The rule for a need of `tokens` tokens: past [`LONG_NEED_TOKENS`], the threshold of a
    /// match and the floor of the nearest fill are divided by `√(tokens / LONG_NEED_TOKENS)`, at
    /// most [`LONG_NEED_RELIEF`] (a need of 63 tokens or more: 0.12 to match, 0.08 to fill). The
    /// similarities themselves, and so the scores, are left as they are; a made-up or framed
    /// need keeps its threshold.
    pub fn for_need_of(self, tokens: u32) -> Similarities {
        let relief = (tokens as f32 / LONG_NEED_TOKENS as f32).sqrt().clamp(1.0, LONG_NEED_RELIEF);
        Similarities {
            threshold: self.threshold / relief,
            nearest_floor: self.nearest_floor / relief,
            made_up: self.made_up,
            framed: self.framed,
        }
    }
}

/// The meaning matches that are not word matches, from one nearest-first stream over the
/// vectors (`Matrix::nearest`: exact, reading each row's high nibbles and only the rows that
/// can count in full; meaning/SCAN.md): the nearest [`MEANING_CANDIDATES`] at or above the
/// threshold the need's words call for ([`NeedWords::threshold`]), then, when fewer than
/// [`NEAREST_FILL`] agents match and the need is neither precise nor short of a known word, the
/// nearest others down to the nearest floor.
fn meaning_matches(
    state: &State,
    query: &AgentQuery,
    vector: &Quantized,
    rule: &Similarities,
    words: &WordMatches<'_>,
    words_total: u64,
    read: NeedWords,
) -> Result<Vec<Hit>> {
    let rows = RowFilter::of(query);
    let passes = |hit: &Hit| passes_filters_alone(state, &rows, words, &hit.key);
    let threshold = read.threshold(rule);
    let fill_possible = (words_total as usize) < NEAREST_FILL && read.fills();
    let floor = if fill_possible { rule.nearest_floor } else { threshold };
    let mut nearest = state.matrix.nearest(vector, floor, MEANING_CANDIDATES, |row| rows.admits(row));
    let mut matches = Vec::new();
    let mut first_near = None;
    while matches.len() < MEANING_CANDIDATES && first_near.is_none() {
        let mut batch = Vec::new();
        let mut ended = true;
        for hit in nearest.by_ref() {
            if hit.similarity < threshold {
                first_near = Some(hit);
                break;
            }
            if passes(&hit) {
                batch.push(hit);
                if batch.len() >= (MEANING_CANDIDATES - matches.len()).max(HELD_BATCH) {
                    ended = false;
                    break;
                }
            }
        }
        matches.extend(words.not_held(state, batch)?);
        if ended {
            break;
        }
    }
    matches.truncate(MEANING_CANDIDATES);
    // The fill, unless the need is precise (agents meet it only by holding its words: a rare
    // term, a name, none by meaning alone) or holds no known word.
    let precise = words_total > 0 && matches.is_empty();
    let found = words_total as usize + matches.len();
    if !precise && found < NEAREST_FILL && read.fills() {
        let mut near = first_near.into_iter().chain(nearest).filter(|h| passes(h));
        let mut fill = Vec::new();
        while fill.len() < NEAREST_FILL - found {
            let batch: Vec<Hit> = near.by_ref().take(HELD_BATCH).collect();
            if batch.is_empty() {
                break;
            }
            fill.extend(words.not_held(state, batch)?);
        }
        fill.truncate(NEAREST_FILL - found);
        matches.extend(fill);
    }
    Ok(matches)
}

/// The fewest nearest agents whose words are asked of the index at once: each asking is one
/// pass over the word matches, so a search whose nearest agents are mostly word matches asks
/// a few times, not once for each.
const HELD_BATCH: usize = 64;

/// The word matches, as a meaning match is told from them: those of the window, and past it
/// (asked only when the window did not hold them all) the agents that hold the words of the
/// query by the index's rule or are the handle it names.
struct WordMatches<'a> {
    window: FxHashSet<u64>,
    beyond: Option<Beyond<'a>>,
}

/// Where the word matches past the window are asked.
struct Beyond<'a> {
    index: &'a SearchIndex,
    query: &'a AgentQuery<'a>,
    handle: Option<&'a str>,
}

impl WordMatches<'_> {
    /// Of `hits`, those that are not word matches past the window, in their order.
    fn not_held(&self, state: &State, hits: Vec<Hit>) -> Result<Vec<Hit>> {
        let Some(beyond) = &self.beyond else { return Ok(hits) };
        if hits.is_empty() {
            return Ok(hits);
        }
        let keys: HashSet<u64> = hits.iter().map(|h| h.key).collect();
        let held = beyond.index.agents_holding(beyond.query, &keys).map_err(index_failed)?;
        let named =
            |key: &u64| beyond.handle.is_some_and(|h| state.facts.get(key).is_some_and(|f| &*f.handle == h));
        Ok(hits.into_iter().filter(|h| !held.contains(&h.key) && !named(&h.key)).collect())
    }
}

/// Whether a row the scan let through can be a meaning-only match, before the index is asked
/// about words past the window: a public agent that holds the named values and is not in the
/// word window.
fn passes_filters_alone(state: &State, rows: &RowFilter, words: &WordMatches<'_>, key: &u64) -> bool {
    state.facts.get(key).is_some_and(|f| rows.holds(&f.capabilities, &f.languages))
        && !words.window.contains(key)
}

/// Fused: the word window and the meaning-only matches, scored, best first (equal scores by
/// key).
fn fuse(
    state: &State,
    scoring: &Scoring<'_>,
    vector: Option<&Quantized>,
    window: &[u64],
    meaning_only: &[Hit],
) -> Vec<(u64, Ranking)> {
    let n = window.len();
    let mut fused: Vec<(u64, Ranking)> = window
        .iter()
        .enumerate()
        .map(|(place, &key)| {
            let similarity = vector.and_then(|v| state.matrix.similarity(v, key));
            scored(state, scoring, key, Some(WordPlace { place, window: n }), similarity)
        })
        .chain(meaning_only.iter().map(|h| scored(state, scoring, h.key, None, Some(h.similarity))))
        .collect();
    fused.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
    fused
}
