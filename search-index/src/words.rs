//! Which parts of a profile hold a need's words, by the index's own word rule, outside the
//! index: `explain` analyses each text of the profiles on a page as the index analyses an
//! agent's document and checks the need's words against it. A text's words are kept as sorted
//! 64-bit hashes of its analysed tokens; a query word is held when its term is among them or,
//! for a long Chinese word, all its parts are (`matches.rs` states the same rule over postings).

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::analysis::QueryWord;
use crate::{SearchIndex, lock};

/// The analysed words of one text, as sorted hashes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentWords(Box<[u64]>);

/// The words of a query, ready to check texts against.
#[derive(Debug, Clone)]
pub struct WordCheck {
    words: Vec<(u64, Vec<u64>)>,
}

fn hash(term: &str) -> u64 {
    let mut h = DefaultHasher::new();
    term.hash(&mut h);
    h.finish()
}

impl WordCheck {
    /// True when the query has no searchable word (then only an exact handle can match).
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether these words hold at least one word of the query (one text of a profile, for
    /// `explain`: which parts of it hold the need's words).
    pub fn matches_any(&self, words: &AgentWords) -> bool {
        let has = |h: &u64| words.0.binary_search(h).is_ok();
        self.words.iter().any(|(term, parts)| has(term) || (!parts.is_empty() && parts.iter().all(has)))
    }
}

impl SearchIndex {
    /// The words of one text of a profile, analysed as the index analyses an agent's document.
    pub fn text_words(&self, text: &str) -> AgentWords {
        let mut analyzer = lock(&self.documents);
        let mut stream = analyzer.token_stream(text);
        let mut hashes = Vec::new();
        while let Some(token) = stream.next() {
            hashes.push(hash(&token.text));
        }
        hashes.sort_unstable();
        hashes.dedup();
        AgentWords(hashes.into_boxed_slice())
    }

    /// The words of a free-text query as agent searches read them.
    pub fn word_check(&self, text: &str) -> WordCheck {
        let words = self.analyzer.words(text);
        WordCheck {
            words: words
                .into_iter()
                .map(|QueryWord { term, parts }| (hash(&term), parts.iter().map(|p| hash(p)).collect()))
                .collect(),
        }
    }
}
