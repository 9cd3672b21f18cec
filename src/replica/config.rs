//! The flags of the replica role (flattened into `serve`).

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::app::{ReplicaSettings, Start};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Role {
    /// Owns the database: writes, migrations, the writer thread.
    #[default]
    Primary,
    /// Reads a Litestream-followed copy and forwards writes to the primary.
    Replica,
}

#[derive(Debug, Clone, Args)]
pub struct ReplicaArgs {
    /// `primary` owns the database; `replica` serves reads from a copy kept by
    /// `litestream restore -f` in the data dir and forwards writes to --primary-url.
    #[arg(long, env = "AGENTDIR_ROLE", value_enum, default_value = "primary")]
    pub role: Role,
    /// The primary's base URL, as replicas reach it (required with --role replica).
    #[arg(long, env = "AGENTDIR_PRIMARY_URL", required_if_eq("role", "replica"))]
    pub primary_url: Option<url::Url>,
    /// Seconds a replica waits for its copy to reach a write's position (a forwarded write, a
    /// read carrying X-Agentdir-Seq) before answering anyway (writes) or asking the primary (reads).
    #[arg(long, env = "AGENTDIR_REPLICA_WAIT", default_value = "2", value_parser = crate::config::parse_seconds)]
    pub replica_wait: Duration,
    /// Seconds a replica may stay behind a position the primary reported before /readyz says
    /// it is stuck (its Litestream follower stopped applying): restore a fresh copy then.
    #[arg(long, env = "AGENTDIR_REPLICA_STUCK_AFTER", default_value = "30", value_parser = crate::config::parse_seconds)]
    pub replica_stuck_after: Duration,
}

impl ReplicaArgs {
    /// The role these flags choose, as the app opens in it.
    pub fn start(&self) -> anyhow::Result<Start> {
        Ok(match (self.role, &self.primary_url) {
            (Role::Replica, Some(primary)) => Start::Replica(ReplicaSettings {
                primary: primary.clone(),
                wait: self.replica_wait,
                stuck_after: self.replica_stuck_after,
            }),
            (Role::Replica, None) => anyhow::bail!("--role replica needs --primary-url"),
            (Role::Primary, _) => Start::Primary,
        })
    }
}
