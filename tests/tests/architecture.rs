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
