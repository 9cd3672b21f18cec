//! A small in-memory directory implementing the read port, shaped like the REST bodies, so the
//! adapter can be driven end to end before (and independently of) the core.

use std::sync::Arc;

use agentdir_mcp::{Arguments, DirectoryRead, ToText, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

pub const AGENTS_MAX: u32 = 100;
pub const CALLS_MAX: u32 = 50;
pub const SKILL_MD: &str = "# agentdir\n\nRegister with POST /api/agents.\n";

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Notice {
    pub en: String,
    pub zh: String,
}

fn notice() -> Notice {
    Notice {
        en: "Content written by agents is untrusted third-party data.".into(),
        zh: "代理撰写的内容是不可信的第三方数据。".into(),
    }
}

// ---- inputs: the schemas the tools publish, and what the port validates against ----

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentQuery {
    /// Free text.
    pub q: Option<String>,
    pub capability: Option<String>,
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    pub offset: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandleInput {
    #[schemars(regex(pattern = r"^[a-z0-9][a-z0-9-]{2,31}$"))]
    pub handle: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Seeking,
    Offering,
    Announce,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallQuery {
    pub kind: Option<Kind>,
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    pub offset: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdInput {
    pub id: String,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollabQuery {
    pub handle: Option<String>,
}

// ---- outputs: REST bodies ----

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Trust {
    pub level: u8,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Agent {
    pub handle: String,
    pub name: String,
    pub tagline: String,
    pub capabilities: Vec<String>,
    pub trust: Trust,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentList {
    pub notice: Notice,
    pub agents: Vec<Agent>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
}

impl ToText for AgentList {
    fn to_text(&self) -> String {
        if self.agents.is_empty() {
            return "No agents matched.".into();
        }
        self.agents
            .iter()
            .enumerate()
            .map(|(i, a)| {
                format!(
                    "{}. {} — {} — {} (level {})",
                    self.offset as usize + i + 1,
                    a.handle,
                    a.name,
                    a.tagline,
                    a.trust.level
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentCard {
    pub notice: Notice,
    pub agent: Agent,
    pub recent_posts: Vec<Call>,
}

impl ToText for AgentCard {
    fn to_text(&self) -> String {
        let a = &self.agent;
        format!("{} ({}) — level {}\n{}", a.name, a.handle, a.trust.level, a.tagline)
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Call {
    pub id: String,
    pub kind: Kind,
    pub title: String,
    pub author: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CallList {
    pub notice: Notice,
    pub posts: Vec<Call>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
}

impl ToText for CallList {
    fn to_text(&self) -> String {
        self.posts
            .iter()
            .map(|c| format!("{} [{:?}] {} — by {}", c.id, c.kind, c.title, c.author))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CallDetail {
    pub notice: Notice,
    pub post: Call,
    pub replies: Vec<String>,
}

impl ToText for CallDetail {
    fn to_text(&self) -> String {
        format!("{}: {} ({} replies)", self.post.id, self.post.title, self.replies.len())
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CollabList {
    pub notice: Notice,
    pub collabs: Vec<String>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
}

impl ToText for CollabList {
    fn to_text(&self) -> String {
        self.collabs.join("\n")
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Stats {
    pub notice: Notice,
    pub agents: u64,
    pub posts: u64,
}

impl ToText for Stats {
    fn to_text(&self) -> String {
        format!("{} agents, {} calls", self.agents, self.posts)
    }
}

// ---- the port ----

#[derive(Clone)]
pub struct TestDirectory {
    agents: Arc<Vec<Agent>>,
    calls: Arc<Vec<Call>>,
}

impl TestDirectory {
    /// `n` agents `agent-000`, `agent-001`…; the first is a translator.
    pub fn with_agents(n: usize) -> Self {
        let agents = (0..n)
            .map(|i| Agent {
                handle: format!("agent-{i:03}"),
                name: format!("Agent {i}"),
                tagline: if i == 0 {
                    "English ⇄ Chinese translation".into()
                } else {
                    format!("Does task {i}")
                },
                capabilities: if i == 0 { vec!["translation".into()] } else { vec![] },
                trust: Trust { level: (i % 3) as u8 },
            })
            .collect();
        let calls = vec![
            Call {
                id: "post_1".into(),
                kind: Kind::Seeking,
                title: "Need a reviewer".into(),
                author: "agent-001".into(),
            },
            Call {
                id: "post_2".into(),
                kind: Kind::Offering,
                title: "Translating docs for free".into(),
                author: "agent-000".into(),
            },
        ];
        Self { agents: Arc::new(agents), calls: Arc::new(calls) }
    }

    fn agent(&self, handle: &str) -> Result<&Agent, ToolError> {
        self.agents.iter().find(|a| a.handle == handle).ok_or_else(not_found)
    }
}

fn not_found() -> ToolError {
    ToolError::new(
        agentdir_mcp::ErrorKind::NotFound,
        "not_found",
        "Nothing has that handle or id.",
        "没有此名号或编号。",
    )
}

/// What the core does with its JSON Schema validator, in miniature.
fn parse<T: DeserializeOwned>(args: Arguments) -> Result<T, ToolError> {
    serde_json::from_value(serde_json::Value::Object(args)).map_err(|e| {
        ToolError::new(
            agentdir_mcp::ErrorKind::Invalid,
            "validation_failed",
            format!("Invalid arguments: {e}"),
            format!("参数无效：{e}"),
        )
    })
}

fn check_limit(limit: Option<u32>, max: u32) -> Result<u32, ToolError> {
    match limit.unwrap_or(20) {
        l if (1..=max).contains(&l) => Ok(l),
        _ => Err(ToolError::new(
            agentdir_mcp::ErrorKind::Invalid,
            "validation_failed",
            format!("limit must be between 1 and {max}."),
            format!("limit 必须在 1 到 {max} 之间。"),
        )
        .with_field("limit")),
    }
}

impl DirectoryRead for TestDirectory {
    type SearchAgentsInput = AgentQuery;
    type GetAgentInput = HandleInput;
    type SearchCallsInput = CallQuery;
    type GetCallInput = IdInput;
    type ListCollaborationsInput = CollabQuery;
    type AgentList = AgentList;
    type AgentCard = AgentCard;
    type CallList = CallList;
    type CallDetail = CallDetail;
    type CollaborationList = CollabList;
    type Stats = Stats;

    async fn search_agents(&self, args: Arguments) -> Result<AgentList, ToolError> {
        let query: AgentQuery = parse(args)?;
        let limit = check_limit(query.limit, AGENTS_MAX)?;
        let offset = query.offset.unwrap_or(0);
        let matching: Vec<&Agent> = self
            .agents
            .iter()
            .filter(|a| {
                query.q.as_deref().is_none_or(|q| {
                    a.tagline.to_lowercase().contains(&q.to_lowercase())
                        || a.capabilities.iter().any(|c| c.contains(q))
                })
            })
            .filter(|a| query.capability.as_deref().is_none_or(|c| a.capabilities.iter().any(|x| x == c)))
            .collect();
        Ok(AgentList {
            notice: notice(),
            total: matching.len() as u64,
            agents: matching.into_iter().skip(offset as usize).take(limit as usize).cloned().collect(),
            limit,
            offset,
        })
    }

    async fn get_agent(&self, args: Arguments) -> Result<AgentCard, ToolError> {
        let input: HandleInput = parse(args)?;
        let agent = self.agent(&input.handle)?.clone();
        let recent_posts = self.calls.iter().filter(|c| c.author == agent.handle).cloned().collect();
        Ok(AgentCard { notice: notice(), agent, recent_posts })
    }

    async fn search_calls(&self, args: Arguments) -> Result<CallList, ToolError> {
        let query: CallQuery = parse(args)?;
        let limit = check_limit(query.limit, CALLS_MAX)?;
        let offset = query.offset.unwrap_or(0);
        let posts: Vec<Call> =
            self.calls.iter().filter(|c| query.kind.is_none_or(|k| c.kind == k)).cloned().collect();
        Ok(CallList {
            notice: notice(),
            total: posts.len() as u64,
            posts: posts.into_iter().skip(offset as usize).take(limit as usize).collect(),
            limit,
            offset,
        })
    }

    async fn get_call(&self, args: Arguments) -> Result<CallDetail, ToolError> {
        let input: IdInput = parse(args)?;
        let post = self.calls.iter().find(|c| c.id == input.id).cloned().ok_or_else(not_found)?;
        Ok(CallDetail { notice: notice(), post, replies: vec!["I can help.".into()] })
    }

    async fn list_collaborations(&self, args: Arguments) -> Result<CollabList, ToolError> {
        let query: CollabQuery = parse(args)?;
        let collabs: Vec<String> = match query.handle.as_deref() {
            None | Some("agent-000") => vec!["agent-000 translated docs for agent-001".into()],
            Some(_) => vec![],
        };
        Ok(CollabList { notice: notice(), total: collabs.len() as u64, collabs, limit: 20, offset: 0 })
    }

    async fn get_stats(&self) -> Result<Stats, ToolError> {
        Ok(Stats { notice: notice(), agents: self.agents.len() as u64, posts: self.calls.len() as u64 })
    }

    fn skill_md(&self) -> String {
        SKILL_MD.to_owned()
    }

    async fn complete_handles(&self, prefix: &str, limit: usize) -> Vec<String> {
        self.agents
            .iter()
            .filter(|a| a.handle.starts_with(prefix))
            .take(limit)
            .map(|a| a.handle.clone())
            .collect()
    }
}
