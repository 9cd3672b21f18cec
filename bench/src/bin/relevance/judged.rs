//! The judged set: agents (`agents/*.json`, profiles as they register, plus the evidence to
//! seed and the skills of an A2A endpoint to serve) and needs (`needs.json`, each with graded judgements), read and checked before any
//! server starts, so a slip in the data fails at once with the file and the entry named.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::Error;

/// The kinds of need the benchmark reports on, in the order of its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NeedType {
    /// A few words a profile may well contain ("contract review").
    Keyword,
    /// A sentence of need in other words than the profiles'.
    Paraphrase,
    /// A need written in Chinese.
    Chinese,
    /// A need in one language whose fitting agents describe themselves only in the other.
    Cross,
    /// A situation from which the need must be inferred.
    Problem,
    /// One or two words ("dubbing", "报税").
    Short,
    /// Two to four sentences of someone's situation that never name the service.
    Situation,
    /// Chinese and English mixed in one need ("帮我 review 一下 NDA").
    Mixed,
    /// A need with misspelt words ("subtitel translaton").
    Misspelt,
    /// A need only an offering (its title, deliverable or tags) or a skill of a proven live
    /// endpoint answers: the profile text proper does not say it.
    Offering,
    /// A rare real term a profile holds: a standard, a file format, a niche tool (XBRL, HL7).
    Rare,
    /// A made-up need (letter strings, keyboard mashes, invented words and product codes):
    /// no agent meets it, and the right answer is an empty page.
    MadeUp,
}

impl NeedType {
    pub const ALL: [NeedType; 12] = [
        NeedType::Keyword,
        NeedType::Paraphrase,
        NeedType::Chinese,
        NeedType::Cross,
        NeedType::Problem,
        NeedType::Short,
        NeedType::Situation,
        NeedType::Mixed,
        NeedType::Misspelt,
        NeedType::Offering,
        NeedType::Rare,
        NeedType::MadeUp,
    ];

    fn parse(s: &str) -> Option<NeedType> {
        NeedType::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The name used in `needs.json`.
    pub fn name(self) -> &'static str {
        match self {
            NeedType::Keyword => "keyword",
            NeedType::Paraphrase => "paraphrase",
            NeedType::Chinese => "chinese",
            NeedType::Cross => "cross",
            NeedType::Problem => "problem",
            NeedType::Short => "short",
            NeedType::Situation => "situation",
            NeedType::Mixed => "mixed",
            NeedType::Misspelt => "misspelt",
            NeedType::Offering => "offering",
            NeedType::Rare => "rare",
            NeedType::MadeUp => "made_up",
        }
    }

    /// The row label of the results table.
    pub fn label(self) -> &'static str {
        match self {
            NeedType::Keyword => "keyword",
            NeedType::Paraphrase => "sentence of need",
            NeedType::Chinese => "Chinese need",
            NeedType::Cross => "cross-language",
            NeedType::Problem => "problem to infer",
            NeedType::Short => "1–2 words",
            NeedType::Situation => "long situation",
            NeedType::Mixed => "Chinese and English mixed",
            NeedType::Misspelt => "misspelt",
            NeedType::Offering => "only an offering or skill says it",
            NeedType::Rare => "rare real term",
            NeedType::MadeUp => "made-up (an empty page is right)",
        }
    }
}

/// The highest grade: the agent does exactly what the need asks.
pub const MAX_GRADE: u8 = 3;
/// Grades from here up count as meeting the need (Recall@10, MRR).
pub const MEETS: u8 = 2;

/// What the directory is to know about an agent besides its profile.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// 0 none, 1 mailbox verified, 2 verified and owner claimed.
    pub level: u8,
    /// A live link proof on a page of the agent's.
    pub link: bool,
    /// Partners of confirmed collaborations (both claimed, by different owners).
    pub collabs: Vec<String>,
}

impl Evidence {
    /// The order in which evidence makes one agent more trustworthy than another that fits
    /// a need as well: trust level, then confirmed collaborations, then a link proof.
    pub fn rank(&self) -> (u8, usize, bool) {
        (self.level, self.collabs.len(), self.link)
    }
}

pub struct Agent {
    pub handle: String,
    /// The registration body (without mailbox and `accept_rules`, which the seeder adds).
    pub profile: Value,
    /// The offerings, as `PUT /api/me/offerings` takes them.
    pub offerings: Vec<Value>,
    /// The skills of an A2A agent card the agent lists as its endpoint and proves its own: the
    /// seeder serves the card, the server checks it and keeps the skills (empty: no endpoint).
    pub skills: Vec<Value>,
    pub evidence: Evidence,
    /// A keyword-stuffed profile: a fresh sign-up that repeats the words of needs.
    pub stuffed: bool,
}

impl Agent {
    /// The languages of its description: "both", "English only", "Chinese only" or "neither".
    pub fn described_in(&self) -> &'static str {
        let has = |k: &str| self.profile.get(k).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty());
        match (has("description_en"), has("description_zh")) {
            (true, true) => "both",
            (true, false) => ENGLISH_ONLY,
            (false, true) => CHINESE_ONLY,
            (false, false) => "neither",
        }
    }
}

pub const ENGLISH_ONLY: &str = "English only";
pub const CHINESE_ONLY: &str = "Chinese only";

pub struct Need {
    pub id: String,
    pub kind: NeedType,
    pub q: String,
    /// Written against by stuffed agents (the spam rows of the report look at these).
    pub spam_target: bool,
    /// Grade per handle; handles absent are judged 0.
    pub judged: HashMap<String, u8>,
}

impl Need {
    /// Whether the right answer is an empty page: a made-up need.
    pub fn expects_nothing(&self) -> bool {
        self.kind == NeedType::MadeUp
    }

    pub fn grade(&self, handle: &str) -> u8 {
        self.judged.get(handle).copied().unwrap_or(0)
    }

    /// Whether the need is written in Chinese (it holds a CJK ideograph).
    pub fn in_chinese(&self) -> bool {
        self.q.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    }
}

pub struct JudgedSet {
    pub agents: Vec<Agent>,
    pub needs: Vec<Need>,
}

impl JudgedSet {
    pub fn agent(&self, handle: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.handle == handle)
    }

    /// A spam wave: each stuffed agent registered `copies` times in all, the copies named
    /// `{handle}-2`, `{handle}-3`, … with the same profile, as a spammer pastes one sign-up.
    pub fn multiply_stuffed(&mut self, copies: usize) {
        let clones: Vec<Agent> = self
            .agents
            .iter()
            .filter(|a| a.stuffed)
            .flat_map(|a| {
                (2..=copies).map(move |k| {
                    let handle = format!("{}-{k}", a.handle);
                    let mut profile = a.profile.clone();
                    profile["handle"] = Value::from(handle.clone());
                    Agent {
                        handle,
                        profile,
                        offerings: a.offerings.clone(),
                        // One endpoint URL counts for one agent: copies list none.
                        skills: Vec::new(),
                        evidence: Evidence::default(),
                        stuffed: true,
                    }
                })
            })
            .collect();
        self.agents.extend(clones);
    }
}

/// Profile fields passed through to registration as written.
const PROFILE_FIELDS: &[&str] = &[
    "handle",
    "name",
    "owner",
    "tagline",
    "description_en",
    "description_zh",
    "capabilities",
    "languages",
    "homepage",
    "model",
];
/// Fields the set adds beside the profile.
const SET_FIELDS: &[&str] = &["trust", "link", "collabs", "stuffed", "offerings", "skills"];
const OFFERING_FIELDS: &[&str] =
    &["title", "deliverable", "for_whom", "not_doing", "mode", "turnaround_days", "languages", "tags"];
/// The fields of an A2A skill the set may give; `id` is the seeder's.
const SKILL_FIELDS: &[&str] = &["name", "description", "tags", "examples"];

fn read_json(path: &Path) -> Result<Value, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()).into())
}

fn array<'a>(v: &'a Value, what: &str) -> Result<&'a Vec<Value>, Error> {
    v.as_array().ok_or_else(|| format!("{what}: expected an array").into())
}

/// Reads `dir/agents/*.json` (in name order) and `dir/needs.json` and checks them.
pub fn load(dir: &Path) -> Result<JudgedSet, Error> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("agents"))
        .map_err(|e| format!("{}: {e}", dir.join("agents").display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut agents = Vec::new();
    for file in &files {
        for entry in array(&read_json(file)?, &file.display().to_string())? {
            agents.push(agent(entry).map_err(|e| format!("{}: {e}", file.display()))?);
        }
    }
    let needs_path = dir.join("needs.json");
    let mut needs = Vec::new();
    for entry in array(&read_json(&needs_path)?, "needs.json")? {
        needs.push(need(entry).map_err(|e| format!("{}: {e}", needs_path.display()))?);
    }
    let set = JudgedSet { agents, needs };
    check(&set)?;
    Ok(set)
}

fn agent(v: &Value) -> Result<Agent, Error> {
    let obj = v.as_object().ok_or("an agent is not an object")?;
    let handle = obj.get("handle").and_then(Value::as_str).ok_or("an agent without a handle")?.to_owned();
    if let Some(unknown) =
        obj.keys().find(|k| !PROFILE_FIELDS.contains(&k.as_str()) && !SET_FIELDS.contains(&k.as_str()))
    {
        return Err(format!("{handle}: unknown field {unknown}").into());
    }
    let profile: serde_json::Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| PROFILE_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let level = obj.get("trust").and_then(Value::as_u64).unwrap_or(0);
    if level > 2 {
        return Err(format!("{handle}: trust is 0, 1 or 2").into());
    }
    let collabs = match obj.get("collabs") {
        None => Vec::new(),
        Some(v) => array(v, &format!("{handle}: collabs"))?
            .iter()
            .map(|p| {
                p.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{handle}: a collab partner is not a handle"))
            })
            .collect::<Result<_, _>>()?,
    };
    let mut offerings = Vec::new();
    if let Some(list) = obj.get("offerings") {
        for o in array(list, &format!("{handle}: offerings"))? {
            let o = o.as_object().ok_or_else(|| format!("{handle}: an offering is not an object"))?;
            if let Some(unknown) = o.keys().find(|k| !OFFERING_FIELDS.contains(&k.as_str())) {
                return Err(format!("{handle}: unknown offering field {unknown}").into());
            }
            let mut o = o.clone();
            // What is on offer matters to a need, the terms of it do not: quote unless stated.
            o.entry("mode").or_insert_with(|| Value::from("quote"));
            offerings.push(Value::Object(o));
        }
    }
    let mut skills = Vec::new();
    if let Some(list) = obj.get("skills") {
        for s in array(list, &format!("{handle}: skills"))? {
            let o = s.as_object().ok_or_else(|| format!("{handle}: a skill is not an object"))?;
            if let Some(unknown) = o.keys().find(|k| !SKILL_FIELDS.contains(&k.as_str())) {
                return Err(format!("{handle}: unknown skill field {unknown}").into());
            }
            let text = |k: &str| o.get(k).and_then(Value::as_str).is_some_and(|t| !t.trim().is_empty());
            let strings = |k: &str| {
                o.get(k).is_none_or(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
            };
            if !text("name") || !text("description") || !strings("tags") || !strings("examples") {
                return Err(format!(
                    "{handle}: a skill has a name and a description, and tags and examples are lists of strings"
                )
                .into());
            }
            skills.push(s.clone());
        }
    }
    Ok(Agent {
        handle,
        profile: Value::Object(profile),
        offerings,
        skills,
        evidence: Evidence {
            level: level as u8,
            link: obj.get("link").and_then(Value::as_bool).unwrap_or(false),
            collabs,
        },
        stuffed: obj.get("stuffed").and_then(Value::as_bool).unwrap_or(false),
    })
}

fn need(v: &Value) -> Result<Need, Error> {
    let id = v["id"].as_str().ok_or("a need without an id")?.to_owned();
    let kind = v["type"].as_str().and_then(NeedType::parse).ok_or_else(|| {
        let names: Vec<_> = NeedType::ALL.iter().map(|t| t.name()).collect();
        format!("{id}: type is one of {}", names.join(", "))
    })?;
    let q = v["q"].as_str().filter(|q| !q.trim().is_empty()).ok_or_else(|| format!("{id}: no q"))?.to_owned();
    let mut judged = HashMap::new();
    for (handle, grade) in v["judged"].as_object().ok_or_else(|| format!("{id}: no judged object"))? {
        let grade = grade
            .as_u64()
            .filter(|g| *g <= u64::from(MAX_GRADE))
            .ok_or_else(|| format!("{id}: the grade of {handle} is an integer 0-{MAX_GRADE}"))?;
        judged.insert(handle.clone(), grade as u8);
    }
    Ok(Need { id, kind, q, spam_target: v["spam"].as_bool().unwrap_or(false), judged })
}

/// What must hold across the files: handles unique and known, collaborations between claimed
/// agents, every need met by at least one agent except made-up needs, which judge no agent at
/// all (an empty page is their answer), stuffed agents fresh and never judged fitting.
fn check(set: &JudgedSet) -> Result<(), Error> {
    let mut handles = HashSet::new();
    for a in &set.agents {
        if !handles.insert(a.handle.as_str()) {
            return Err(format!("agent {} appears twice", a.handle).into());
        }
    }
    for a in &set.agents {
        for p in &a.evidence.collabs {
            let partner = set.agent(p).ok_or_else(|| format!("{}: unknown collab partner {p}", a.handle))?;
            if a.evidence.level < 2 || partner.evidence.level < 2 {
                return Err(format!(
                    "{} and {p}: confirmed collaborations count between claimed agents (trust 2)",
                    a.handle
                )
                .into());
            }
            if !partner.evidence.collabs.contains(&a.handle) {
                return Err(format!("{p} does not list {} back as a collab partner", a.handle).into());
            }
        }
        if a.stuffed && a.evidence.level > 0 {
            return Err(format!("{}: stuffed agents are fresh sign-ups (trust 0)", a.handle).into());
        }
    }
    let mut ids = HashSet::new();
    for n in &set.needs {
        if !ids.insert(n.id.as_str()) {
            return Err(format!("need {} appears twice", n.id).into());
        }
        for (h, g) in &n.judged {
            let a = set.agent(h).ok_or_else(|| format!("need {}: unknown agent {h}", n.id))?;
            if a.stuffed && *g > 0 {
                return Err(format!("need {}: stuffed agent {h} is judged {g}", n.id).into());
            }
        }
        if n.expects_nothing() {
            if !n.judged.is_empty() {
                return Err(format!(
                    "need {}: a made-up need judges no agent (an empty page is its answer)",
                    n.id
                )
                .into());
            }
        } else if !n.judged.values().any(|g| *g >= MEETS) {
            return Err(format!(
                "need {}: no agent meets it (grade {MEETS} or more); only a made_up need may have none",
                n.id
            )
            .into());
        }
    }
    Ok(())
}

/// Agents per language of description, for the set's summary line.
pub fn description_languages(set: &JudgedSet) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for a in &set.agents {
        *out.entry(a.described_in()).or_insert(0) += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(handle: &str, level: u8, stuffed: bool) -> Agent {
        Agent {
            handle: handle.into(),
            profile: serde_json::json!({"handle": handle}),
            offerings: Vec::new(),
            skills: Vec::new(),
            evidence: Evidence { level, ..Evidence::default() },
            stuffed,
        }
    }

    fn need(id: &str, kind: NeedType, judged: &[(&str, u8)]) -> Need {
        Need {
            id: id.into(),
            kind,
            q: "q".into(),
            spam_target: false,
            judged: judged.iter().map(|(h, g)| ((*h).to_owned(), *g)).collect(),
        }
    }

    #[test]
    fn only_a_made_up_need_may_have_no_agent_that_meets_it_and_it_judges_none() {
        let agents = || vec![agent("real", 1, false)];
        let check_one = |n: Need| check(&JudgedSet { agents: agents(), needs: vec![n] });
        assert!(check_one(need("gibberish", NeedType::MadeUp, &[])).is_ok());
        let judged = check_one(need("gibberish", NeedType::MadeUp, &[("real", 0)])).unwrap_err();
        assert!(judged.to_string().contains("judges no agent"), "{judged}");
        let unmet = check_one(need("contracts", NeedType::Keyword, &[("real", 1)])).unwrap_err();
        assert!(unmet.to_string().contains("no agent meets it"), "{unmet}");
        assert!(check_one(need("contracts", NeedType::Keyword, &[("real", 2)])).is_ok());
    }

    #[test]
    fn skills_are_read_and_checked() {
        let a = super::agent(&serde_json::json!({
            "handle": "a", "skills": [{"name": "XBRL tagging", "description": "Tags filings.", "tags": ["xbrl"]}]
        }))
        .unwrap();
        assert_eq!(a.skills.len(), 1);
        assert!(!a.profile.as_object().unwrap().contains_key("skills"), "skills are not a profile field");
        for bad in [
            serde_json::json!({"handle": "a", "skills": [{"name": "x"}]}),
            serde_json::json!({"handle": "a", "skills": [{"name": "x", "description": "y", "tags": "z"}]}),
            serde_json::json!({"handle": "a", "skills": [{"name": "x", "description": "y", "id": "z"}]}),
        ] {
            assert!(super::agent(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_spam_wave_copies_only_the_stuffed_agents_under_new_handles() {
        let mut set =
            JudgedSet { agents: vec![agent("spam", 0, true), agent("real", 1, false)], needs: Vec::new() };
        set.multiply_stuffed(3);
        let handles: Vec<&str> = set.agents.iter().map(|a| a.handle.as_str()).collect();
        assert_eq!(handles, ["spam", "real", "spam-2", "spam-3"]);
        let copy = set.agent("spam-3").unwrap();
        assert!(copy.stuffed);
        assert_eq!(copy.profile["handle"], "spam-3", "the copy registers under its own handle");
        check(&set).unwrap();
    }
}
