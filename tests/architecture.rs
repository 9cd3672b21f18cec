//! The map tells the truth: every `crate::…` and `super::…` path in `src/` (in `use` lines and
//! inline alike, comments aside) goes from a folder to one that `docs/architecture.md` allows it
//! to import, and no circle of files spans two folders.
//!
//! The allowed imports are stated once, in the table of `docs/architecture.md` between the
//! `allowed-imports` markers, from the top of the house down: a part may import only parts
//! listed below it, so the table itself can hold no circle. A part is a folder of `src/`
//! (`service/`) or a file beside them (`error.rs`); `lib.rs` and `main.rs`, which only declare
//! and wire the parts, import what they need. The check reads the source as text: no build, no
//! network.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const MAP: &str = "docs/architecture.md";
const TABLE_START: &str = "<!-- allowed-imports -->";
const TABLE_END: &str = "<!-- /allowed-imports -->";
/// The crate's roots: they declare the parts and wire them, so they may import any.
const ROOTS: [&str; 2] = ["lib.rs", "main.rs"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A part: `service/` or `error.rs` (as the table writes it).
type Part = String;

/// The table: each part with the parts it may import, in the table's order (top first).
struct Table {
    order: Vec<Part>,
    allowed: HashMap<Part, BTreeSet<Part>>,
}

fn table() -> Table {
    let text = std::fs::read_to_string(root().join(MAP)).expect("docs/architecture.md reads");
    let start = text.find(TABLE_START).expect("the map marks its table with <!-- allowed-imports -->");
    let end = text.find(TABLE_END).expect("the map ends its table with <!-- /allowed-imports -->");
    let mut order = Vec::new();
    let mut allowed = HashMap::new();
    for line in text[start + TABLE_START.len()..end].lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        let (Some(first), Some(last)) = (cells.first(), cells.last()) else { continue };
        let Some(part) = ticked(first).into_iter().next() else { continue };
        if cells.len() < 2 {
            continue;
        }
        assert!(!allowed.contains_key(&part), "{MAP}: {part} is listed twice");
        order.push(part.clone());
        allowed.insert(part, ticked(last).into_iter().collect::<BTreeSet<_>>());
    }
    assert!(!order.is_empty(), "{MAP}: the allowed-imports table has no rows");
    Table { order, allowed }
}

/// The `code spans` of a table cell.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("src/ reads") {
            let path = entry.expect("an entry of src/").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A source file of the crate: where it is and which module it is.
struct Source {
    /// From `src/`, with `/`: `service/agents.rs`.
    rel: String,
    /// Its module path: `["service", "agents"]`; `[]` for the roots.
    module: Vec<String>,
    /// Its part (`service/`, `error.rs`), or `None` for a root.
    part: Option<Part>,
    /// The folder it is in, for circles: `service`, `http/handlers`, `` (src itself).
    folder: String,
}

fn source(src: &Path, path: &Path) -> Source {
    let rel = path.strip_prefix(src).expect("under src/").to_string_lossy().replace('\\', "/");
    let mut segments: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if segments.last().is_some_and(|s| s == "mod") {
        segments.pop();
    }
    let is_root = ROOTS.contains(&rel.as_str());
    let module = if is_root { Vec::new() } else { segments };
    let part = match rel.split_once('/') {
        _ if is_root => None,
        Some((folder, _)) => Some(format!("{folder}/")),
        None => Some(rel.clone()),
    };
    let folder = rel.rsplit_once('/').map_or(String::new(), |(f, _)| f.to_owned());
    Source { rel, module, part, folder }
}

/// The text with comments blanked and string literals emptied (unless a literal is a path, as
/// in `#[schemars(with = "super::fields::Email")]`), newlines kept so offsets keep their line.
fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if c == '"' || (c == 'r' && matches!(next, Some('"' | '#')) && raw_start(&chars, i)) {
            let start = i;
            let end = string_end(&chars, i);
            let literal: String = chars[start..end].iter().collect();
            let inner = literal.trim_start_matches('r').trim_matches('#').trim_matches('"');
            if (inner.starts_with("crate::") || inner.starts_with("super::")) && in_attribute(&chars, start) {
                out.push(' ');
                out.push_str(inner);
                for _ in inner.chars().count() + 1..end - start {
                    out.push(' ');
                }
            } else {
                for &ch in &chars[start..end] {
                    blank(&mut out, ch);
                }
            }
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}'), or a lifetime ('a), which stays.
            let close = if next == Some('\\') {
                (i + 3..chars.len()).find(|&j| chars[j] == '\'')
            } else {
                (chars.get(i + 2) == Some(&'\'')).then_some(i + 2)
            };
            match close {
                Some(j) => {
                    for &ch in &chars[i..=j] {
                        blank(&mut out, ch);
                    }
                    i = j + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether the literal starting at `i` is inside an attribute (`#[…]`): its text is a path.
fn in_attribute(chars: &[char], i: usize) -> bool {
    let mut j = i;
    while j > 0 {
        j -= 1;
        match chars[j] {
            ';' | '{' | '}' => return false,
            '[' if j > 0 && chars[j - 1] == '#' => return true,
            _ => {}
        }
    }
    false
}

/// Whether `r` at `i` opens a raw string (`r"…"`, `r#"…"#`), not an identifier ending in r.
fn raw_start(chars: &[char], i: usize) -> bool {
    let before = i.checked_sub(1).map(|j| chars[j]);
    let before = if before == Some('b') { i.checked_sub(2).map(|j| chars[j]) } else { before };
    if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
        return false;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    chars.get(j) == Some(&'"')
}

/// The index just past the string literal starting at `i` (plain or raw).
fn string_end(chars: &[char], i: usize) -> usize {
    if chars[i] == 'r' {
        let mut j = i + 1;
        let mut hashes = 0;
        while chars[j] == '#' {
            hashes += 1;
            j += 1;
        }
        j += 1;
        while j < chars.len() {
            if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                return j + 1 + hashes;
            }
            j += 1;
        }
        return chars.len();
    }
    let mut j = i + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '"' => return j + 1,
            _ => j += 1,
        }
    }
    chars.len()
}

/// One path a file names: where, and the module path it resolves to.
struct Named {
    line: usize,
    target: Vec<String>,
    /// Where the path ends in the code (a `use … as name` renames it there).
    end: usize,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The modules written inline (`mod tests { … }`): where each opens and closes, and its name.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find("mod ").map(|k| k + from) {
        from = k + 1;
        if code[..k].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &code[k + 4..];
        let name: String = rest.trim_start().chars().take_while(|&c| is_ident(c)).collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let mut depth = 0;
        for (off, ch) in code[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        found.push((open, open + off, name.clone()));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    found
}

/// The module of the code at `at`: the file's module and the inline modules around `at`.
fn module_at(file: &[String], inline: &[(usize, usize, String)], at: usize) -> Vec<String> {
    let mut module = file.to_vec();
    module.extend(
        inline.iter().filter(|(open, close, _)| *open < at && at < *close).map(|(_, _, n)| n.clone()),
    );
    module
}

/// The paths `code` names that start with `crate::` or `super::`, resolved from `module`; a
/// group (`crate::store::{agents, calls}`) names each of its members.
fn named_paths(code: &str, module: &[String]) -> Vec<Named> {
    let inline = inline_modules(code);
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(at) = next_start(code, i) {
        i = at + 1;
        let (mut base, mut j) = if code[at..].starts_with("crate::") {
            (Vec::new(), at + "crate::".len())
        } else {
            // `super` from module a::b is a.
            let mut base = module_at(module, &inline, at);
            base.pop();
            (base, at + "super::".len())
        };
        while code[j..].starts_with("super::") {
            base.pop();
            j += "super::".len();
        }
        let mut members = Vec::new();
        collect(code, j, &base, &mut members);
        for (target, end) in members {
            let line = code[..end.min(code.len())].matches('\n').count() + 1;
            found.push(Named { line, target, end });
        }
    }
    found
}

/// The next `crate::` or `super::` at or after `from` that starts a path (not `x::crate::`).
fn next_start(code: &str, from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        let c = code[i..].find("crate::").map(|k| k + i);
        let s = code[i..].find("super::").map(|k| k + i);
        let at = match (c, s) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        let before = code[..at].chars().next_back();
        if before.is_some_and(is_ident) || code[..at].ends_with("::") {
            i = at + 1;
            continue;
        }
        return Some(at);
    }
}

/// The module paths of the path (or group) starting at `j`, each with where it ends.
fn collect(code: &str, j: usize, base: &[String], out: &mut Vec<(Vec<String>, usize)>) {
    let mut path = base.to_vec();
    let mut k = j;
    loop {
        let rest = &code[k..];
        let trimmed = rest.trim_start();
        k += rest.len() - trimmed.len();
        if trimmed.starts_with('{') {
            // A group: each member, split at top-level commas.
            let mut depth = 0;
            let mut member = k + 1;
            for (off, ch) in code[k..].char_indices() {
                let m = k + off;
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            if !code[member..m].trim().is_empty() {
                                collect(&code[..m], member, &path, out);
                            }
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        if !code[member..m].trim().is_empty() {
                            collect(&code[..m], member, &path, out);
                        }
                        member = m + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let ident: String = trimmed.chars().take_while(|&c| is_ident(c)).collect();
        k += ident.len();
        if ident.is_empty() || ident == "self" {
            out.push((path, k));
            return;
        }
        path.push(ident);
        let after = &code[k..];
        let after_trim = after.trim_start();
        if after_trim.starts_with("::") {
            k += after.len() - after_trim.len() + 2;
        } else {
            out.push((path, k));
            return;
        }
    }
}

/// The file a module path names: the longest prefix that is a module of the crate.
fn file_of<'a>(target: &[String], modules: &'a HashMap<Vec<String>, usize>) -> Option<&'a usize> {
    (1..=target.len()).rev().find_map(|n| modules.get(&target[..n]))
}

/// The names by which a file's code calls modules it brought in with `use`
/// (`use crate::store::{self, agents::{self as agents_store}}` names `store` and `agents_store`),
/// so `agents_store::by_id(…)` is seen as a path too.
fn module_aliases(
    code: &str,
    named: &[Named],
    modules: &HashMap<Vec<String>, usize>,
) -> HashMap<String, Vec<String>> {
    let mut aliases = HashMap::new();
    for n in named {
        if !modules.contains_key(&n.target) {
            continue;
        }
        let after = code[n.end..].trim_start();
        let name = match after.strip_prefix("as ") {
            Some(renamed) => renamed.trim_start().chars().take_while(|&c| is_ident(c)).collect(),
            None => n.target.last().cloned().unwrap_or_default(),
        };
        aliases.insert(name, n.target.clone());
    }
    aliases
}

#[test]
fn imports_follow_the_map_and_no_circle_spans_two_folders() {
    let table = table();
    let src = root().join("src");
    let files: Vec<PathBuf> = sources(&src);
    let sources: Vec<Source> = files.iter().map(|p| source(&src, p)).collect();
    let modules: HashMap<Vec<String>, usize> = sources
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.module.is_empty())
        .map(|(i, s)| (s.module.clone(), i))
        .collect();
    let mut faults = String::new();

    // The table: every part exists, every part is listed, and each imports only parts below it.
    let parts: BTreeSet<Part> = sources.iter().filter_map(|s| s.part.clone()).collect();
    for part in &parts {
        if !table.allowed.contains_key(part) {
            let _ = writeln!(faults, "{MAP}: src/{part} is not in the table of allowed imports");
        }
    }
    for (place, part) in table.order.iter().enumerate() {
        if !parts.contains(part) {
            let _ = writeln!(faults, "{MAP}: the table lists {part}, which src/ does not hold");
        }
        for allowed in &table.allowed[part] {
            match table.order.iter().position(|p| p == allowed) {
                None => {
                    let _ =
                        writeln!(faults, "{MAP}: {part} may import {allowed}, which the table does not list");
                }
                Some(p) if p <= place => {
                    let _ = writeln!(
                        faults,
                        "{MAP}: {part} may import {allowed}, which is not below it: arrows point down only"
                    );
                }
                Some(_) => {}
            }
        }
    }

    // Every path: from its file's part to one the table allows.
    let mut edges: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); sources.len()];
    let mut reported = BTreeSet::new();
    for (i, (path, s)) in files.iter().zip(&sources).enumerate() {
        let text = std::fs::read_to_string(path).expect("a source file reads");
        let code = code_of(&text);
        let named = named_paths(&code, &s.module);
        let aliases = module_aliases(&code, &named, &modules);
        let mut targets: Vec<(usize, Vec<String>)> = named.into_iter().map(|n| (n.line, n.target)).collect();
        // Paths through a module's name brought in by `use`: `agents::by_id(…)`.
        for (alias, module) in &aliases {
            let mut from = 0;
            while let Some(k) = code[from..].find(&format!("{alias}::")).map(|k| k + from) {
                from = k + 1;
                let before = code[..k].chars().next_back();
                if before.is_some_and(is_ident) || code[..k].ends_with("::") {
                    continue;
                }
                let mut inner = Vec::new();
                collect(&code, k + alias.len() + 2, module, &mut inner);
                let line = code[..k].matches('\n').count() + 1;
                targets.extend(inner.into_iter().map(|(target, _)| (line, target)));
            }
        }
        for (line, target) in targets {
            let Some(first) = target.first() else { continue };
            if let Some(&j) = file_of(&target, &modules)
                && j != i
            {
                edges[i].insert(j);
            }
            let Some(from) = &s.part else { continue };
            let to =
                match sources.iter().find(|t| t.module.first() == Some(first)).and_then(|t| t.part.clone()) {
                    Some(to) => to,
                    // A name the root re-exports (`crate::Result`): the roots may be named by all.
                    None => continue,
                };
            if &to == from {
                continue;
            }
            let allowed = table.allowed.get(from).cloned().unwrap_or_default();
            if !allowed.contains(&to) {
                let may = if allowed.is_empty() {
                    "nothing of the crate".to_owned()
                } else {
                    allowed.iter().cloned().collect::<Vec<_>>().join(", ")
                };
                let place = format!("src/{}:{line}", s.rel);
                if reported.insert((place.clone(), to.clone())) {
                    let _ = writeln!(
                        faults,
                        "{place}: `crate::{}`: {from} may not import {to} (it may import {may})",
                        target.join("::")
                    );
                }
            }
        }
    }

    // Circles: files that import each other, in more than one folder.
    for circle in strongly_connected(&edges) {
        let folders: BTreeSet<&str> = circle.iter().map(|&f| sources[f].folder.as_str()).collect();
        if folders.len() > 1 {
            let names: Vec<String> = circle.iter().map(|&f| format!("src/{}", sources[f].rel)).collect();
            let _ = writeln!(faults, "a circle of files spans folders {folders:?}: {}", names.join(", "));
        }
    }

    assert!(faults.is_empty(), "the code and {MAP} disagree:\n{faults}");
}

/// The strongly connected components with more than one file (Tarjan's algorithm).
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn the_reader_sees_paths_as_the_compiler_does() {
    let module: Vec<String> = vec!["service".into(), "agents".into()];
    let code = code_of(
        "use super::{App, endpoints::{self, views}};\n// crate::http::x in a comment\nlet s = \"crate::http\";\n\
         #[schemars(with = \"super::fields::Email\")]\nfn f<'a>(c: char) { if c == '\"' { crate::store::agents::by_id(); } }\n",
    );
    let named: BTreeMap<String, Vec<String>> =
        named_paths(&code, &module).into_iter().map(|n| (n.target.join("::"), n.target)).collect();
    let found: Vec<&String> = named.keys().collect();
    assert_eq!(
        found,
        [
            "service::App",
            "service::endpoints",
            "service::endpoints::views",
            "service::fields::Email",
            "store::agents::by_id"
        ]
        .iter()
        .collect::<Vec<_>>()
    );
}
