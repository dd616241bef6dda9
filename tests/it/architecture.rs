//! Keeps the walls of DESIGN.md section 2 standing: rusqlite, r2d2 and SQL live only in
//! `src/store/` (and migrations in `schema/`); the top-level modules import each other down
//! the layer table (`LAYERS`) and in no cycle; and each top-level module keeps the wall its
//! header states (`//! Must not import: ...`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn outside_store() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    rust_files(&root.join("src"), &mut files);
    files
        .into_iter()
        .filter(|p| !p.starts_with(root.join("src/store")))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read source");
            (p, text)
        })
        .collect()
}

#[test]
fn database_crates_are_used_only_inside_the_store() {
    let offenders: Vec<_> = outside_store()
        .into_iter()
        // In code, not in a header that names the crate as a wall.
        .filter(|(_, text)| {
            let code = code_only(text);
            ["rusqlite", "r2d2"].iter().any(|c| code.contains(c))
        })
        .map(|(p, _)| p)
        .collect();
    assert!(
        offenders.is_empty(),
        "database crates outside src/store: {offenders:?}"
    );
}

#[test]
fn sql_statements_are_written_only_inside_the_store() {
    let sql = [
        "SELECT ",
        "INSERT INTO",
        "UPDATE ",
        "DELETE FROM",
        "CREATE TABLE",
        "PRAGMA ",
        "BEGIN IMMEDIATE",
    ];
    let offenders: Vec<_> = outside_store()
        .into_iter()
        .filter_map(|(p, text)| {
            let hits: Vec<&str> = sql.iter().copied().filter(|s| text.contains(s)).collect();
            (!hits.is_empty()).then_some((p, hits))
        })
        .collect();
    assert!(offenders.is_empty(), "SQL outside src/store: {offenders:?}");
}

#[test]
fn every_module_says_what_it_owns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    rust_files(&root.join("src"), &mut files);
    let silent: Vec<_> = files
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .collect();
    assert!(
        silent.is_empty(),
        "modules without a //! header: {silent:?}"
    );
}

/// The layers of DESIGN.md section 2, top first, each with its top-level modules (the binary's
/// `main`, `cli` and `console` first). An arrow may point down, or sideways within a layer;
/// never up, and never round a cycle.
const LAYERS: &[(&str, &[&str])] = &[
    ("binary", &["main", "cli", "console"]),
    ("composition root", &["app"]),
    // `wire`: the JSON shapes of the CLI and the API, for those two only.
    ("adapters", &["http", "wire"]),
    ("use cases", &["ops"]),
    (
        "services",
        &[
            "scan", "walks", "queue", "trash", "thumbs", "faces", "similar", "people", "watch",
            "config", "metrics",
        ],
    ),
    ("store", &["store"]),
    ("extractors", &["media"]),
    (
        "platform",
        // `locate`: which file of an asset may be read; pure over paths, below every reader.
        &[
            "clock",
            "disk",
            "host",
            "instance",
            "locate",
            "logfile",
            "mapped",
            "memory",
            "once_file",
            "token",
        ],
    ),
    ("plain types", &["model"]),
];

/// The text of a Rust file without its comments, string and char literals (each one space),
/// so that a path in a doc comment or a message is no reference.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let skip = if rest.starts_with("//") {
            Some(rest.find('\n').unwrap_or(rest.len()))
        } else if rest.starts_with("/*") {
            Some(rest.find("*/").map_or(rest.len(), |e| e + 2))
        } else if rest.starts_with('"') {
            Some(quoted(rest))
        } else {
            raw_string(rest).or_else(|| char_literal(rest))
        };
        match skip {
            Some(len) => {
                out.push(' ');
                i += len;
            }
            None => {
                let c = rest.chars().next().unwrap();
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// The length of the string literal starting `rest` (at its `"`).
fn quoted(rest: &str) -> usize {
    let b = rest.as_bytes();
    let mut i = 1;
    while i < b.len() && b[i] != b'"' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(b.len())
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`) starting `rest`.
fn raw_string(rest: &str) -> Option<usize> {
    let after_r = rest.strip_prefix('r')?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = after_r[hashes..].strip_prefix('"')?;
    let end = format!("\"{}", "#".repeat(hashes));
    Some(2 + hashes + body.find(&end)? + end.len())
}

/// The length of a char literal (`'a'`, `'\n'`, `'\u{e9}'`) starting `rest`; `None` for a
/// lifetime or a label.
fn char_literal(rest: &str) -> Option<usize> {
    let body = rest.strip_prefix('\'')?;
    let len = if body.starts_with('\\') {
        body.find('\'')?
    } else {
        body.chars().next()?.len_utf8()
    };
    body[len..].starts_with('\'').then_some(len + 2)
}

/// A source file of src/ (not the crate root): its top-level module, its depth below the
/// root, its code without comments and literals, and its `//!` header.
struct Source {
    module: String,
    depth: usize,
    code: String,
    header: Vec<String>,
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    rust_files(&root, &mut files);
    files.sort();
    let mut out = vec![];
    for path in files {
        let parts: Vec<String> = path
            .strip_prefix(&root)
            .unwrap()
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts == ["lib"] {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        out.push(Source {
            module: parts[0].clone(),
            depth: parts.len() - usize::from(parts.len() > 1 && parts[parts.len() - 1] == "mod"),
            header: text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .map(str::to_string)
                .collect(),
            code: code_only(&text),
        });
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths below the crate root that `code` names after `root` (`crate::`, the binary's
/// `mediadex::`, or as many `super::` as the file is deep): `a::b` for `crate::a::b`, and
/// each item of a `use crate::{a::b, c}` group.
fn rooted_paths(code: &str, root: &str) -> Vec<String> {
    let mut found = vec![];
    for (at, _) in code.match_indices(root) {
        let before = &code[..at];
        if before.ends_with(is_ident) || before.ends_with("::") {
            continue;
        }
        let rest = code[at + root.len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let end = group
                .find(|c| {
                    depth += i32::from(c == '{') - i32::from(c == '}');
                    depth < 0
                })
                .unwrap_or(group.len());
            let mut item = String::new();
            depth = 0;
            for c in group[..end].chars().chain(std::iter::once(',')) {
                depth += i32::from(c == '{') - i32::from(c == '}');
                if c == ',' && depth == 0 {
                    found.push(path_head(&item));
                    item.clear();
                } else {
                    item.push(c);
                }
            }
        } else {
            found.push(path_head(rest));
        }
    }
    found.retain(|p| !p.is_empty());
    found
}

/// The leading `a::b::c` of `text`.
fn path_head(text: &str) -> String {
    let text = text.trim_start();
    let mut end = 0;
    let mut rest = text;
    loop {
        let n = rest.len() - rest.trim_start_matches(is_ident).len();
        if n == 0 {
            break;
        }
        end += n;
        rest = &rest[n..];
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(is_ident) => {
                end += 2;
                rest = r;
            }
            _ => break,
        }
    }
    text[..end].to_string()
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
}

/// Every library path each top-level module names, keyed by module.
fn named_paths() -> BTreeMap<String, BTreeSet<String>> {
    let mut named: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in sources() {
        let mut roots = vec!["crate::".to_string()];
        if layer_of(&s.module) == Some(0) {
            roots.push("mediadex::".into());
        } else if s.depth > 0 {
            roots.push("super::".repeat(s.depth));
        }
        let entry = named.entry(s.module.clone()).or_default();
        for root in &roots {
            entry.extend(rooted_paths(&s.code, root));
        }
    }
    named
}

/// The top-level module graph: `a -> b` when a file of `a` names something of `b`.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    named_paths()
        .into_iter()
        .map(|(module, paths)| {
            let deps = paths
                .iter()
                .map(|p| p.split("::").next().unwrap_or("").to_string())
                .filter(|d| *d != module && layer_of(d).is_some())
                .collect();
            (module, deps)
        })
        .collect()
}

fn graph_text(graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    graph
        .iter()
        .map(|(m, deps)| {
            format!(
                "{m} -> {}",
                deps.iter().cloned().collect::<Vec<_>>().join(" ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A cycle through `graph`'s edges (less `allowed`), as `a -> b -> a`, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    fn visit<'g>(
        at: &'g str,
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'g str>,
        done: &mut BTreeSet<&'g str>,
    ) -> Option<String> {
        if let Some(i) = path.iter().position(|p| *p == at) {
            let mut cycle = path[i..].to_vec();
            cycle.push(at);
            return Some(cycle.join(" -> "));
        }
        if !done.insert(at) {
            return None;
        }
        path.push(at);
        for next in graph.get(at).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut vec![], &mut done))
}

#[test]
fn the_reference_reader_skips_comments_and_literals_and_reads_groups() {
    let code = code_only(
        "//! see crate::http\nuse crate::{model::{A, B}, store::Store};\n\
         let s = \"crate::app\"; let c = '\"'; /* crate::ops */ super::super::walks::x();\n\
         fn f<'a>(x: &'a str) { crate::scan::walk::stamp(x) }",
    );
    let mut paths = rooted_paths(&code, "crate::");
    paths.extend(rooted_paths(&code, "super::super::"));
    assert_eq!(
        paths,
        ["model", "store::Store", "scan::walk::stamp", "walks::x"]
    );
}

#[test]
fn the_top_level_modules_import_each_other_in_no_cycle() {
    let graph = module_graph();
    assert_eq!(
        find_cycle(&graph),
        None,
        "the module graph:\n{}",
        graph_text(&graph)
    );
}

#[test]
fn every_arrow_points_down_the_layer_table() {
    let graph = module_graph();
    let mut wrong = vec![];
    for (module, deps) in &graph {
        let Some(from) = layer_of(module) else {
            wrong.push(format!("{module} is in no layer of LAYERS"));
            continue;
        };
        for dep in deps {
            let to = layer_of(dep).unwrap();
            if to < from {
                wrong.push(format!(
                    "{module} ({}) -> {dep} ({})",
                    LAYERS[from].0, LAYERS[to].0
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "arrows up the layers:\n{}\nthe module graph:\n{}",
        wrong.join("\n"),
        graph_text(&graph)
    );
}

/// The line of a top-level module's header that states its wall, machine-checked:
/// `//! Must not import: http, store::writer, rusqlite` (modules of the crate, paths in
/// them, or crates).
const WALL: &str = "//! Must not import:";

fn is_dependency(name: &str) -> bool {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let text = std::fs::read_to_string(manifest).unwrap();
    text.lines().any(|l| {
        l.strip_prefix(name)
            .is_some_and(|r| r.trim_start().starts_with(['=', '.']))
    })
}

/// The walls each top-level module's header states.
fn walls() -> BTreeMap<String, Vec<String>> {
    sources()
        .into_iter()
        .filter(|s| s.depth == 1)
        .map(|s| {
            let items = s
                .header
                .iter()
                .find_map(|l| l.strip_prefix(WALL))
                .map(|list| list.split(',').map(|i| i.trim().to_string()).collect())
                .unwrap_or_default();
            (s.module, items)
        })
        .collect()
}

#[test]
fn every_module_header_states_its_wall_and_keeps_it() {
    let named = named_paths();
    let mut crates_named: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut broken = vec![];
    for (module, items) in walls() {
        if items.is_empty() {
            broken.push(format!("{module}: no `{WALL} ...` line in its header"));
        }
        for item in items {
            let head = item.split("::").next().unwrap_or("");
            if layer_of(head).is_some() {
                let hits: Vec<_> = named[&module]
                    .iter()
                    .filter(|p| **p == item || p.starts_with(&format!("{item}::")))
                    .collect();
                if !hits.is_empty() {
                    broken.push(format!("{module} must not import {item}, names {hits:?}"));
                }
            } else if is_dependency(&item) {
                let uses = crates_named.entry(module.clone()).or_insert_with(|| {
                    sources()
                        .iter()
                        .filter(|s| s.module == module)
                        .flat_map(|s| {
                            let mut c = s.code.clone();
                            c.insert(0, ' ');
                            c.split(|ch: char| !(is_ident(ch) || ch == ':'))
                                .filter_map(|w| w.split_once("::").map(|(c, _)| c.to_string()))
                                .collect::<Vec<_>>()
                        })
                        .collect()
                });
                if uses.contains(&item) {
                    broken.push(format!("{module} must not use the crate {item}, and does"));
                }
            } else {
                broken.push(format!(
                    "{module}: `{item}` is no module of src/ nor a dependency"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "broken walls:\n{}", broken.join("\n"));
}

/// The store's modules as `src/store/mod.rs`'s header sorts them: `Families:`,
/// `Compositions:` and `Helpers:`, each a comma-separated list ending at a full stop.
fn store_roles() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/mod.rs");
    let text = std::fs::read_to_string(root).expect("read store/mod.rs");
    let header: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim())
        .collect();
    let header = header.join(" ");
    let mut roles = BTreeMap::new();
    for role in ["Families", "Compositions", "Helpers"] {
        let at = header.find(&format!("{role}:")).unwrap_or_else(|| {
            panic!("store/mod.rs's header has no `{role}:` list");
        });
        let list = &header[at + role.len() + 1..];
        let list = &list[..list.find('.').unwrap_or(list.len())];
        for module in list.split(',').map(str::trim).filter(|m| !m.is_empty()) {
            let before = roles.insert(module.to_string(), role.to_string());
            assert_eq!(
                before, None,
                "{module} is listed twice in store/mod.rs's header"
            );
        }
    }
    roles
}

/// Each module of `src/store/` (not `mod.rs`) with the store modules its code names before
/// its tests (`super::x`, `crate::store::x`, or a macro another module defines): a test
/// may set a scene through several families; the code it tests may not.
fn store_graph() -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let mut code = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("read src/store") {
        let path = entry.expect("dir entry").path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.extension().is_some_and(|e| e == "rs") && name != "mod" {
            let text = std::fs::read_to_string(&path).expect("read store module");
            let end = text.find("#[cfg(test)]").unwrap_or(text.len());
            code.insert(name, code_only(&text[..end]));
        }
    }
    let mut macros: BTreeMap<String, String> = BTreeMap::new();
    for (module, text) in &code {
        for (at, _) in text.match_indices("macro_rules!") {
            let name = path_head(&text[at + "macro_rules!".len()..]);
            macros.insert(name, module.clone());
        }
    }
    let mut graph = BTreeMap::new();
    for (module, text) in &code {
        let mut deps = BTreeSet::new();
        for root in ["super::", "crate::store::"] {
            for path in rooted_paths(text, root) {
                let head = path.split("::").next().unwrap_or("").to_string();
                if head != *module && code.contains_key(&head) {
                    deps.insert(head);
                }
            }
        }
        for (name, home) in &macros {
            let used = text
                .match_indices(&format!("{name}!"))
                .any(|(at, _)| !text[..at].ends_with(is_ident));
            if home != module && used {
                deps.insert(home.clone());
            }
        }
        graph.insert(module.clone(), deps);
    }
    graph
}

#[test]
fn the_store_families_call_only_helpers_and_the_store_has_no_cycle() {
    let graph = store_graph();
    let roles = store_roles();
    let unsorted: Vec<_> = graph.keys().filter(|m| !roles.contains_key(*m)).collect();
    let gone: Vec<_> = roles.keys().filter(|m| !graph.contains_key(*m)).collect();
    assert!(
        unsorted.is_empty() && gone.is_empty(),
        "store/mod.rs's header must sort every store module once: not sorted {unsorted:?}, \
         no such module {gone:?}"
    );
    let family = |m: &str| roles.get(m).is_some_and(|r| r == "Families");
    let helper = |m: &str| roles.get(m).is_some_and(|r| r == "Helpers");
    let mut crossings = vec![];
    for (module, deps) in graph.iter().filter(|(m, _)| family(m)) {
        for dep in deps.iter().filter(|d| !helper(d)) {
            crossings.push(format!("{module} -> {dep}"));
        }
    }
    let cycle = find_cycle(&graph);
    assert!(
        crossings.is_empty() && cycle.is_none(),
        "store families that call another family or a composition (move the operation into \
         a composition, or the shared code into a helper):\n{}\na cycle: {cycle:?}\n\
         the store's module graph:\n{}",
        crossings.join("\n"),
        graph_text(&graph)
    );
}

/// The tables the schema creates.
fn schema_tables() -> BTreeSet<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    let mut tables = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("read schema/") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_none_or(|e| e != "sql") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read migration");
        let words = sql_words(&text);
        for w in words.windows(3) {
            if w[0] == "create" && w[1] == "table" {
                tables.insert(w[2].clone());
            }
        }
    }
    tables
}

/// The identifiers of a text, lower-cased, in order (`IF NOT EXISTS` dropped).
fn sql_words(text: &str) -> Vec<String> {
    let words = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase);
    let mut out: Vec<String> = vec![];
    for w in words {
        if matches!(w.as_str(), "if" | "not" | "exists") && out.last().is_some_and(|l| l == "table")
        {
            continue;
        }
        out.push(w);
    }
    out
}

/// The string literals of a piece of Rust, joined, with each `name!(` of a store macro
/// replaced by that macro's own literals (its SQL).
fn literals(code: &str, macros: &BTreeMap<String, String>, depth: u32) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find(['"', '!']) {
        if rest[at..].starts_with('"') {
            let end = rest[at + 1..].find('"').map_or(rest.len(), |e| at + 1 + e);
            out.push(' ');
            out.push_str(&rest[at + 1..end.min(rest.len())]);
            rest = &rest[(end + 1).min(rest.len())..];
        } else {
            let name: String = rest[..at]
                .chars()
                .rev()
                .take_while(|c| is_ident(*c))
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if depth < 4
                && let Some(body) = macros.get(&name)
            {
                out.push(' ');
                out.push_str(&literals(body, macros, depth + 1));
            }
            rest = &rest[at + 1..];
        }
    }
    out
}

/// Every `macro_rules!` of the store, by name, with its body.
fn store_macros() -> BTreeMap<String, String> {
    let mut files = vec![];
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store"),
        &mut files,
    );
    let mut macros = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("read");
        for (at, _) in text.match_indices("macro_rules!") {
            let body = &text[at..];
            let end = body.find("\n}\n").unwrap_or(body.len());
            let name = path_head(&body["macro_rules!".len()..]);
            macros.insert(name, body[..end].to_string());
        }
    }
    macros
}

/// A composition's statements span tables (issue 30: each engine's SQL for a table sits in
/// its family). A statement is a `const` whose SQL starts with SELECT, WITH, INSERT, UPDATE
/// or DELETE; a fragment spliced into another (a name, a bracketed subquery) is not one.
#[test]
fn a_composition_holds_only_statements_that_span_tables() {
    let (tables, macros, roles) = (schema_tables(), store_macros(), store_roles());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let mut single = vec![];
    for (module, _) in roles.iter().filter(|(_, r)| *r == "Compositions") {
        let text = std::fs::read_to_string(dir.join(format!("{module}.rs"))).expect("read");
        let text = &text[..text.find("#[cfg(test)]").unwrap_or(text.len())];
        for (at, _) in text.match_indices("const ") {
            let decl = &text[at + "const ".len()..];
            let name = path_head(decl);
            if !decl[name.len()..].starts_with(": &str =") {
                continue;
            }
            let end = decl.find(";\n").unwrap_or(decl.len());
            let sql = literals(&decl[name.len()..end], &macros, 0);
            // A fragment in brackets is spliced into another's statement.
            if sql.trim_start().starts_with('(') {
                continue;
            }
            let words = sql_words(&sql);
            let verb = ["select", "with", "insert", "update", "delete"];
            if !words.first().is_some_and(|w| verb.contains(&w.as_str())) {
                continue;
            }
            let named: BTreeSet<&String> = words
                .windows(2)
                .filter(|w| matches!(w[0].as_str(), "from" | "join" | "into" | "update"))
                .map(|w| &w[1])
                .filter(|t| tables.contains(*t))
                .collect();
            if named.len() < 2 {
                single.push(format!("{module}::{name} {named:?}"));
            }
        }
    }
    assert!(
        single.is_empty(),
        "statements of one table in a composition (move each into its table's family):\n{}",
        single.join("\n")
    );
}
