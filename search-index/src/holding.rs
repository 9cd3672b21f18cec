//! Which of a few given calls match a search's words: how a call search by meaning tells the
//! calls it found by meaning that also hold the words (counted once, as word matches) from the
//! others. One pass over the word matches, each looked up in the given keys; the index holds
//! no text of the calls to check them one by one.

use std::collections::HashSet;

use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, TERMINATED};

use crate::IndexError;
use crate::collect::{NumericColumns, NumericFilters};
use crate::evaluate::{TextPlan, word_conditions};
use crate::matches::{self, Members};
use crate::overlay::Leaf;
use crate::part::{Part, Plan};
use crate::relaxed::Fallback;
use crate::warm::Segments;

impl Part {
    /// The keys of `keys` whose documents match `plan` (a plan with text).
    pub(crate) fn holding(&self, plan: Plan, keys: &HashSet<u64>) -> Result<HashSet<u64>, IndexError> {
        let view = self.overlay.view();
        let leaves = &view.leaves;
        let mut held = HashSet::new();
        let given = KeySet::of(keys);
        let mut keep = |key: u64| {
            if given.contains(key) {
                held.insert(key);
            }
        };
        let searcher = self.reader.searcher();
        let relaxed = |text: &TextPlan, required: usize, keep: &mut dyn FnMut(u64)| {
            crate::relaxed::for_each_match(leaves, &self.segments, &searcher, text, required, |_, key| {
                keep(key)
            })
        };
        match plan {
            Plan::Recency(_) => {}
            Plan::Text(text) => {
                each_match(leaves, &self.segments, &text, &mut keep)?;
            }
            Plan::Relaxed(text, required) => relaxed(&text, required, &mut keep)?,
            Plan::AllOrTwo(text) => {
                let mut all = 0;
                each_match(leaves, &self.segments, &text, &mut |key| {
                    all += 1;
                    keep(key);
                })?;
                if all == 0 {
                    match crate::relaxed::fallback(leaves, text)? {
                        Fallback::AllHeld(two) => each_match(leaves, &self.segments, &two, &mut keep)?,
                        Fallback::AllButOne(text) => relaxed(&text, text.words.len() - 1, &mut keep)?,
                        Fallback::Nothing => {}
                    }
                }
            }
        }
        Ok(held)
    }
}

/// The given keys, as each word match is looked up in them: a bit a key up to the largest
/// (keys are row ids, so that is a few bits a row of the table), else the set itself. A common
/// word matches a large share of a million documents; a bit costs a load where the set costs a
/// hash.
enum KeySet<'a> {
    Bits(Vec<u64>),
    Set(&'a HashSet<u64>),
}

/// The largest key given as bits (2 MiB of them).
const MAX_BIT_KEY: u64 = 1 << 24;

impl<'a> KeySet<'a> {
    fn of(keys: &'a HashSet<u64>) -> KeySet<'a> {
        match keys.iter().max() {
            Some(&max) if max < MAX_BIT_KEY => {
                let mut bits = vec![0u64; (max / 64 + 1) as usize];
                for &k in keys {
                    bits[(k / 64) as usize] |= 1 << (k % 64);
                }
                KeySet::Bits(bits)
            }
            _ => KeySet::Set(keys),
        }
    }

    fn contains(&self, key: u64) -> bool {
        match self {
            KeySet::Bits(bits) => bits.get((key / 64) as usize).is_some_and(|w| w >> (key % 64) & 1 == 1),
            KeySet::Set(set) => set.contains(&key),
        }
    }
}

/// Calls `f` with the key of every live document holding every word and filter of `plan`.
fn each_match(
    leaves: &[std::sync::Arc<Leaf>],
    segments: &Segments,
    plan: &TextPlan,
    f: &mut dyn FnMut(u64),
) -> tantivy::Result<()> {
    let words = word_conditions(plan);
    if words.is_empty() {
        return Ok(());
    }
    let no_numeric = NumericFilters::default();
    for leaf in leaves {
        let segment = &leaf.reader;
        let data = segments.get(segment)?;
        let numeric = NumericColumns::for_segment(segment, &no_numeric)?;
        let found = matches::compute(
            segment,
            leaf.alive.as_ref(),
            Some(&data.bitmaps),
            &words,
            &plan.filters,
            &numeric,
        )?;
        if found.count == 0 {
            continue;
        }
        match &found.members {
            Members::Bits(bits) => bits.for_each(|doc| f(data.key.get_val(doc))),
            // One plain word and nothing else: its own list, less the dead documents.
            Members::Alive(alive) => {
                let inverted = segment.inverted_index(plan.all)?;
                let Some(mut list) = inverted.read_postings(&words[0].term, IndexRecordOption::Basic)? else {
                    continue;
                };
                while list.doc() != TERMINATED {
                    let doc = list.doc();
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        f(data.key.get_val(doc));
                    }
                    list.advance();
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_given_keys_are_told_alike_as_bits_and_as_a_set() {
        let small: HashSet<u64> = [0, 1, 63, 64, 4_095, 1_000_000].into();
        let large: HashSet<u64> = [3, MAX_BIT_KEY, u64::MAX].into();
        assert!(matches!(KeySet::of(&small), KeySet::Bits(_)));
        assert!(matches!(KeySet::of(&large), KeySet::Set(_)));
        for keys in [&small, &large] {
            let given = KeySet::of(keys);
            for k in [
                0,
                1,
                2,
                3,
                62,
                63,
                64,
                65,
                4_095,
                4_096,
                999_999,
                1_000_000,
                1_000_001,
                MAX_BIT_KEY,
                u64::MAX,
            ] {
                assert_eq!(given.contains(k), keys.contains(&k), "{k}");
            }
        }
    }
}
