#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The architecture as a test (docs/architecture.md, "Rules the tests
//! keep"): the crate graph from `cargo metadata`, and the module graph of
//! every crate from its sources parsed as Rust. It fails when an arrow
//! points outward, when a crate other than a composition root names an
//! adapter, or when modules of one crate refer to each other in a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cargo_metadata::{DependencyKind, Metadata, MetadataCommand, Package};
use syn::visit::Visit;

fn workspace() -> Metadata {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    MetadataCommand::new().manifest_path(manifest).no_deps().exec().expect("cargo metadata")
}

fn root(metadata: &Metadata) -> PathBuf {
    metadata.workspace_root.clone().into_std_path_buf()
}

/// Where a package of ours sits, from the inside out: a crate may depend
/// (normal and build dependencies) only on crates of a lower layer.
fn layer(name: &str) -> Option<u8> {
    Some(match name {
        "recall-core" => 0,
        "recall-routing" | "recall-sessions" | "recall-skills" | "recall-accounts" | "recall-conformance" => 1,
        "recall-retrievers" => 2,
        "recall-engine" => 3,
        // The application layer: every use case once.
        "recall-api" => 4,
        // Driving adapters.
        "recall-mcp" => 5,
        "recall-server" => 6,
        _ => return None,
    })
}

fn is_adapter(package: &Package, root: &Path) -> bool {
    package.manifest_path.as_std_path().starts_with(root.join("adapters"))
}

/// The crates that wire adapters into an engine: the `recall` binary, each
/// example (a library user's own composition) and the tools (the
/// benchmarks, which build the engine as the binary does).
fn is_composition_root(package: &Package, root: &Path) -> bool {
    let manifest = package.manifest_path.as_std_path();
    package.name.as_str() == "recall"
        || manifest.starts_with(root.join("examples"))
        || manifest.starts_with(root.join("tools"))
}

/// Our packages each package depends on for building and running (not for
/// its tests), by name.
fn runtime_deps(metadata: &Metadata) -> BTreeMap<String, BTreeSet<String>> {
    let ours: BTreeSet<&str> = metadata.packages.iter().map(|p| p.name.as_str()).collect();
    metadata
        .packages
        .iter()
        .map(|p| {
            let deps = p
                .dependencies
                .iter()
                .filter(|d| d.kind != DependencyKind::Development && ours.contains(d.name.as_str()))
                .map(|d| d.name.clone())
                .collect();
            (p.name.to_string(), deps)
        })
        .collect()
}

#[test]
fn dependencies_point_inward() {
    let metadata = workspace();
    let root = root(&metadata);
    let deps = runtime_deps(&metadata);
    let mut wrong = Vec::new();
    for package in &metadata.packages {
        let name = package.name.as_str();
        let adapter = is_adapter(package, &root);
        for dep in &deps[name] {
            let dep_package = metadata.packages.iter().find(|p| p.name.as_str() == dep).unwrap();
            if is_adapter(dep_package, &root) && !is_composition_root(package, &root) {
                wrong.push(format!("{name} → {dep}: only a composition root names an adapter"));
            }
            if adapter && dep != "recall-core" {
                wrong.push(format!("{name} → {dep}: an adapter depends on recall-core alone"));
            }
            if let (Some(from), Some(to)) = (layer(name), layer(dep)) {
                if to >= from {
                    wrong.push(format!("{name} (layer {from}) → {dep} (layer {to}): an arrow that points outward"));
                }
            }
        }
        if !adapter && !is_composition_root(package, &root) && layer(name).is_none() && name != "recall-e2e" {
            wrong.push(format!("{name}: a new crate needs its place in this test's layers"));
        }
    }
    assert!(wrong.is_empty(), "forbidden dependencies:\n{}", wrong.join("\n"));
}

#[test]
fn the_named_rules_hold() {
    let metadata = workspace();
    let deps = runtime_deps(&metadata);
    let depends = |a: &str, b: &str| deps[a].contains(b);
    assert!(deps["recall-core"].is_empty(), "recall-core depends on no crate of ours: {:?}", deps["recall-core"]);
    assert!(!depends("recall-retrievers", "recall-engine"), "retrievers never depend on the engine");
    // Keys and passwords are the accounts service's: the memory engine (and
    // so every recall) links no key derivation.
    let engine = metadata.packages.iter().find(|p| p.name.as_str() == "recall-engine").unwrap();
    for kdf in ["argon2", "aws-lc-rs", "pbkdf2", "recall-accounts"] {
        assert!(
            !engine.dependencies.iter().any(|d| d.name == kdf && d.kind != DependencyKind::Development),
            "the engine links {kdf}"
        );
    }
    for driving in ["recall-server", "recall-mcp"] {
        assert!(depends(driving, "recall-api"), "{driving} is a front end of the application layer");
        assert!(!depends(driving, "recall-engine"), "{driving} runs on the application layer, not on the engine");
    }
}

/// A module of a crate: `a::b` (empty for the crate root).
type ModulePath = Vec<String>;

/// The modules of the crate whose root file is `root_file`, each with its file.
fn modules(root_file: &Path) -> BTreeMap<ModulePath, PathBuf> {
    let src = root_file.parent().unwrap();
    let mut found = BTreeMap::new();
    found.insert(Vec::new(), root_file.to_path_buf());
    for entry in walkdir::WalkDir::new(src).into_iter().filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") || path == root_file {
            continue;
        }
        let relative = path.strip_prefix(src).unwrap();
        // src/bin/* are crates of their own; main.rs beside lib.rs too.
        if relative.starts_with("bin") || matches!(relative.to_str(), Some("main.rs" | "lib.rs")) {
            continue;
        }
        let mut parts: ModulePath =
            relative.with_extension("").components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|l| l == "mod") {
            parts.pop();
        }
        found.insert(parts, path.to_path_buf());
    }
    found
}

/// Collects the paths a file names through `crate::` and `super::` (in
/// `use` trees and in expressions and types), skipping `#[cfg(test)]` items.
struct References<'a> {
    module: &'a [String],
    known: &'a BTreeMap<ModulePath, PathBuf>,
    out: BTreeSet<ModulePath>,
}

impl References<'_> {
    /// The deepest known module a path (as segments) falls in.
    fn resolve(&mut self, segments: &[String]) {
        let mut absolute: ModulePath = match segments.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            Some("super") => {
                let mut base = self.module.to_vec();
                base.pop();
                base
            }
            _ => return,
        };
        for s in &segments[1..] {
            match s.as_str() {
                "super" => {
                    absolute.pop();
                }
                "self" => {}
                other => absolute.push(other.to_string()),
            }
        }
        while !absolute.is_empty() && !self.known.contains_key(&absolute) {
            absolute.pop();
        }
        self.out.insert(absolute);
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.resolve(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.resolve(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.resolve(&prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().contains("test")))
}

impl<'ast> Visit<'ast> for References<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.resolve(&segments);
        syn::visit::visit_path(self, path);
    }
}

/// Module → the modules it refers to, leaving out its ancestors and
/// descendants (a parent declares its children; a child may use its
/// parent's items: neither is a circle between rooms).
fn module_graph(root_file: &Path) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    let known = modules(root_file);
    let mut graph = BTreeMap::new();
    for (module, file) in &known {
        let text = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut refs = References { module, known: &known, out: BTreeSet::new() };
        refs.visit_file(&parsed);
        let targets = refs.out.into_iter().filter(|t| !t.starts_with(module) && !module.starts_with(t)).collect();
        graph.insert(module.clone(), targets);
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(graph: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<ModulePath>> {
    struct State<'g> {
        graph: &'g BTreeMap<ModulePath, BTreeSet<ModulePath>>,
        index: BTreeMap<&'g ModulePath, usize>,
        low: BTreeMap<&'g ModulePath, usize>,
        stack: Vec<&'g ModulePath>,
        on_stack: BTreeSet<&'g ModulePath>,
        found: Vec<Vec<ModulePath>>,
    }
    fn connect<'g>(s: &mut State<'g>, v: &'g ModulePath) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let Some((w, _)) = graph.get_key_value(w) else { continue };
            if !s.index.contains_key(w) {
                connect(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
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
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v) {
            connect(&mut state, v);
        }
    }
    state.found
}

#[test]
fn no_module_circle_inside_a_crate() {
    let metadata = workspace();
    let mut wrong = Vec::new();
    for package in &metadata.packages {
        for target in &package.targets {
            let is_crate_root = target
                .kind
                .iter()
                .any(|k| matches!(k, cargo_metadata::TargetKind::Lib | cargo_metadata::TargetKind::Bin));
            if !is_crate_root {
                continue;
            }
            let file = target.src_path.as_std_path();
            // A lone binary file has no modules of its own.
            if file.parent().is_some_and(|p| p.ends_with("bin")) {
                continue;
            }
            for circle in circles(&module_graph(file)) {
                let names: Vec<String> = circle.iter().map(|m| m.join("::")).collect();
                wrong.push(format!("{} ({}): {}", package.name, target.name, names.join(" ↔ ")));
            }
        }
    }
    assert!(wrong.is_empty(), "modules that refer to each other in a circle:\n{}", wrong.join("\n"));
}

#[test]
fn the_circle_finder_finds_circles() {
    let m = |s: &str| -> ModulePath { s.split("::").map(str::to_string).collect() };
    let graph: BTreeMap<ModulePath, BTreeSet<ModulePath>> =
        [(m("a"), [m("b")].into()), (m("b"), [m("c")].into()), (m("c"), [m("a")].into()), (m("d"), [m("a")].into())]
            .into();
    assert_eq!(circles(&graph), vec![vec![m("a"), m("b"), m("c")]]);
    let acyclic: BTreeMap<ModulePath, BTreeSet<ModulePath>> =
        [(m("a"), [m("b")].into()), (m("b"), BTreeSet::new())].into();
    assert!(circles(&acyclic).is_empty());
}
