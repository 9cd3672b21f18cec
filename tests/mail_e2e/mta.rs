//! A private mail system on loopback, built from Debian's packages and the configuration in
//! deploy/mail: a DNS server (dnsmasq) for the test domains' DKIM keys and SPF records, the SPF
//! milter (pyspf-milter), OpenDKIM, and a Postfix instance with its own config and queue
//! directories, listening on a free loopback port. Nothing touches the machine's own mail system
//! or DNS: every daemon runs on its own port from files in one temp dir and stops on drop.
//!
//! The deploy files are used as shipped, with only their example names, paths and ports
//! replaced; what the test adds on top (loopback-only settings) is written out below.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Debian programs the stack runs; their packages are installed by `.ci/run`.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("/usr/sbin/postfix", "postfix"),
    ("/usr/sbin/opendkim", "opendkim"),
    ("/usr/sbin/opendkim-genkey", "opendkim-tools"),
    ("/usr/bin/pyspf-milter", "pyspf-milter"),
    ("/usr/sbin/dnsmasq", "dnsmasq-base"),
    ("/usr/lib/python3/dist-packages/dkim/__init__.py", "python3-dkim"),
];

const SELECTOR: &str = "sel";
const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/mail");
const TOOLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tools");
/// How long one daemon may take to listen, or one message to be delivered.
const PATIENCE: Duration = Duration::from_secs(30);

/// A sender domain served by the test DNS: with a DKIM key (selector `sel`) or not, and its SPF
/// record.
pub struct SenderDomain {
    pub name: &'static str,
    pub dkim: bool,
    pub spf: &'static str,
}

/// Where `agentdir inbound-mail` runs: the binary, the data dir, the mail domain and authserv-id
/// the server uses, and the user the pipe runs as.
pub struct InboundCommand<'a> {
    pub bin: &'a str,
    pub data_dir: &'a Path,
    pub mail_domain: &'a str,
    pub authserv_id: &'a str,
    pub user: &'a str,
}

pub struct MailStack {
    dir: tempfile::TempDir,
    smtp_port: u16,
    daemons: Vec<(&'static str, Child)>,
    postfix_config: PathBuf,
}

/// What Postfix reported for one message: `sent`, `bounced` or `deferred`, and its explanation
/// (for the agentdir pipe, the command's one-line reason).
#[derive(Debug)]
pub struct Delivery {
    pub status: String,
    pub detail: String,
}

impl MailStack {
    pub fn start(site: &InboundCommand<'_>, domains: &[SenderDomain]) -> MailStack {
        let dir = tempfile::tempdir().expect("temp dir");
        // The daemons read their files after dropping to their own users.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut stack =
            MailStack { smtp_port: 0, daemons: Vec::new(), postfix_config: dir.path().join("postfix"), dir };
        let dns_port = stack.start_dns(domains);
        let dkim_port = stack.start_opendkim(site.authserv_id, dns_port);
        let spf_port = stack.start_spf_milter(site.authserv_id, dns_port);
        stack.start_postfix(site, spf_port, dkim_port);
        stack
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The private key of a sender domain that has one.
    pub fn key(&self, domain: &str) -> PathBuf {
        self.path(&format!("keys/{domain}/{SELECTOR}.private"))
    }

    fn start_dns(&mut self, domains: &[SenderDomain]) -> u16 {
        let port = free_port();
        let mut conf = format!(
            "port={port}\nlisten-address=127.0.0.1\nbind-interfaces\nno-resolv\nno-hosts\nlog-facility=-\n\
             # Every other name under .test does not exist (at once, without asking anyone).\nlocal=/test/\n"
        );
        for domain in domains {
            conf.push_str(&format!("txt-record={},\"{}\"\n", domain.name, domain.spf));
            if domain.dkim {
                let record = self.dkim_key(domain.name);
                conf.push_str(&format!("txt-record={SELECTOR}._domainkey.{},\"{record}\"\n", domain.name));
            }
        }
        let file = self.write("dnsmasq.conf", &conf);
        let pid = self.path("dnsmasq.pid");
        let child = self.spawn(
            "dnsmasq",
            Command::new("/usr/sbin/dnsmasq")
                .arg("--keep-in-foreground")
                .arg(format!("--conf-file={}", file.display()))
                .arg(format!("--pid-file={}", pid.display())),
        );
        self.daemons.push(("dnsmasq", child));
        wait_listening("dnsmasq", port);
        port
    }

    /// Generates the domain's key with opendkim-genkey; returns its DNS record's text.
    fn dkim_key(&self, domain: &str) -> String {
        let keys = self.path(&format!("keys/{domain}"));
        std::fs::create_dir_all(&keys).expect("key dir");
        // 1024 bits keeps the record within one 255-byte TXT string; OpenDKIM's minimum.
        run(Command::new("/usr/sbin/opendkim-genkey")
            .args(["-b", "1024", "-s", SELECTOR, "-d", domain, "-D"])
            .arg(&keys));
        let txt = std::fs::read_to_string(keys.join(format!("{SELECTOR}.txt"))).expect("key record");
        // `sel._domainkey IN TXT ( "v=DKIM1; h=sha256; k=rsa; " "p=…" )`: join the strings.
        txt.split('"').skip(1).step_by(2).collect()
    }

    fn start_opendkim(&mut self, authserv_id: &str, dns_port: u16) -> u16 {
        let port = free_port();
        // OpenDKIM resolves through libunbound, pointed at the test DNS for .test (which
        // unbound otherwise answers itself, as a special-use domain, with NXDOMAIN).
        let unbound = self.write(
            "unbound.conf",
            &format!(
                "server:\n  do-not-query-localhost: no\n  local-zone: \"test.\" nodefault\n\
                 forward-zone:\n  name: \"test.\"\n  forward-addr: 127.0.0.1@{dns_port}\n"
            ),
        );
        let conf = deploy_file("opendkim.conf", authserv_id, &[])
            .lines()
            .map(|line| match line.split_whitespace().next() {
                Some("Socket") => format!("Socket inet:{port}@127.0.0.1"),
                Some("PidFile") => format!("PidFile {}", self.path("opendkim.pid").display()),
                Some("Syslog") => "Syslog no".to_owned(),
                _ => line.to_owned(),
            })
            .chain([format!("ResolverConfiguration {}", unbound.display())])
            .collect::<Vec<_>>()
            .join("\n");
        let file = self.write("opendkim.conf", &conf);
        let child = self.spawn("opendkim", Command::new("/usr/sbin/opendkim").arg("-f").arg("-x").arg(file));
        self.daemons.push(("opendkim", child));
        wait_listening("opendkim", port);
        port
    }

    fn start_spf_milter(&mut self, authserv_id: &str, dns_port: u16) -> u16 {
        let port = free_port();
        let conf = deploy_file("pyspf-milter.conf", authserv_id, &[])
            .lines()
            .map(|line| match line.split([' ', '=']).next() {
                Some("Socket") => format!("Socket = inet:{port}@127.0.0.1"),
                Some("PidFile") => format!("PidFile = {}", self.path("pyspf-milter.pid").display()),
                // Loopback is the outside world here: no address is exempt from the check
                // (192.0.2.1 is a documentation address no test mail comes from).
                Some("skip_addresses") => "skip_addresses = 192.0.2.1/32".to_owned(),
                Some("InternalHosts") => "InternalHosts = 192.0.2.1".to_owned(),
                _ => line.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let file = self.write("pyspf-milter.conf", &conf);
        let child = self.spawn(
            "pyspf-milter",
            Command::new("/usr/bin/python3")
                .arg(format!("{TOOLS}/pyspf_milter_on_port.py"))
                .arg(dns_port.to_string())
                .arg(file),
        );
        self.daemons.push(("pyspf-milter", child));
        wait_listening("pyspf-milter", port);
        port
    }

    fn start_postfix(&mut self, site: &InboundCommand<'_>, spf_port: u16, dkim_port: u16) {
        self.smtp_port = free_port();
        let root = self.dir.path().display().to_string();
        for sub in ["postfix", "queue", "data"] {
            std::fs::create_dir_all(self.path(sub)).expect("postfix dir");
        }
        run(Command::new("chown").arg("postfix").arg(self.path("data")));
        let main_cf = format!(
            "# A private instance for the test; then deploy/mail/main.cf.\n\
             compatibility_level = 3.6\n\
             queue_directory = {root}/queue\n\
             data_directory = {root}/data\n\
             mail_owner = postfix\n\
             setgid_group = postdrop\n\
             myhostname = {authserv}\n\
             mydestination =\n\
             inet_interfaces = 127.0.0.1\n\
             inet_protocols = ipv4\n\
             mynetworks = 127.0.0.0/8\n\
             alias_maps =\n\
             alias_database =\n\
             smtputf8_enable = no\n\
             maillog_file = {root}/maillog\n\
             maillog_file_prefixes = {root}\n\
             # Bounces to the test senders' domains go nowhere.\n\
             default_transport = discard\n\n{deploy}",
            authserv = site.authserv_id,
            deploy = deploy_file(
                "main.cf",
                site.authserv_id,
                &[
                    ("agents.example.org", site.mail_domain),
                    ("inet:localhost:8893", &format!("inet:127.0.0.1:{spf_port}")),
                    ("inet:localhost:8891", &format!("inet:127.0.0.1:{dkim_port}")),
                ],
            ),
        );
        self.write("postfix/main.cf", &main_cf);
        let master_cf = format!(
            "# The services a receiving Postfix needs, unchrooted; then deploy/mail/master.cf.\n\
             127.0.0.1:{port} inet n - n - - smtpd\n\
             cleanup   unix  n - n - 0 cleanup\n\
             qmgr      unix  n - n 300 1 qmgr\n\
             rewrite   unix  - - n - - trivial-rewrite\n\
             bounce    unix  - - n - 0 bounce\n\
             defer     unix  - - n - 0 bounce\n\
             trace     unix  - - n - 0 bounce\n\
             verify    unix  - - n - 1 verify\n\
             flush     unix  n - n 1000? 0 flush\n\
             proxymap  unix  - - n - - proxymap\n\
             showq     unix  n - n - - showq\n\
             error     unix  - - n - - error\n\
             retry     unix  - - n - - error\n\
             discard   unix  - - n - - discard\n\
             anvil     unix  - - n - 1 anvil\n\
             scache    unix  - - n - 1 scache\n\
             postlog   unix-dgram n - n - 1 postlogd\n\n{deploy}",
            port = self.smtp_port,
            deploy = deploy_file(
                "master.cf",
                site.authserv_id,
                &[
                    ("agents.example.org", site.mail_domain),
                    ("/usr/local/bin/agentdir", site.bin),
                    ("/var/lib/agentdir", &site.data_dir.display().to_string()),
                    ("user=agentdir-mail", &format!("user={}", site.user)),
                ],
            ),
        );
        self.write("postfix/master.cf", &master_cf);
        let child = self.spawn(
            "postfix",
            Command::new("/usr/sbin/postfix").arg("-c").arg(&self.postfix_config).arg("start-fg"),
        );
        self.daemons.push(("postfix", child));
        wait_listening("postfix", self.smtp_port);
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    fn spawn(&self, name: &str, command: &mut Command) -> Child {
        let log = std::fs::File::create(self.path(&format!("{name}.log"))).expect("daemon log");
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"))
    }

    /// Submits one message over SMTP as an outside server would; the queue id on acceptance,
    /// else the server's refusal (`Err`).
    pub fn submit(&self, mail_from: &str, rcpt_to: &str, message: &[u8]) -> Result<String, String> {
        let stream = TcpStream::connect(("127.0.0.1", self.smtp_port)).expect("connect to Postfix");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        let mut smtp = Smtp { reader: BufReader::new(stream.try_clone().expect("clone")), writer: stream };
        smtp.expect(None, "220")?;
        smtp.expect(Some("EHLO mail.sender.test"), "250")?;
        smtp.expect(Some(&format!("MAIL FROM:<{mail_from}>")), "250")?;
        smtp.expect(Some(&format!("RCPT TO:<{rcpt_to}>")), "250")?;
        smtp.expect(Some("DATA"), "354")?;
        smtp.writer.write_all(&dot_stuffed(message)).expect("send the message");
        let queued = smtp.expect(Some("."), "250")?;
        let _ = smtp.expect(Some("QUIT"), "221");
        queued
            .split_whitespace()
            .last()
            .filter(|_| queued.contains("queued as"))
            .map(str::to_owned)
            .ok_or_else(|| format!("no queue id in {queued:?}"))
    }

    /// Waits for Postfix's verdict on the delivery of message `queue_id` to the agentdir pipe.
    pub fn delivery(&self, queue_id: &str) -> Delivery {
        let needle = format!("{queue_id}: to=<");
        let deadline = Instant::now() + PATIENCE;
        loop {
            let log = std::fs::read_to_string(self.path("maillog")).unwrap_or_default();
            let found = log
                .lines()
                .filter(|line| line.contains(&needle))
                .find_map(|line| line.split_once(" status=").map(|(_, rest)| rest.to_owned()));
            if let Some(rest) = found {
                let (status, detail) = rest.split_once(' ').unwrap_or((&rest, ""));
                return Delivery { status: status.to_owned(), detail: detail.to_owned() };
            }
            assert!(
                Instant::now() < deadline,
                "no delivery of {queue_id} within {PATIENCE:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Everything the daemons logged, for a failure message.
    pub fn logs(&self) -> String {
        ["maillog", "postfix.log", "opendkim.log", "pyspf-milter.log", "dnsmasq.log"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(self.path(name)).unwrap_or_default();
                format!("--- {name}\n{text}")
            })
            .collect()
    }
}

impl Drop for MailStack {
    fn drop(&mut self) {
        // Postfix's master stops its children itself; the milters and dnsmasq hold nothing
        // worth a graceful stop (and the milters take seconds to notice a SIGTERM).
        let _ = Command::new("/usr/sbin/postfix")
            .arg("-c")
            .arg(&self.postfix_config)
            .arg("stop")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        for (name, child) in &mut self.daemons {
            if *name == "postfix" {
                let deadline = Instant::now() + Duration::from_secs(10);
                while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A deploy/mail file with its example authserv-id and the given names replaced.
fn deploy_file(name: &str, authserv_id: &str, replace: &[(&str, &str)]) -> String {
    let text = std::fs::read_to_string(format!("{DEPLOY}/{name}")).expect("deploy/mail file");
    // The authserv-id first: it contains the example mail domain.
    let mut text = text.replace("mx.agents.example.org", authserv_id);
    for (from, to) in replace {
        assert!(text.contains(from), "deploy/mail/{name} no longer holds {from}");
        text = text.replace(from, to);
    }
    text
}

struct Smtp {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Smtp {
    /// Sends `command` (if any) and reads the whole reply; `Err` with it unless its code is `code`.
    fn expect(&mut self, command: Option<&str>, code: &str) -> Result<String, String> {
        if let Some(command) = command {
            self.writer.write_all(format!("{command}\r\n").as_bytes()).expect("send an SMTP command");
        }
        let mut reply = String::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("read an SMTP reply");
            reply.push_str(&line);
            if line.len() < 4 || line.as_bytes()[3] != b'-' {
                break;
            }
        }
        if reply.starts_with(code) {
            Ok(reply.trim_end().to_owned())
        } else {
            Err(reply.trim_end().to_owned())
        }
    }
}

/// The DATA section: CRLF lines, leading dots doubled, ended by the lone dot the caller sends.
fn dot_stuffed(message: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(message).replace("\r\n", "\n");
    let mut out = String::new();
    for line in text.trim_end_matches('\n').split('\n') {
        if line.starts_with('.') {
            out.push('.');
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.into_bytes()
}

/// DKIM-signs `message` with the domain's key (dkimpy), as the sender's outbound server would.
pub fn dkim_sign(key: &Path, domain: &str, message: &str) -> String {
    let mut child = Command::new("/usr/bin/python3")
        .arg(format!("{TOOLS}/dkim_sign.py"))
        .arg(key)
        .args([domain, SELECTOR])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dkim_sign.py");
    child.stdin.take().expect("stdin").write_all(message.as_bytes()).expect("write the message");
    let out = child.wait_with_output().expect("dkim_sign.py");
    assert!(out.status.success(), "dkim_sign.py: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("signed message")
}

/// A port free on 127.0.0.1 for both TCP and UDP right now (dnsmasq takes both).
fn free_port() -> u16 {
    loop {
        let tcp = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = tcp.local_addr().expect("addr").port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

fn wait_listening(name: &str, port: u16) {
    let deadline = Instant::now() + PATIENCE;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{name} did not listen on port {port} within {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run(command: &mut Command) {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    let mut err = String::new();
    let _ = out.stderr.as_slice().read_to_string(&mut err);
    assert!(out.status.success(), "{command:?} failed: {err}");
}
