//! Keeps the reference in `docs/` true to the code, both ways: every command and long flag
//! clap knows (asked of the built binary's `--help`, since the CLI lives binary-side) is in
//! docs/cli.md's synopsis and nothing documented there is unknown to clap; every route the
//! router declares is in docs/api.md's route table and vice versa; every `MEDIADEX_*`
//! variable src reads is in docs/environment.md's table and vice versa.

use crate::support::help::{help, subcommands};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// The lines of one `## heading` section of a markdown file (up to the next `## `).
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| l.trim() != heading);
    assert!(lines.next().is_some(), "no section {heading:?}");
    lines.take_while(|l| !l.starts_with("## ")).collect()
}

/// The text inside backticks on `line`.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// The long flags named in `text` (`--name`).
fn long_flags(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let name: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.insert(format!("--{name}"));
        }
        rest = &rest[at + 2 + name.len()..];
    }
    out
}

/// A source file without the unit tests at its end (their routers and variables are no
/// part of the product).
fn without_unit_tests(text: &str) -> &str {
    text.split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default()
}

// ---- the command line ---------------------------------------------------------------------

/// The long flags under a help text's `Options:` heading, without the ones clap adds.
fn options(help: &str) -> BTreeSet<String> {
    let listed: String = help
        .lines()
        .skip_while(|l| l.trim() != "Options:")
        .skip(1)
        // A long help puts each description on its own line and a blank line between
        // options: the list ends at the next heading, not at a blank line.
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .map(|l| l.trim_start())
        .filter(|l| l.starts_with('-'))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n");
    let mut flags = long_flags(&listed);
    flags.remove("--help");
    flags.remove("--version");
    flags
}

/// A command as clap knows it.
#[derive(Debug)]
struct Known {
    flags: BTreeSet<String>,
    /// It only groups subcommands (`library`, `faces`): nothing runs it on its own.
    group: bool,
}

type Commands = BTreeMap<Vec<String>, Known>;

/// Every command clap knows (`[]` is the top level, `["library", "add"]` a subcommand),
/// with its long flags.
fn clap_commands() -> Commands {
    let mut found = BTreeMap::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let text = help(&path);
        let subs = subcommands(&text);
        let group = !path.is_empty() && !subs.is_empty();
        for sub in subs {
            let mut next = path.clone();
            next.push(sub);
            todo.push(next);
        }
        let flags = options(&text);
        found.insert(path, Known { flags, group });
    }
    found
}

/// docs/cli.md's synopsis: each line of its first code block that starts a command.
fn synopsis() -> Vec<String> {
    let text = read("docs/cli.md");
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    assert!(!block.is_empty(), "docs/cli.md has no synopsis block");
    block
        .into_iter()
        .filter(|l| l.starts_with("mediadex"))
        .map(str::to_string)
        .collect()
}

/// The command a synopsis line documents: the longest run of its words that is a command
/// clap knows (words like `LIBRARY`, `[--json]` or `content-hash|faces` end it).
fn documented_path(line: &str, known: &Commands) -> Option<Vec<String>> {
    let mut path = Vec::new();
    for word in line.split_whitespace().skip(1) {
        let mut next = path.clone();
        next.push(word.to_string());
        if !known.contains_key(&next) {
            break;
        }
        path = next;
    }
    let first = line.split_whitespace().nth(1).unwrap_or("");
    let names_a_command = first.is_empty() || first.starts_with('[') || !path.is_empty();
    names_a_command.then_some(path)
}

/// The flags docs/cli.md gives each command, from the part of its lines before the
/// description column (two spaces or more).
fn documented_commands(
    known: &Commands,
    lines: &[String],
) -> Result<BTreeMap<Vec<String>, BTreeSet<String>>, String> {
    let mut documented: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for line in lines {
        let usage = line.split("  ").next().unwrap_or_default();
        let path = documented_path(usage, known)
            .ok_or_else(|| format!("docs/cli.md documents a command clap lacks: {line:?}"))?;
        documented
            .entry(path)
            .or_default()
            .extend(long_flags(usage));
    }
    Ok(documented)
}

/// What differs between clap and the synopsis `lines`, one line per difference.
fn cli_drift(known: &Commands, lines: &[String]) -> Vec<String> {
    let documented = match documented_commands(known, lines) {
        Ok(d) => d,
        Err(e) => return vec![e],
    };
    let mut drift = Vec::new();
    for (path, Known { flags, group }) in known {
        if *group {
            continue;
        }
        let name = format!("mediadex {}", path.join(" "));
        let name = name.trim_end();
        let Some(doc) = documented.get(path) else {
            drift.push(format!("`{name}` is not in docs/cli.md"));
            continue;
        };
        // `--data`, `--database` and `--config` are global: documented once, on the top line.
        let mut wanted = flags.clone();
        if !path.is_empty() {
            wanted.remove("--data");
            wanted.remove("--database");
            wanted.remove("--config");
        }
        for missing in wanted.difference(doc) {
            drift.push(format!("`{name}` lacks {missing} in docs/cli.md"));
        }
        for extra in doc.difference(&wanted) {
            drift.push(format!("`{name}` {extra} is in docs/cli.md, not in clap"));
        }
    }
    drift
}

#[test]
fn every_command_and_flag_of_clap_is_in_docs_cli_md_and_nothing_else_is() {
    let known = clap_commands();
    // The parse of the help text found the commands at all (a clap upgrade that changed its
    // layout must fail here, not pass with nothing compared).
    for path in [
        &["library", "add"][..],
        &["faces", "redetect"],
        &["scan"],
        &["serve"],
    ] {
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        assert!(
            known.contains_key(&path),
            "clap's help lost {path:?}: {known:?}"
        );
    }
    assert!(known[&vec!["scan".to_string()]].flags.contains("--cancel"));
    let drift = cli_drift(&known, &synopsis());
    assert!(
        drift.is_empty(),
        "docs/cli.md and clap differ:\n{}",
        drift.join("\n")
    );
}

#[test]
fn the_cli_check_sees_a_flag_or_a_command_the_docs_lack_or_invent() {
    let known = clap_commands();
    let edited = |edit: &dyn Fn(&str) -> String, add: &str| -> Vec<String> {
        let mut lines: Vec<String> = synopsis().iter().map(|l| edit(l)).collect();
        lines.extend((!add.is_empty()).then(|| add.to_string()));
        cli_drift(&known, &lines)
    };
    let no_wait = edited(
        &|l| {
            if l.starts_with("mediadex walk") {
                l.replace(" [--wait]", "")
            } else {
                l.into()
            }
        },
        "",
    );
    assert_eq!(no_wait, ["`mediadex walk` lacks --wait in docs/cli.md"]);
    let bogus = edited(
        &|l| {
            l.replacen(
                "mediadex status [--json]",
                "mediadex status [--json] [--bogus]",
                1,
            )
        },
        "",
    );
    assert_eq!(
        bogus,
        ["`mediadex status` --bogus is in docs/cli.md, not in clap"]
    );
    let invented = edited(&|l| l.to_string(), "mediadex frobnicate [--json]");
    assert_eq!(invented.len(), 1, "{invented:?}");
    assert!(
        invented[0].contains("documents a command clap lacks"),
        "{invented:?}"
    );
    let no_token = edited(
        &|l| {
            if l.starts_with("mediadex token") {
                "mediadex [--data DIR]".into()
            } else {
                l.into()
            }
        },
        "",
    );
    assert_eq!(no_token, ["`mediadex token` is not in docs/cli.md"]);
}

// ---- the HTTP API ---------------------------------------------------------------------------

const METHODS: [&str; 5] = ["get", "post", "put", "delete", "patch"];

/// The argument text of each `.route(` call in `source` (parentheses balanced; strings and
/// comments in it are not expected).
fn route_calls(source: &str) -> Vec<&str> {
    let mut calls = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find(".route(") {
        let args = &rest[at + ".route(".len()..];
        let mut depth = 1;
        let end = args
            .char_indices()
            .find_map(|(i, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                (depth == 0).then_some(i)
            })
            .unwrap_or(args.len());
        calls.push(&args[..end]);
        rest = &args[end..];
    }
    calls
}

/// `(METHOD, path)` of one `.route("path", get(a).post(b))` argument list.
fn routes_of_call(call: &str) -> Vec<(String, String)> {
    let Some(path) = call.split('"').nth(1) else {
        return Vec::new();
    };
    let handlers = call.split_once(',').map(|(_, h)| h).unwrap_or_default();
    let mut out = Vec::new();
    for token in handlers.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '(')) {
        let name = token.split('(').next().unwrap_or_default();
        if token.contains('(') && METHODS.contains(&name) {
            out.push((name.to_uppercase(), path.to_string()));
        }
    }
    out
}

/// Every route the router source under src/http (and its sub-folders) declares.
fn router_routes() -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    rust_files(&repo("src/http"), &mut files);
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("read source"))
        .flat_map(|text| {
            let code = without_unit_tests(&text);
            route_calls(code)
                .into_iter()
                .flat_map(routes_of_call)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The `METHOD /path` spans of the route table in docs/api.md (its first column).
fn documented_routes(text: &str) -> BTreeSet<(String, String)> {
    section(text, "## Routes")
        .into_iter()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(code_spans)
        .filter_map(|span| {
            let (method, path) = span.split_once(' ')?;
            let method = method.to_lowercase();
            METHODS.contains(&method.as_str()).then_some(())?;
            let path = path.split(['?', ' ']).next()?;
            Some((method.to_uppercase(), path.to_string()))
        })
        .collect()
}

fn differences(code: &BTreeSet<(String, String)>, doc: &BTreeSet<(String, String)>) -> Vec<String> {
    let mut drift: Vec<String> = code
        .difference(doc)
        .map(|(m, p)| format!("{m} {p} is routed but not in docs/api.md"))
        .collect();
    drift.extend(
        doc.difference(code)
            .map(|(m, p)| format!("{m} {p} is in docs/api.md but not routed")),
    );
    drift
}

#[test]
fn every_route_of_the_router_is_in_docs_api_md_and_nothing_else_is() {
    let code = router_routes();
    // The source parse found the router at all, multi-line calls and chained methods too.
    for (m, p) in [
        ("GET", "/healthz"),
        ("POST", "/api/libraries"),
        ("DELETE", "/api/libraries/{id}"),
        ("POST", "/api/walks/{kind}/release"),
    ] {
        assert!(
            code.contains(&(m.into(), p.into())),
            "{m} {p} not found in {code:?}"
        );
    }
    let doc = documented_routes(&read("docs/api.md"));
    let drift = differences(&code, &doc);
    assert!(
        drift.is_empty(),
        "docs/api.md and the router differ:\n{}",
        drift.join("\n")
    );
}

#[test]
fn the_route_check_sees_a_route_the_docs_lack_or_invent() {
    let code = router_routes();
    let text = read("docs/api.md");
    let lacking = documented_routes(&text.replacen("`GET /api/watch`", "", 1));
    assert!(
        differences(&code, &lacking)
            .contains(&"GET /api/watch is routed but not in docs/api.md".into())
    );
    let invented = text.replacen(
        "| `GET /healthz`",
        "| `GET /healthz`, `PUT /api/nothing`",
        1,
    );
    assert!(
        differences(&code, &documented_routes(&invented))
            .contains(&"PUT /api/nothing is in docs/api.md but not routed".into())
    );
}

// ---- the environment ------------------------------------------------------------------------

/// The `MEDIADEX_*` names in `text`.
fn env_names(text: &str) -> BTreeSet<String> {
    text.match_indices("MEDIADEX_")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| name.len() > "MEDIADEX_".len())
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The variables named in src, outside the unit tests at the end of each file (a child
/// test's variable is no setting).
fn source_env() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&repo("src"), &mut files);
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("read source"))
        .flat_map(|text| env_names(without_unit_tests(&text)))
        .collect()
}

fn documented_env(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(env_names)
        .collect()
}

#[test]
fn every_variable_src_reads_is_in_docs_environment_md_and_nothing_else_is() {
    let code = source_env();
    assert!(code.contains("MEDIADEX_LEASE_TTL_MS"), "{code:?}");
    let doc = documented_env(&read("docs/environment.md"));
    let missing: Vec<_> = code.difference(&doc).collect();
    let extra: Vec<_> = doc.difference(&code).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "read in src, not in docs/environment.md's table: {missing:?}; \
         in the table, read nowhere in src: {extra:?}"
    );
    let mut invented = read("docs/environment.md");
    invented.push_str("| `MEDIADEX_NOTHING` | nothing |\n");
    assert!(
        documented_env(&invented)
            .difference(&code)
            .any(|n| n == "MEDIADEX_NOTHING")
    );
}
