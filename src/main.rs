//! The `agentdir` binary: `serve`, `inbound-mail` and `admin`. Wiring only.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use agentdir::app::App;
use agentdir::config::{AdminAction, AdminArgs, Cli, Command, ServeArgs, SiteArgs};
use agentdir::derived::follow;
use agentdir::domain::handles::ReservedHandles;
use agentdir::progress::{Progress, Unit};
use agentdir::service::admin::{self, Actor};
use agentdir::service::inbound::{self, MailOutcome};
use agentdir::service::moderation::PublicReason;
use agentdir::{Settings, inbound_mail, signing, store};
use agentdir_search_index::{IndexError, SearchIndex};
use clap::Parser;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`: its place in `mi_option_e` of the mimalloc v3 that
/// libmimalloc-sys 0.1.49 builds (the crate names no constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long (ms) mimalloc keeps the pages that threads freed before it gives them back to the
/// system: 10 instead of its 1,000. Sixteen searches by meaning at once over a million agents
/// free ~0.15 GB within a second, which the default kept counted in the process's memory
/// (docs/operations.md, "Memory"). `MIMALLOC_PURGE_DELAY` in the environment still decides.
const PURGE_DELAY_MS: std::ffi::c_long = 10;

fn main() -> ExitCode {
    // SAFETY: sets a plain option value; `PURGE_DELAY` is an option of this mimalloc.
    unsafe { libmimalloc_sys::mi_option_set_default(PURGE_DELAY, PURGE_DELAY_MS) };
    init_logging();
    let cli = Cli::parse();
    agentdir::time::test_clock::load(match &cli.command {
        Command::Serve(args) => &args.site.data_dir,
        Command::InboundMail(site) => &site.data_dir,
        Command::Admin(args) => &args.data_dir,
    });
    let result = match cli.command {
        Command::Serve(args) => serve(*args),
        Command::InboundMail(site) => return inbound_mail_command(site),
        Command::Admin(args) => admin_command(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentdir: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    // Colour codes only for a person at a terminal: a log file or journal gets plain text.
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(colour);
    match std::env::var("AGENTDIR_LOG_FORMAT").ok().as_deref().map(str::trim) {
        Some(json) if json.eq_ignore_ascii_case("json") => builder.json().init(),
        None | Some("") => builder.init(),
        Some(text) if text.eq_ignore_ascii_case("text") => builder.init(),
        Some(other) => {
            builder.init();
            tracing::warn!(value = other, "AGENTDIR_LOG_FORMAT is json or text; logging as text");
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let limits = args.hardening();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.site.bind).await?;
        let bound = listener.local_addr()?;
        let metrics_listener = match args.metrics_bind {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await?),
            None => None,
        };
        let base_url = args.site.base_url(bound);
        let mail_domain = args.site.mail_domain(&base_url);
        let settings = Settings {
            data_dir: args.site.data_dir.clone(),
            mail_authserv_id: args.site.authserv_id(&mail_domain),
            mail_domain,
            base_url: base_url.clone(),
            rates: args.rates(),
            link_fetch_allow_private: args.link_fetch_allow_private.clone(),
            trusted_proxies: args.trusted_proxies.clone(),
            link_fetches_at_once: args.link_fetches_at_once(),
            read_pool: args.read_pool(),
            view_cache_bytes: args.view_cache_mb.saturating_mul(1 << 20),
            changes_retention_ms: i64::try_from(args.changes_retention.as_millis()).unwrap_or(i64::MAX),
            sitemap_urls: args.sitemap_urls,
            reserved_handles: args.reserved_handles(),
            endpoint_check_interval: args.endpoint_check_interval,
            model: args.model(),
            max_waiting: args.max_waiting,
            longest_wait: args.longest_wait(),
        };
        if args.link_fetch_allow_private != agentdir::checks::link_fetch::PrivateTargets::None {
            agentdir::domain::endpoint::lift_port_rule();
        }
        let start = args.replica.start(args.request_timeout)?;
        let app = tokio::task::spawn_blocking(move || App::open(settings, start)).await??;
        tracing::info!(%bound, %base_url, role = ?args.replica.role, "agentdir listening");
        // Tests and scripts read this line to learn the port when binding port 0.
        println!("agentdir listening on http://{bound}");
        if let Some(l) = &metrics_listener {
            tracing::info!(metrics = %l.local_addr()?, "/metrics served on its own listener");
        }
        if agentdir::serve::serve(app, listener, metrics_listener, limits).await?
            == agentdir::serve::Stopped::CopyReplaced
        {
            // After the in-flight requests: the supervisor starts it again on the new copy.
            std::process::exit(75);
        }
        Ok(())
    })
}

/// Exit codes follow sysexits: 0 verified, 65 (data error) rejected, 75 (temporary failure)
/// when the database could not be reached, so the MTA retries.
fn inbound_mail_command(site: SiteArgs) -> ExitCode {
    let base_url = site.base_url(site.bind);
    let mail_domain = site.mail_domain(&base_url);
    let authserv_id = site.authserv_id(&mail_domain);
    let mut raw = Vec::new();
    if let Err(e) = std::io::stdin().take(inbound_mail::MAX_MESSAGE_BYTES as u64 + 1).read_to_end(&mut raw) {
        eprintln!("agentdir inbound-mail: cannot read the message: {e}");
        return ExitCode::from(75);
    }
    let message = match inbound_mail::parse_message(&raw) {
        Ok(m) => m,
        Err(reason) => {
            eprintln!("agentdir inbound-mail: rejected: {reason}");
            return ExitCode::from(65);
        }
    };
    if let Err(reason) = inbound_mail::authenticate(&message, &authserv_id) {
        eprintln!("agentdir inbound-mail: rejected: {reason}");
        return ExitCode::from(65);
    }
    // A data dir without a database is a wrong --data-dir: the mail server keeps the message
    // and tries again (75) once the command is fixed, rather than bouncing it.
    let pool = match existing_database(&site.data_dir) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("agentdir inbound-mail: database unavailable: {e:#}");
            return ExitCode::from(75);
        }
    };
    match inbound::complete_by_mail(&pool, &message.from, &message.subject) {
        Ok(MailOutcome::MailboxVerified { handle }) => {
            eprintln!("agentdir inbound-mail: mailbox of {handle} verified");
            ExitCode::SUCCESS
        }
        Ok(MailOutcome::OwnerClaimed { handle }) => {
            eprintln!("agentdir inbound-mail: owner of {handle} claimed");
            ExitCode::SUCCESS
        }
        Ok(MailOutcome::RecoveryConfirmed { handle }) => {
            eprintln!("agentdir inbound-mail: key recovery of {handle} confirmed");
            ExitCode::SUCCESS
        }
        Err(reason) => {
            eprintln!("agentdir inbound-mail: rejected: {reason}");
            ExitCode::from(65)
        }
    }
}

/// What an operator action that found the state already so says: nothing was recorded (no
/// public log entry, no audit entry, no event).
fn unchanged(state: String) -> String {
    format!("{state}: nothing changed, nothing recorded")
}

/// The database of the data dir a command works beside. One without a database is a mistake
/// (a misspelt --data-dir, a command run from another directory), not a directory to create:
/// only `serve` creates one, so `backup` never copies an empty new database.
fn existing_database(data_dir: &std::path::Path) -> anyhow::Result<store::Pool> {
    let file = data_dir.join(store::DB_FILE);
    anyhow::ensure!(
        file.is_file(),
        "no database at {}: is --data-dir (AGENTDIR_DATA_DIR) right? `agentdir serve` creates one",
        file.display()
    );
    store::open(data_dir, 2)
}

/// Whether two paths name one file (the first need not exist yet): the same name in the same
/// directory, links resolved.
fn same_place(a: &std::path::Path, b: &std::path::Path) -> bool {
    let place = |p: &std::path::Path| {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        Some((std::fs::canonicalize(dir).ok()?, p.file_name()?.to_owned()))
    };
    let resolved =
        |p: &std::path::Path| std::fs::canonicalize(p).ok().and_then(|r| place(&r)).or_else(|| place(p));
    resolved(a).is_some_and(|a| Some(a) == resolved(b))
}

fn admin_command(args: AdminArgs) -> anyhow::Result<()> {
    let pool = existing_database(&args.data_dir)?;
    let actor_name =
        args.actor.clone().or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "operator".into());
    let public = PublicReason { category: args.action.category(), note: args.public_note.as_deref() };
    let by = Actor { name: &actor_name, reason: args.reason.as_deref(), public };
    let done = |what: String| -> anyhow::Result<()> {
        println!("{what}");
        Ok(())
    };
    match args.action {
        AdminAction::VerifyMailbox { handle, .. } => {
            let changed = admin::set_mailbox_verified(&pool, &handle, true, &by)?;
            done(if changed {
                format!("mailbox of {handle} marked verified")
            } else {
                unchanged(format!("the mailbox of {handle} was already verified"))
            })
        }
        AdminAction::UnverifyMailbox { handle, .. } => {
            let changed = admin::set_mailbox_verified(&pool, &handle, false, &by)?;
            done(if changed {
                format!("mailbox verification of {handle} removed")
            } else {
                unchanged(format!("the mailbox of {handle} was not verified"))
            })
        }
        AdminAction::ClaimOwner { handle, owner_email, .. } => {
            // Checked as the API checks `owner_email`.
            if !agentdir::validation::accepts::<agentdir::domain::fields::Email>(&owner_email.as_str().into())
            {
                return Err(
                    agentdir::error::Error::validation("owner_email", agentdir::error::Rule::Email).into()
                );
            }
            let changed = admin::set_owner_claim(&pool, &handle, Some(&owner_email), &by)?;
            done(if changed {
                format!("{handle} claimed by {owner_email}")
            } else {
                unchanged(format!("{handle} was already claimed by {owner_email}"))
            })
        }
        AdminAction::UnclaimOwner { handle, .. } => {
            let changed = admin::set_owner_claim(&pool, &handle, None, &by)?;
            done(if changed {
                format!("owner claim of {handle} removed")
            } else {
                unchanged(format!("{handle} had no owner claim"))
            })
        }
        AdminAction::Suspend { handle, .. } => {
            let changed = admin::set_suspended(&pool, &handle, true, &by)?;
            done(if changed {
                format!("{handle} suspended")
            } else {
                unchanged(format!("{handle} was already suspended"))
            })
        }
        AdminAction::Restore { handle, .. } => {
            let changed = admin::set_suspended(&pool, &handle, false, &by)?;
            done(if changed {
                format!("{handle} restored")
            } else {
                unchanged(format!("{handle} was not suspended"))
            })
        }
        AdminAction::HideCall { id, .. } => {
            let changed = admin::set_call_hidden(&pool, &id, true, &by)?;
            done(if changed {
                format!("call {id} hidden")
            } else {
                unchanged(format!("call {id} was already hidden"))
            })
        }
        AdminAction::RestoreCall { id, .. } => {
            let changed = admin::set_call_hidden(&pool, &id, false, &by)?;
            done(if changed {
                format!("call {id} restored")
            } else {
                unchanged(format!("call {id} was not hidden"))
            })
        }
        AdminAction::Reports { limit } => {
            for r in admin::open_reports(&pool, limit)? {
                println!("{}", serde_json::to_string(&r)?);
            }
            Ok(())
        }
        AdminAction::DismissReport { id } => {
            admin::dismiss_report(&pool, &id, &by)?;
            done(format!("report {id} dismissed"))
        }
        AdminAction::Audit { limit } => {
            for entry in admin::audit_log(&pool, limit)? {
                println!("{}", serde_json::to_string(&entry)?);
            }
            Ok(())
        }
        AdminAction::DeleteAgent { handle, .. } => {
            let deleted = admin::delete_agent(&pool, &handle, &by)?;
            println!("{}", serde_json::to_string(&deleted)?);
            Ok(())
        }
        AdminAction::RenameAgent { handle, new_handle, .. } => {
            let reserved = ReservedHandles::new(&args.reserved_handles);
            admin::rename_agent(&pool, &reserved, &handle, &new_handle, &by)?;
            done(format!("{handle} renamed to {new_handle}; {handle} redirects there"))
        }
        AdminAction::EraseDeleted => {
            let erased = admin::erase_deleted(&pool, &by)?;
            println!("{}", serde_json::to_string(&erased)?);
            Ok(())
        }
        AdminAction::Reindex => match SearchIndex::open(&args.data_dir.join(agentdir::store::INDEX_DIR)) {
            Ok(index) => {
                follow::rebuild_alone(&pool, &index, &mut Progress::stderr("reindex", Unit::Documents))?;
                done("search index rebuilt".into())
            }
            Err(IndexError::Locked) => {
                follow::request_rebuild(&pool)?;
                done("the running server holds the index; it will rebuild it within a few seconds".into())
            }
            Err(e) => Err(anyhow::anyhow!("cannot open the search index: {e}")),
        },
        AdminAction::Backup { path } => {
            let live = args.data_dir.join(store::DB_FILE);
            anyhow::ensure!(
                !same_place(&path, &live),
                "{} is the live database: back it up to another file",
                path.display()
            );
            admin::backup(&pool, &path, &mut Progress::stderr("backup", Unit::Bytes))?;
            let keys = signing::backup_path(&path);
            if signing::copy_to(&args.data_dir, &keys)? {
                done(format!("database copied to {}, signing keys to {}", path.display(), keys.display()))
            } else {
                done(format!("database copied to {} (no signing keys in the data dir)", path.display()))
            }
        }
        AdminAction::RotateSigningKey => {
            let kid = signing::rotate(&args.data_dir)?;
            done(format!("new signing key {kid}; earlier public keys stay listed"))
        }
    }
}
