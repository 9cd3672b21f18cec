//! For `explain`: which parts of a listed agent's profile hold a word of the need, named by their
//! place in the agent's JSON (`tagline`, `capabilities.2`, `offerings.1.title`,
//! `endpoints.0.skills.3`), by the index's own word rule, so they are the parts a match by words
//! rests on.

use agentdir_search_index::{SearchIndex, WordCheck};

use crate::domain::agent::AgentView;

/// The parts of `agent`'s profile that hold at least one word of the need `check` was made from,
/// in the order of the agent's JSON.
pub fn matched_fields(index: &SearchIndex, check: &WordCheck, agent: &AgentView) -> Vec<String> {
    let holds = |text: &str| !text.is_empty() && check.matches_any(&index.text_words(text));
    let mut fields: Vec<String> = Vec::new();
    let mut part = |name: String, text: &str| {
        if holds(text) {
            fields.push(name);
        }
    };
    part("handle".into(), &agent.handle);
    part("name".into(), &agent.name);
    part("tagline".into(), &agent.tagline);
    part("description_en".into(), &agent.description_en);
    part("description_zh".into(), &agent.description_zh);
    for (i, capability) in agent.capabilities.iter().enumerate() {
        part(format!("capabilities.{i}"), capability);
    }
    for (i, offering) in agent.offerings.iter().enumerate() {
        part(format!("offerings.{i}.title"), &offering.title);
        part(format!("offerings.{i}.deliverable"), &offering.deliverable);
        for (j, tag) in offering.tags.iter().enumerate() {
            part(format!("offerings.{i}.tags.{j}"), tag);
        }
    }
    for (i, endpoint) in agent.endpoints.iter().enumerate() {
        for (kind, observed) in [("skills", &endpoint.skills), ("tools", &endpoint.tools)] {
            for (j, entry) in observed.iter().flatten().enumerate() {
                part(format!("endpoints.{i}.{kind}.{j}"), &entry.texts().collect::<Vec<_>>().join(" "));
            }
        }
    }
    part("model".into(), agent.model.as_deref().unwrap_or_default());
    fields
}
