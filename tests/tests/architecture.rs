//! The module dependency order of `netproto/src` against the layer table of
//! ARCHITECTURE.md ("Who calls whom"): a module may use the modules of its own layer
//! and of lower ranks, never one of a higher rank or of another layer of the same
//! rank, so that the picture cannot drift from the code.
//!
//! Dependencies are the `crate::...` paths of each module's code (comments, doc
//! comments and `#[cfg(test)] mod tests` left out); a name the crate root re-exports
//! (`crate::Time`) counts as the module that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One row of the layer table.
#[derive(Debug)]
struct Layer {
    rank: u32,
    name: String,
    modules: Vec<String>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The rows between the `layers` markers of ARCHITECTURE.md.
fn layer_table(text: &str) -> Vec<Layer> {
    let start = text.find("<!-- layers: begin -->").expect("begin marker");
    let end = text.find("<!-- layers: end -->").expect("end marker");
    text[start..end]
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.contains("rank"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 3, "a row has rank, layer, modules: {l}");
            Layer {
                rank: cells[0].parse().expect("rank"),
                name: cells[1].to_string(),
                modules: cells[2]
                    .split(',')
                    .map(|m| m.trim().trim_matches('`').to_string())
                    .collect(),
            }
        })
        .collect()
}

/// The code of a source file without comments and without its unit tests.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segments of the paths after each `crate::` in `code`, braces included
/// (`crate::{a, b::c}` gives `a` and `b`).
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                if c == ',' && depth == 1 {
                    items.push(std::mem::take(&mut item));
                } else {
                    item.push(c);
                }
            }
            items.push(item);
            out.extend(items.iter().map(|i| first_segment(i.trim())));
        } else {
            out.push(first_segment(rest));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn first_segment(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The names the crate root re-exports (`pub use module::{A, B}`), with their module.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in code_of(lib).lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = rest.trim_end_matches(';').split_once("::") else {
            continue;
        };
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            map.insert(name.trim().to_string(), module.to_string());
        }
    }
    map
}

/// Every top-level module of `netproto/src` and the modules its code uses.
fn dependencies(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let exports = root_exports(&lib);
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in fs::read_dir(src).expect("src") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .expect("a file name")
            .to_string_lossy()
            .to_string();
        if path.is_dir() {
            files.entry(name).or_default().extend(rust_files(&path));
        } else if name != "lib" && path.extension().is_some_and(|e| e == "rs") {
            files.entry(name).or_default().push(path);
        }
    }
    let modules: BTreeSet<String> = files.keys().cloned().collect();
    files
        .iter()
        .map(|(module, paths)| {
            let mut used = BTreeSet::new();
            for path in paths {
                // A module's unit tests in a file of their own.
                if path.file_name().is_some_and(|f| f == "tests.rs") {
                    continue;
                }
                let code = code_of(&fs::read_to_string(path).expect("source"));
                for segment in crate_paths(&code) {
                    let target = if modules.contains(&segment) {
                        Some(segment)
                    } else {
                        exports.get(&segment).cloned()
                    };
                    if let Some(target) = target.filter(|t| t != module) {
                        used.insert(target);
                    }
                }
            }
            (module.clone(), used)
        })
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).expect("dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// Every use that breaks the table, as `from -> to (why)`.
fn violations(layers: &[Layer], deps: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let layer_of = |module: &str| {
        layers
            .iter()
            .find(|l| l.modules.iter().any(|m| m == module))
    };
    let mut out = Vec::new();
    for (from, used) in deps {
        let Some(a) = layer_of(from) else {
            out.push(format!("{from}: not in the layer table"));
            continue;
        };
        for to in used {
            let Some(b) = layer_of(to) else {
                continue; // reported as its own row
            };
            if a.name == b.name {
                continue;
            }
            if b.rank > a.rank {
                out.push(format!("{from} -> {to}: {} calls up to {}", a.name, b.name));
            } else if b.rank == a.rank {
                out.push(format!(
                    "{from} -> {to}: {} calls {} beside it",
                    a.name, b.name
                ));
            }
        }
    }
    for layer in layers {
        for module in &layer.modules {
            if !deps.contains_key(module) {
                out.push(format!("{module}: in the table, not in netproto/src"));
            }
        }
    }
    out
}

#[test]
fn the_modules_keep_the_layer_order_of_architecture_md() {
    let text = fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let layers = layer_table(&text);
    assert!(layers.len() >= 8, "the table has its rows: {layers:?}");
    let deps = dependencies(&repo().join("netproto/src"));
    // The scan sees the dependencies the figure draws.
    assert!(deps["transport"].contains("connection"));
    assert!(deps["channel"].contains("packet"));
    assert!(
        deps["connection"].contains("time"),
        "crate::Time counts as time"
    );
    let broken = violations(&layers, &deps);
    assert!(
        broken.is_empty(),
        "the code breaks the layer table:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_check_reports_a_use_upwards_sideways_and_an_unlisted_module() {
    let layers = layer_table(
        "<!-- layers: begin -->\n| rank | layer | modules |\n|---|---|---|\n\
         | 0 | base | `a` |\n| 1 | left | `b` |\n| 1 | right | `c` |\n<!-- layers: end -->",
    );
    let deps = |pairs: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
        pairs
            .iter()
            .map(|(m, used)| (m.to_string(), used.iter().map(|u| u.to_string()).collect()))
            .collect()
    };
    let fine = deps(&[("a", &[]), ("b", &["a"]), ("c", &["a"])]);
    assert_eq!(violations(&layers, &fine), Vec::<String>::new());
    let broken = deps(&[("a", &["b"]), ("b", &["c"]), ("c", &[]), ("d", &[])]);
    assert_eq!(
        violations(&layers, &broken),
        [
            "a -> b: base calls up to left",
            "b -> c: left calls right beside it",
            "d: not in the layer table",
        ]
    );
}

#[test]
fn crate_paths_read_plain_and_grouped_uses() {
    let code = "use crate::Time;\nuse crate::{channel::X, packet::{A, B}, MessageSet};\nlet x = crate::trace::f();";
    assert_eq!(
        crate_paths(code),
        ["Time", "channel", "packet", "MessageSet", "trace"]
    );
    assert_eq!(code_of("a // crate::x\nb"), "a \nb");
}

// ---------------------------------------------------------------------------------
// Files: no import circles.
//
// An arrow runs from a file to the file that defines what its code names: in its
// `use` declarations (not counting its re-exports, `pub use`, which hand a name on
// without using it) and in the `crate::` / `super::` / `self::` paths of its code. A
// path is followed through the modules it names; where it names an item that a
// module imports or re-exports (`super::Stream` through `stream/mod.rs`), on to the
// file that defines the item, so a re-export cannot hide a circle.

/// `code` without its `#[cfg(test)]` items (any `cfg` naming `test` and no `not`): the
/// attribute through the end of the item, its `;` or the block its first `{` opens.
fn without_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(i) = rest.find("#[cfg(") {
        let attribute = &rest[i..rest[i..].find(']').map_or(rest.len(), |j| i + j)];
        let words: Vec<&str> = attribute.split(|c: char| !is_ident_char(c)).collect();
        if !words.contains(&"test") || words.contains(&"not") {
            out.push_str(&rest[..i + 1]);
            rest = &rest[i + 1..];
            continue;
        }
        out.push_str(&rest[..i]);
        let item = &rest[i..];
        let end = match (item.find(';'), item.find('{')) {
            (Some(semi), Some(open)) if semi < open => semi + 1,
            (_, Some(open)) => {
                let mut depth = 0;
                let mut end = item.len();
                for (j, c) in item[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + j + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(semi), None) => semi + 1,
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The code of a source file without comments, the text of string literals (which may
/// hold paths: messages, generated code) and test items.
fn bare_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = code_of_lines(text).chars().collect::<Vec<_>>().into_iter();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '"' && prev != '\'' {
            let mut escaped = false;
            for d in chars.by_ref() {
                if escaped {
                    escaped = false;
                } else if d == '\\' {
                    escaped = true;
                } else if d == '"' {
                    break;
                }
            }
            out.push('"');
        }
        prev = c;
    }
    without_test_items(&out)
}

/// `text` without `//` comments (doc comments included).
fn code_of_lines(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The `use` declarations of `code`, each as its tree (`a::{b, c::d as e}`) and
/// whether it is a re-export (`pub`, of any visibility).
fn use_declarations(code: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("use ") {
        let at = from + i;
        from = at + 4;
        if code[..at].ends_with(is_ident_char) {
            continue;
        }
        let before = code[..at].trim_end();
        let public = before.ends_with("pub")
            || before.ends_with(')')
                && before[..before.rfind('(').unwrap_or(0)]
                    .trim_end()
                    .ends_with("pub");
        let Some(end) = code[at..].find(';') else {
            break;
        };
        out.push((code[at + 4..at + end].trim().to_string(), public));
        from = at + end;
    }
    out
}

/// The paths of a use tree, each with the name it binds (`None` for a glob).
fn expand_tree(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    let tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(open) = tree.find('{') else {
        let (path, alias) = match tree.split_once(" as ") {
            Some((path, alias)) => (path, Some(alias.trim().to_string())),
            None => (tree.as_str(), None),
        };
        let mut segments: Vec<String> = path.split("::").map(|s| s.trim().to_string()).collect();
        let last = segments.pop().unwrap_or_default();
        return match last.as_str() {
            "*" => vec![(segments, None)],
            // `a::{self}`: the module `a`.
            "self" => {
                let name = alias.or_else(|| segments.last().cloned());
                vec![(segments, name)]
            }
            _ => {
                let name = alias.unwrap_or_else(|| last.clone());
                segments.push(last);
                vec![(segments, Some(name))]
            }
        };
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = vec![String::new()];
    let mut depth = 0;
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(String::new());
                continue;
            }
            _ => {}
        }
        items.last_mut().expect("an item").push(c);
    }
    let mut out = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        let item = if item == "self" || item.starts_with("self ") {
            // `a::{self}` names `a`: write it as `a::self`.
            format!("{}::{item}", prefix.last().cloned().unwrap_or_default())
        } else {
            item.to_string()
        };
        let base = if item.contains("::self") {
            &prefix[..prefix.len().saturating_sub(1)]
        } else {
            &prefix[..]
        };
        for (path, name) in expand_tree(&item) {
            out.push(([base, &path].concat(), name));
        }
    }
    out
}

/// The paths in `code` that start at `crate`, `super` or `self` (`crate::a::f(..)`,
/// `super::X`), as their segments.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if code[..at].ends_with(|c: char| is_ident_char(c) || c == ':' || c == '$') {
                continue;
            }
            let mut segments = Vec::new();
            let mut rest = &code[at..];
            loop {
                let ident: String = rest.chars().take_while(|c| is_ident_char(*c)).collect();
                if ident.is_empty() {
                    break;
                }
                rest = &rest[ident.len()..];
                segments.push(ident);
                match rest.strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            out.push(segments);
        }
    }
    out
}

/// What a source file's code names.
#[derive(Debug, Default)]
struct Imports {
    /// The paths it uses, as written: `use` declarations other than re-exports, and
    /// `crate::` / `super::` / `self::` paths in its code.
    uses: Vec<Vec<String>>,
    /// Every name its `use` declarations bind (re-exports included), with its path.
    names: BTreeMap<String, Vec<String>>,
}

impl Imports {
    fn of(text: &str) -> Self {
        let code = bare_code(text);
        let mut imports = Imports::default();
        for (tree, public) in use_declarations(&code) {
            for (path, name) in expand_tree(&tree) {
                if !public {
                    imports.uses.push(path.clone());
                }
                if let Some(name) = name {
                    imports.names.insert(name, path);
                }
            }
        }
        imports.uses.extend(inline_paths(&code));
        imports
    }
}

/// The module path of a file of a crate's `src` (`a/b.rs` and `a/b/mod.rs` are `a::b`,
/// `lib.rs` the root).
fn module_of(file: &str) -> Vec<String> {
    let mut module: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(
        module.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        module.pop();
    }
    module
}

/// The modules `code` declares with `mod name;` (in a file of their own).
fn declared_modules(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("mod ") {
        let at = from + i;
        from = at + 4;
        if code[..at].ends_with(is_ident_char) {
            continue;
        }
        let rest = code[at + 4..].trim_start();
        let name: String = rest.chars().take_while(|c| is_ident_char(*c)).collect();
        if rest[name.len()..].trim_start().starts_with(';') {
            out.push(name);
        }
    }
    out
}

/// A crate's source files by module path: each file's name under `src` and what it
/// imports. Files of test-only modules (`#[cfg(test)] mod tests;`) are left out.
type Files = BTreeMap<Vec<String>, (String, Imports)>;

fn files_of(sources: &[(String, String)]) -> Files {
    let declared: BTreeSet<Vec<String>> = sources
        .iter()
        .flat_map(|(file, text)| {
            let module = module_of(file);
            declared_modules(&bare_code(text))
                .into_iter()
                .map(move |m| [module.clone(), vec![m]].concat())
        })
        .collect();
    sources
        .iter()
        .map(|(file, text)| (module_of(file), (file.clone(), Imports::of(text))))
        .filter(|(module, _)| module.is_empty() || declared.contains(module))
        .collect()
}

/// `path` as written in `module`, from the crate root; `None` for another crate's.
fn absolute(files: &Files, module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str)? {
        "crate" => {
            base.clear();
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        // A child module (`use child::Item;` in its parent), else another crate.
        child => {
            if !files.contains_key(&[module, &[child.to_string()]].concat()) {
                return None;
            }
        }
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module whose file defines what `path` (from the crate root) names: the deepest
/// module the path goes through, or, where it goes on with a name that module imports,
/// the module that defines that name.
fn defining_module(files: &Files, path: &[String], depth: usize) -> Vec<String> {
    let mut module = Vec::new();
    for segment in path {
        let deeper = [&module[..], std::slice::from_ref(segment)].concat();
        if files.contains_key(&deeper) {
            module = deeper;
            continue;
        }
        if depth < 16
            && let Some(target) = files[&module].1.names.get(segment)
            && let Some(target) = absolute(files, &module, target)
        {
            return defining_module(files, &target, depth + 1);
        }
        break;
    }
    module
}

/// The import arrows between the files of a crate, from its sources (`(file name under
/// src, text)`): each file with the other files that define what its code names.
fn file_graph(sources: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let files = files_of(sources);
    files
        .iter()
        .map(|(module, (file, imports))| {
            let targets = imports
                .uses
                .iter()
                .filter_map(|path| absolute(&files, module, path))
                .map(|path| defining_module(&files, &path, 0))
                .filter(|target| target != module)
                .map(|target| files[&target].0.clone())
                .collect();
            (file.clone(), targets)
        })
        .collect()
}

/// The circles of `graph`: the sets of more than one file that all reach each other.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(node) = stack.pop() {
            for next in graph.get(node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|file| (file, reach(file))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for file in graph.keys() {
        if reached[file].contains(file) && !out.iter().flatten().any(|f| f == file) {
            out.push(
                reached[file]
                    .iter()
                    .filter(|other| reached[*other].contains(file))
                    .cloned()
                    .collect(),
            );
        }
    }
    out
}

/// The `.rs` files under `src`, as (name under `src` with `/` separators, text).
fn sources(src: &Path) -> Vec<(String, String)> {
    rust_files(src)
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(src)
                .expect("under src")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_string())
                .collect::<Vec<_>>()
                .join("/");
            (name, fs::read_to_string(&path).expect("source"))
        })
        .collect()
}

/// Each circle of `graph` with its arrows, one a line.
fn describe(graph: &BTreeMap<String, BTreeSet<String>>, circles: &[Vec<String>]) -> String {
    let mut out = String::new();
    for circle in circles {
        out.push_str(&format!("circle of {} files:\n", circle.len()));
        for from in circle {
            for to in graph[from].iter().filter(|to| circle.contains(to)) {
                out.push_str(&format!("  {from} -> {to}\n"));
            }
        }
    }
    out
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let mut broken = String::new();
    for krate in ["netproto/src", "netproto-derive/src"] {
        let graph = file_graph(&sources(&repo().join(krate)));
        let arrow = |from: &str, to: &str| graph[from].contains(to);
        // The scan sees arrows of each kind: `use super::..`, `use crate::{..}`, a path
        // in code, a name through its module's re-export, a grouped `self`.
        if krate == "netproto/src" {
            assert!(arrow("stream/write.rs", "stream/mod.rs"));
            assert!(arrow("channel/send.rs", "channel/select.rs"));
            assert!(arrow("channel/layer_config.rs", "packet/config.rs"));
            assert!(arrow("delta/mod.rs", "stream/write.rs"));
            assert!(arrow("packet/stats.rs", "time.rs"), "crate::Time");
            assert!(
                !graph.contains_key("netcode/tests.rs"),
                "test files are out"
            );
        } else {
            assert!(arrow("parse.rs", "check.rs"));
            assert!(arrow("set/codegen.rs", "ast.rs"));
            assert!(arrow("check.rs", "value.rs"));
        }
        let found = circles(&graph);
        if !found.is_empty() {
            broken.push_str(&format!("{krate}: {}", describe(&graph, &found)));
        }
    }
    assert!(broken.is_empty(), "files import each other:\n{broken}");
}

#[test]
fn the_file_check_finds_circles_direct_and_through_re_exports() {
    let crate_of = |files: &[(&str, &str)]| -> Vec<(String, String)> {
        files
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect()
    };
    let lib = "mod a;\nmod b;\nmod m;\n#[cfg(test)]\nmod tests;\n";
    // A module's face (m/mod.rs) re-exports its children; they use each other through
    // it, and `a` uses both: no circle.
    let fine = crate_of(&[
        ("lib.rs", lib),
        ("a.rs", "use crate::m::{X, Y};\npub struct A;"),
        (
            "b.rs",
            "// use crate::a::A;\nfn f() -> &'static str { \"crate::a::A\" }",
        ),
        ("m/mod.rs", "mod x;\nmod y;\npub use x::X;\npub use y::Y;"),
        ("m/x.rs", "pub struct X;"),
        ("m/y.rs", "use super::X;\npub struct Y(X);"),
        ("tests.rs", "use crate::a::A;"),
    ]);
    let graph = file_graph(&fine);
    assert_eq!(graph["m/y.rs"], BTreeSet::from(["m/x.rs".to_string()]));
    assert_eq!(graph["b.rs"], BTreeSet::new(), "comments and strings");
    assert!(!graph.contains_key("tests.rs"));
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new());
    // Directly, and through a path in code.
    let direct = crate_of(&[
        ("lib.rs", lib),
        ("a.rs", "use crate::b::B;\npub struct A;"),
        ("b.rs", "pub struct B;\nfn f() { crate::a::A; }"),
        ("m/mod.rs", ""),
    ]);
    assert_eq!(circles(&file_graph(&direct)), [["a.rs", "b.rs"]]);
    // Through a face's re-export: m/x.rs takes `Y` through m/mod.rs, m/y.rs takes `X`.
    let hidden = crate_of(&[
        ("lib.rs", lib),
        (
            "m/mod.rs",
            "mod x;\nmod y;\npub use x::X;\npub(crate) use y::Y;",
        ),
        ("m/x.rs", "use super::Y;\npub struct X;"),
        ("m/y.rs", "use super::X;\npub struct Y;"),
        ("a.rs", ""),
        ("b.rs", ""),
    ]);
    let graph = file_graph(&hidden);
    assert_eq!(circles(&graph), [["m/x.rs", "m/y.rs"]]);
    assert!(describe(&graph, &circles(&graph)).contains("m/x.rs -> m/y.rs"));
}

#[test]
fn use_trees_expand_to_their_paths() {
    let paths = |tree: &str| -> Vec<(String, Option<String>)> {
        expand_tree(tree)
            .into_iter()
            .map(|(p, n)| (p.join("::"), n))
            .collect()
    };
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        paths("crate::value::{self, IntTy as I, shape::*}"),
        [
            ("crate::value".to_string(), some("value")),
            ("crate::value::IntTy".to_string(), some("I")),
            ("crate::value::shape".to_string(), None),
        ]
    );
    assert_eq!(
        paths("super::{a::{B, C},\n    D}"),
        [
            ("super::a::B".to_string(), some("B")),
            ("super::a::C".to_string(), some("C")),
            ("super::D".to_string(), some("D")),
        ]
    );
    assert_eq!(
        use_declarations("pub(crate) use a::B;\nuse c::D;\nfn reuse() {}"),
        [("a::B".to_string(), true), ("c::D".to_string(), false)]
    );
    assert_eq!(
        bare_code("a\n#[cfg(all(test, unix))]\nmod t { {} }\nb"),
        "a\n\nb"
    );
}
