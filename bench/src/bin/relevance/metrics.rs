//! The measures, over one need's ranked handles (best first, as the server answered them):
//! nDCG@10 with graded gains, Recall@10 and MRR of the agents that meet the need, and the
//! trust measures that ask whether evidence orders agents that fit equally well.
//!
//! A made-up need has no agent to find: an empty page is its right answer, so each of its
//! three measures is 1 when the page is empty and 0 when it holds any agent.

use super::judged::{JudgedSet, MEETS, Need};

/// The depth every measure looks at: the first page a client reads.
pub const DEPTH: usize = 10;
/// The depth at which stuffed agents are counted: the results a client actually opens.
pub const SPAM_DEPTH: usize = 5;

/// The gain of a grade: each grade is worth about twice the one below it.
fn gain(grade: u8) -> f64 {
    f64::from((1u32 << grade) - 1)
}

/// The discount of rank `i` (0-based).
fn discount(i: usize) -> f64 {
    ((i + 2) as f64).log2()
}

/// What a page scores on a made-up need: everything when empty, nothing otherwise.
fn nothing_found(ranked: &[String]) -> f64 {
    if ranked.is_empty() { 1.0 } else { 0.0 }
}

/// nDCG@10: the ranking's discounted gain over that of the ideal ranking of the judged grades.
pub fn ndcg(need: &Need, ranked: &[String]) -> f64 {
    if need.expects_nothing() {
        return nothing_found(ranked);
    }
    // Folded from +0.0: an empty float sum is -0.0, which prints as "-0.00".
    let dcg =
        ranked.iter().take(DEPTH).enumerate().fold(0.0, |s, (i, h)| s + gain(need.grade(h)) / discount(i));
    let mut ideal: Vec<u8> = need.judged.values().copied().filter(|g| *g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg = ideal.iter().take(DEPTH).enumerate().fold(0.0, |s, (i, g)| s + gain(*g) / discount(i));
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

/// Recall@10: the share of the agents that meet the need found in the first ten (out of at
/// most ten, so a need met by twelve agents can still score 1).
pub fn recall(need: &Need, ranked: &[String]) -> f64 {
    if need.expects_nothing() {
        return nothing_found(ranked);
    }
    let meeting = need.judged.values().filter(|g| **g >= MEETS).count().min(DEPTH);
    if meeting == 0 {
        return 0.0;
    }
    let found = ranked.iter().take(DEPTH).filter(|h| need.grade(h) >= MEETS).count();
    found as f64 / meeting as f64
}

/// Reciprocal rank of the first agent that meets the need within the first ten (0 if none).
pub fn reciprocal_rank(need: &Need, ranked: &[String]) -> f64 {
    if need.expects_nothing() {
        return nothing_found(ranked);
    }
    ranked.iter().take(DEPTH).position(|h| need.grade(h) >= MEETS).map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

fn rank_of(ranked: &[String], handle: &str) -> Option<usize> {
    ranked.iter().take(DEPTH).position(|h| h == handle)
}

/// The agents of the first ten that have nothing to do with the need: graded 0 (or not
/// judged), stuffed sign-ups left out (the spam measures count those).
pub fn strangers<'a>(
    set: &'a JudgedSet,
    need: &'a Need,
    ranked: &'a [String],
) -> impl Iterator<Item = &'a str> {
    ranked
        .iter()
        .take(DEPTH)
        .filter(move |h| need.grade(h) == 0 && set.agent(h).is_some_and(|a| !a.stuffed))
        .map(String::as_str)
}

/// Stuffed agents among the first five.
pub fn stuffed_on_top(set: &JudgedSet, ranked: &[String]) -> usize {
    ranked.iter().take(SPAM_DEPTH).filter(|h| set.agent(h).is_some_and(|a| a.stuffed)).count()
}

/// Whether a stuffed agent ranks above every verified agent (trust 1 or more) of the highest
/// grade; one that ranks while no such agent does counts as above.
pub fn stuffed_above_verified(set: &JudgedSet, need: &Need, ranked: &[String]) -> bool {
    let first_stuffed = ranked.iter().take(DEPTH).position(|h| set.agent(h).is_some_and(|a| a.stuffed));
    let best = need.judged.values().copied().max().unwrap_or(0);
    let first_verified = ranked
        .iter()
        .take(DEPTH)
        .position(|h| need.grade(h) == best && set.agent(h).is_some_and(|a| a.evidence.level >= 1));
    match (first_stuffed, first_verified) {
        (Some(s), Some(v)) => s < v,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Pairs of agents judged alike (grade 2 or 3) whose evidence differs, and how many of them
/// the ranking puts in evidence order. A pair neither of which is in the first ten says
/// nothing about order and is left out; an absent agent ranks below a present one.
pub fn evidence_pairs(set: &JudgedSet, need: &Need, ranked: &[String]) -> (usize, usize) {
    let mut fitting: Vec<(&str, u8)> =
        need.judged.iter().filter(|(_, g)| **g >= MEETS).map(|(h, g)| (h.as_str(), *g)).collect();
    fitting.sort_unstable();
    let (mut pairs, mut ordered) = (0, 0);
    for (i, (a, ga)) in fitting.iter().enumerate() {
        for (b, gb) in &fitting[i + 1..] {
            let (Some(ea), Some(eb)) = (set.agent(a), set.agent(b)) else { continue };
            let (ra, rb) = (ea.evidence.rank(), eb.evidence.rank());
            if ga != gb || ra == rb {
                continue;
            }
            let (pa, pb) = (rank_of(ranked, a), rank_of(ranked, b));
            if pa.is_none() && pb.is_none() {
                continue;
            }
            let (stronger, weaker) = if ra > rb { (pa, pb) } else { (pb, pa) };
            pairs += 1;
            let right = match (stronger, weaker) {
                (Some(s), Some(w)) => s < w,
                (Some(_), None) => true,
                _ => false,
            };
            ordered += usize::from(right);
        }
    }
    (pairs, ordered)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::judged::{Agent, Evidence, NeedType};
    use super::*;

    fn need(grades: &[(&str, u8)]) -> Need {
        need_of(NeedType::Keyword, grades)
    }

    fn need_of(kind: NeedType, grades: &[(&str, u8)]) -> Need {
        Need {
            id: "n".into(),
            kind,
            q: "q".into(),
            spam_target: false,
            judged: grades.iter().map(|(h, g)| ((*h).to_owned(), *g)).collect::<HashMap<_, _>>(),
        }
    }

    fn ranked(hs: &[&str]) -> Vec<String> {
        hs.iter().map(|h| (*h).to_owned()).collect()
    }

    #[test]
    fn the_ideal_order_scores_one_and_others_less() {
        let n = need(&[("a", 3), ("b", 2), ("c", 1)]);
        assert!((ndcg(&n, &ranked(&["a", "b", "c"])) - 1.0).abs() < 1e-12);
        let swapped = ndcg(&n, &ranked(&["c", "b", "a"]));
        assert!(swapped < 1.0 && swapped > 0.0);
        assert!(ndcg(&n, &ranked(&[])).is_sign_positive(), "0.00, not -0.00");
        assert_eq!(ndcg(&n, &ranked(&["x", "y"])), 0.0);
        // An unjudged agent first pushes the judged ones down a rank each.
        let dcg = 7.0 / 3f64.log2() + 3.0 / 2.0 + 1.0 / 5f64.log2();
        let idcg = 7.0 + 3.0 / 3f64.log2() + 1.0 / 2.0;
        assert!((ndcg(&n, &ranked(&["x", "a", "b", "c"])) - dcg / idcg).abs() < 1e-12);
    }

    #[test]
    fn recall_and_reciprocal_rank_count_agents_that_meet_the_need() {
        let n = need(&[("a", 3), ("b", 2), ("c", 1)]);
        assert_eq!(recall(&n, &ranked(&["c", "x", "b"])), 0.5);
        assert_eq!(reciprocal_rank(&n, &ranked(&["c", "x", "b"])), 1.0 / 3.0);
        assert_eq!(reciprocal_rank(&n, &ranked(&["c"])), 0.0);
        let beyond: Vec<String> = (0..10).map(|i| format!("x{i}")).chain(["a".to_owned()]).collect();
        assert_eq!(recall(&n, &beyond), 0.0, "only the first ten count");
    }

    #[test]
    fn a_made_up_need_scores_one_for_an_empty_page_and_zero_for_any_agent() {
        let n = need_of(NeedType::MadeUp, &[]);
        for measure in [ndcg as fn(&Need, &[String]) -> f64, recall, reciprocal_rank] {
            assert_eq!(measure(&n, &ranked(&[])), 1.0);
            assert_eq!(measure(&n, &ranked(&["a"])), 0.0);
            assert_eq!(measure(&n, &ranked(&["a", "b", "c"])), 0.0);
        }
        // A real need with nobody on the page still scores 0.
        assert_eq!(ndcg(&need(&[("a", 3)]), &ranked(&[])), 0.0);
    }

    fn set(agents: &[(&str, u8, bool)]) -> JudgedSet {
        let agents = agents
            .iter()
            .map(|(h, level, stuffed)| Agent {
                handle: (*h).to_owned(),
                profile: serde_json::Value::Null,
                offerings: Vec::new(),
                skills: Vec::new(),
                evidence: Evidence { level: *level, ..Evidence::default() },
                stuffed: *stuffed,
            })
            .collect();
        JudgedSet { agents, needs: Vec::new() }
    }

    #[test]
    fn stuffed_agents_are_measured_against_the_best_verified_fit() {
        let s = set(&[("spam", 0, true), ("fresh", 0, false), ("verified", 1, false), ("weak", 2, false)]);
        let n = need(&[("fresh", 3), ("verified", 3), ("weak", 1)]);
        assert_eq!(stuffed_on_top(&s, &ranked(&["spam", "fresh", "verified"])), 1);
        assert!(stuffed_above_verified(&s, &n, &ranked(&["fresh", "spam", "verified"])));
        assert!(!stuffed_above_verified(&s, &n, &ranked(&["verified", "spam"])));
        assert!(stuffed_above_verified(&s, &n, &ranked(&["weak", "spam"])), "a weaker fit does not count");
        assert!(!stuffed_above_verified(&s, &n, &ranked(&["fresh"])));
    }

    #[test]
    fn equal_fits_are_compared_by_evidence() {
        let s =
            set(&[("claimed", 2, false), ("verified", 1, false), ("fresh", 0, false), ("other", 1, false)]);
        let n = need(&[("claimed", 3), ("verified", 3), ("fresh", 3), ("other", 2)]);
        // Three pairs among the grade-3 agents; "other" is alone at grade 2.
        assert_eq!(evidence_pairs(&s, &n, &ranked(&["claimed", "verified", "fresh"])), (3, 3));
        assert_eq!(evidence_pairs(&s, &n, &ranked(&["fresh", "verified", "claimed"])), (3, 0));
        // An absent agent ranks below a present one; a pair with neither present is left out.
        assert_eq!(evidence_pairs(&s, &n, &ranked(&["verified"])), (2, 1));
        assert_eq!(evidence_pairs(&s, &n, &ranked(&["other"])), (0, 0));
    }

    #[test]
    fn strangers_are_the_agents_of_the_first_ten_graded_zero_stuffed_ones_aside() {
        let s = set(&[("fits", 1, false), ("near", 1, false), ("far", 1, false), ("spam", 0, true)]);
        let n = need(&[("fits", 3), ("near", 1)]);
        let page = ranked(&["far", "fits", "spam", "near", "unknown"]);
        assert_eq!(strangers(&s, &n, &page).collect::<Vec<_>>(), ["far"]);
        let beyond: Vec<String> = (0..10).map(|_| "fits".to_owned()).chain(["far".to_owned()]).collect();
        assert_eq!(strangers(&s, &n, &beyond).count(), 0, "only the first ten count");
    }
}
