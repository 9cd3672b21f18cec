//! Mail as the local MTA hands it to `agentdir inbound-mail`: a server configured with a mail
//! domain and authserv-id, messages with the Authentication-Results it stamps, and delivery.

use std::io::Write;
use std::process::{Command, Stdio};

use super::{BIN, RELAXED_LIMITS, Server};

pub const MAIL_DOMAIN: &str = "dir.example";
pub const AUTHSERV: &str = "mx.dir.example";

pub async fn server() -> Server {
    let mut env = RELAXED_LIMITS.to_vec();
    env.push(("AGENTDIR_MAIL_DOMAIN", MAIL_DOMAIN));
    env.push(("AGENTDIR_MAIL_AUTHSERV_ID", AUTHSERV));
    Server::start_with(&env).await
}

/// A message as the local MTA hands it over, with the Authentication-Results it stamped.
pub fn message(from: &str, subject: &str, auth_results: &str) -> String {
    format!(
        "Return-Path: <{from}>\r\nAuthentication-Results: {auth_results}\r\nFrom: Someone <{from}>\r\n\
         To: verify@{MAIL_DOMAIN}\r\nSubject: {subject}\r\nMessage-ID: <{}@example.org>\r\n\
         Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello\r\n",
        rand_id()
    )
}

pub fn rand_id() -> String {
    format!("{:x}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos())
}

pub fn dkim_pass(from: &str) -> String {
    let domain = from.rsplit('@').next().unwrap();
    format!("{AUTHSERV}; dkim=pass header.d={domain} header.s=sel; spf=none smtp.mailfrom={from}")
}

/// Pipes `raw` to `agentdir inbound-mail`; returns (exit code, stderr).
pub fn deliver(s: &Server, raw: &str) -> (i32, String) {
    let mut child = Command::new(BIN)
        .arg("inbound-mail")
        .arg("--data-dir")
        .arg(&s.data_dir)
        .env("AGENTDIR_MAIL_DOMAIN", MAIL_DOMAIN)
        .env("AGENTDIR_MAIL_AUTHSERV_ID", AUTHSERV)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn inbound-mail");
    child.stdin.take().unwrap().write_all(raw.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}
