//! Text analysis: the one tokenizer used for every free-text field, and the turning of a user's
//! query string into a bounded list of analysed words.
//!
//! Why one mixed tokenizer instead of indexing each text twice (an English field and a jieba
//! field): names, taglines, offering titles and call bodies arrive in either language, often both
//! in one sentence ("GPT-4 翻译助手"). Splitting the text into script runs and sending only Han runs
//! to jieba, while Latin/other runs are lower-cased and English-stemmed, gives every field both
//! behaviours with a single set of postings. That halves index size and, more importantly for the
//! latency budget, halves the number of term look-ups per query word compared to searching a
//! pair of fields. The cost is that a Chinese word is never stemmed and an English word is never
//! segmented, which is what we want anyway.
//!
//! Index side, Han runs use jieba's search mode (a long word is indexed with its dictionary
//! sub-words too: 本地化 → 本地, 本地化), so a query for a short word finds a longer compound.
//! Query side, Han runs use jieba's default mode (longest words), and a long query word also
//! accepts "all of its sub-words" as an alternative: segmentation of a word can differ with its
//! context, and the alternative keeps such a document findable.
//!
//! Positions are ordinal (one per token) as STACK-NOTES recommends for jieba; the index does not
//! record positions at all today (no phrase queries), so this only matters if that changes.

use std::sync::{Arc, OnceLock};

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, Stemmer, TextAnalyzer, Token, TokenStream, Tokenizer,
};
use tantivy_jieba::jieba_rs::Jieba;

/// Name of the tokenizer of every free-text field: documents' text is analysed before it
/// reaches tantivy (see schema.rs), which only splits the resulting words at spaces.
pub(crate) const TEXT_TOKENIZER: &str = "agentdir_words";

/// Tokens longer than this (in UTF-8 bytes) are dropped on both sides: they are never real words
/// (base64 blobs, runs of digits) and they bloat the term dictionary.
const MAX_TOKEN_BYTES: usize = 64;

/// Upper bound on distinct terms a query may look up (words plus sub-word alternatives): each
/// term costs a dictionary look-up per field per segment, so this bounds worst-case latency.
pub(crate) const MAX_QUERY_TERMS: usize = 32;

/// Only this much of the user's text is analysed; beyond it the term cap has long been reached.
const MAX_QUERY_CHARS: usize = 1024;

/// Words that carry no meaning as a search condition. They are dropped from queries (never from
/// the index) so "translation for legal documents" does not demand the literal word "for"; if a
/// query consists only of such words they are kept, so it still means something. The core's rule
/// for made-up needs reads most of them as saying nothing of a need too (`FUNCTION_WORDS`).
pub const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "not", "of",
    "on", "or", "that", "the", "to", "with", "的", "了", "和", "与", "及", "或", "是", "在",
];

static JIEBA: OnceLock<Arc<Jieba>> = OnceLock::new();

/// The shared jieba instance; the first call loads the dictionary (~80 ms), so `open` calls this
/// up front rather than letting the first query pay for it.
pub(crate) fn jieba() -> Arc<Jieba> {
    JIEBA.get_or_init(|| Arc::new(Jieba::new())).clone()
}

/// Whether jieba's dictionary holds a word of two Han characters or more within `text`: cut in
/// its default mode without the HMM, which would join characters it does not know into words of
/// its own. Characters drawn at random (`荣翩瞿颢`) hold none; most Chinese needs hold several.
pub fn holds_chinese_word(text: &str) -> bool {
    let holds = |text: &str| {
        jieba().cut(text, false).iter().any(|token| token.word.chars().filter(|&c| is_han(c)).count() >= 2)
    };
    // jieba's dictionary is Simplified: a word written in Traditional characters (翻譯, 報稅) is
    // asked as its Simplified form too.
    holds(text) || simplified(text).is_some_and(|s| s != text && holds(&s))
}

static T2S: OnceLock<Option<ferrous_opencc::OpenCC>> = OnceLock::new();

/// `text` in Simplified characters (OpenCC's conversion), or none when the converter could not
/// be built (its dictionaries are compiled into the binary, so only a defect does that). The
/// first call builds it; `open` calls this up front, as it does `jieba`.
pub(crate) fn simplified(text: &str) -> Option<String> {
    let converter = T2S.get_or_init(|| {
        match ferrous_opencc::OpenCC::from_config(ferrous_opencc::config::BuiltinConfig::T2s) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "the Traditional-to-Simplified converter could not be built");
                None
            }
        }
    });
    converter.as_ref().map(|c| c.convert(text))
}

fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3007
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF
        | 0x20000..=0x2FA1F
        | 0x30000..=0x323AF)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Han,
    Word,
    Separator,
}

fn classify(c: char) -> Class {
    if is_han(c) {
        Class::Han
    } else if c.is_alphanumeric() {
        Class::Word
    } else {
        Class::Separator
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Index,
    Query,
}

/// Splits text into script runs; Han runs go through jieba, other alphanumeric runs become one
/// token each. Lower-casing, stemming and length limits are applied by filters after it.
#[derive(Clone)]
pub(crate) struct MixedTokenizer {
    jieba: Arc<Jieba>,
    mode: Mode,
    buffer: Vec<Token>,
}

impl MixedTokenizer {
    fn emit(&mut self, text: &str, start: usize, end: usize, class: Class) {
        let Some(run) = text.get(start..end) else {
            return;
        };
        match class {
            Class::Word => self.push(run, start),
            Class::Han => {
                let words = match self.mode {
                    Mode::Index => self.jieba.cut_for_search(run, true),
                    Mode::Query => self.jieba.cut(run, true),
                };
                for w in words {
                    if w.word.chars().all(is_han) {
                        self.push(w.word, start + w.byte_start);
                    }
                }
            }
            Class::Separator => {}
        }
    }

    fn push(&mut self, word: &str, offset_from: usize) {
        let position = self.buffer.len();
        self.buffer.push(Token {
            offset_from,
            offset_to: offset_from + word.len(),
            position,
            text: word.to_string(),
            position_length: 1,
        });
    }
}

impl Tokenizer for MixedTokenizer {
    type TokenStream<'a> = VecTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream<'a> {
        self.buffer.clear();
        let mut run: Option<(usize, Class)> = None;
        for (i, c) in text.char_indices() {
            let class = classify(c);
            match run {
                Some((_, current)) if current == class => {}
                Some((start, current)) => {
                    self.emit(text, start, i, current);
                    run = Some((i, class));
                }
                None => run = Some((i, class)),
            }
        }
        if let Some((start, class)) = run {
            self.emit(text, start, text.len(), class);
        }
        VecTokenStream { tokens: self.buffer.drain(..), current: Token::default() }
    }
}

pub(crate) struct VecTokenStream<'a> {
    tokens: std::vec::Drain<'a, Token>,
    current: Token,
}

impl TokenStream for VecTokenStream<'_> {
    fn advance(&mut self) -> bool {
        match self.tokens.next() {
            Some(token) => {
                self.current = token;
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

fn analyzer(jieba: Arc<Jieba>, mode: Mode) -> TextAnalyzer {
    TextAnalyzer::builder(MixedTokenizer { jieba, mode, buffer: Vec::new() })
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The analyzer registered for indexing.
pub(crate) fn index_analyzer(jieba: Arc<Jieba>) -> TextAnalyzer {
    analyzer(jieba, Mode::Index)
}

/// One condition of a query: the document must contain `term` in some field, or, when
/// `parts` is non-empty, all of `parts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueryWord {
    pub term: String,
    pub parts: Vec<String>,
}

/// Turns free text into analysed query words. Cheap to clone per query (the tokenizers need
/// `&mut` while streaming).
#[derive(Clone)]
pub(crate) struct QueryAnalyzer {
    query: TextAnalyzer,
    index: TextAnalyzer,
}

impl QueryAnalyzer {
    pub(crate) fn new(jieba: Arc<Jieba>) -> Self {
        QueryAnalyzer { query: analyzer(jieba.clone(), Mode::Query), index: analyzer(jieba, Mode::Index) }
    }

    /// Analysed, de-duplicated words of `text`, at most [`MAX_QUERY_TERMS`] terms in all.
    /// Returns an empty list when nothing searchable is left (only punctuation, emoji…).
    pub(crate) fn words(&self, text: &str) -> Vec<QueryWord> {
        let text = truncate_chars(text, MAX_QUERY_CHARS);
        let mut query = self.query.clone();
        let mut terms: Vec<String> = Vec::new();
        let mut stream = query.token_stream(text);
        while let Some(token) = stream.next() {
            if !terms.iter().any(|t| t == &token.text) {
                terms.push(token.text.clone());
            }
        }
        drop(stream);
        if terms.iter().any(|t| !STOP_WORDS.contains(&t.as_str())) {
            terms.retain(|t| !STOP_WORDS.contains(&t.as_str()));
        }

        let mut budget = MAX_QUERY_TERMS;
        let mut words = Vec::new();
        let mut index = self.index.clone();
        for term in terms {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let mut parts = Vec::new();
            if term.chars().count() >= 3 && term.chars().all(is_han) {
                let mut stream = index.token_stream(&term);
                while let Some(token) = stream.next() {
                    if token.text != term && !parts.contains(&token.text) {
                        parts.push(token.text.clone());
                    }
                }
                if parts.len() > budget {
                    parts.clear();
                }
                budget -= parts.len();
            }
            words.push(QueryWord { term, parts });
        }
        words
    }
}

/// The first `max` chars of `text`, cut back to a separator so the last word is not a fragment
/// that the rest of the text never contained (unless there is no separator at all).
fn truncate_chars(text: &str, max: usize) -> &str {
    let Some((end, _)) = text.char_indices().nth(max) else {
        return text;
    };
    let head = &text[..end];
    match head.char_indices().rev().find(|&(_, c)| classify(c) == Class::Separator) {
        Some((i, _)) => &head[..i],
        None => head,
    }
}

/// Normalises an exact-match value (capability, tag, language, kind, handle) the same way on
/// both sides.
pub(crate) fn normalize_exact(value: &str) -> String {
    value.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str, mode: Mode) -> Vec<String> {
        let mut a = analyzer(jieba(), mode);
        let mut out = Vec::new();
        let mut s = a.token_stream(text);
        while let Some(t) = s.next() {
            out.push(t.text.clone());
        }
        out
    }

    #[test]
    fn english_is_lowercased_and_stemmed() {
        assert_eq!(tokens("Translating DOCUMENTS, fast!", Mode::Index), vec!["translat", "document", "fast"]);
    }

    #[test]
    fn chinese_is_segmented_with_sub_words() {
        let t = tokens("我们提供中文翻译和本地化服务", Mode::Index);
        assert!(t.contains(&"翻译".to_string()), "{t:?}");
        assert!(t.contains(&"本地化".to_string()), "{t:?}");
        assert!(t.contains(&"本地".to_string()), "{t:?}");
    }

    #[test]
    fn dictionary_words_tell_chinese_from_characters_drawn_at_random() {
        // Traditional characters too, read as Simplified.
        for real in [
            "个税申报",
            "翻译",
            "帮我找一个会计",
            "亚马逊FBA头程",
            "翻譯",
            "報稅",
            "合約審閱",
            "會計記帳",
            "幫我翻譯合約",
        ] {
            assert!(holds_chinese_word(real), "{real}");
        }
        for drawn in ["荣翩瞿颢", "鬯爨龘麤", "的", "help me", "榮翩瞿顥", "嗚囉嘰噠"] {
            assert!(!holds_chinese_word(drawn), "{drawn}");
        }
    }

    #[test]
    fn mixed_runs_split_by_script() {
        let t = tokens("GPT-4o翻译助手 zh-translator-01", Mode::Index);
        for w in ["gpt", "4o", "翻译", "助手", "zh", "translat", "01"] {
            assert!(t.contains(&w.to_string()), "{w} missing from {t:?}");
        }
    }

    #[test]
    fn stemmer_leaves_han_words_alone() {
        let text = "我们提供中文翻译和本地化服务，擅长机器学习、数据分析与人工智能应用开发";
        let t = tokens(text, Mode::Index);
        assert!(t.len() > 10, "{t:?}");
        for w in t {
            assert!(text.contains(&w), "{w} was altered");
        }
    }

    #[test]
    fn truncation_does_not_leave_a_fragment() {
        assert_eq!(truncate_chars("abc def", 5), "abc");
        assert_eq!(truncate_chars("abcdef", 3), "abc");
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("翻译，服务", 4), "翻译");
    }

    #[test]
    fn long_tokens_and_symbols_are_dropped() {
        let long = "x".repeat(200);
        assert!(tokens(&long, Mode::Query).is_empty());
        assert!(tokens("🙂 +-:\"()[]{}^~*?\\/ \u{0}\u{7}\u{FFFD}", Mode::Query).is_empty());
    }

    #[test]
    fn query_words_drop_stop_words_unless_nothing_else() {
        let qa = QueryAnalyzer::new(jieba());
        let w = qa.words("translation for the legal documents");
        let terms: Vec<_> = w.iter().map(|w| w.term.as_str()).collect();
        assert_eq!(terms, vec!["translat", "legal", "document"]);
        let w = qa.words("the");
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn query_words_are_capped() {
        let qa = QueryAnalyzer::new(jieba());
        let text: String = (0..500).map(|i| format!("w{i} ")).collect();
        let w = qa.words(&text);
        assert_eq!(w.len(), MAX_QUERY_TERMS);
        let total: usize = w.iter().map(|w| 1 + w.parts.len()).sum();
        assert!(total <= MAX_QUERY_TERMS);
    }
}
