//! Import circles between a crate's files: each file a module (its path
//! under `src/`), an edge from a file to each file whose module a path in
//! it names, and a circle each group of files that reach one another
//! (a strongly connected component of more than one file).

use std::collections::BTreeMap;
use std::path::Path;

/// The module a file under `src` is: `["crate"]` for `lib.rs` and
/// `main.rs`, `["crate", "a", "b"]` for `a/b.rs` or `a/b/mod.rs`.
pub fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let mut module = vec!["crate".to_owned()];
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match (last, part.as_str()) {
            (true, "lib.rs" | "main.rs" | "mod.rs") => {}
            (true, name) => module.push(name.trim_end_matches(".rs").to_owned()),
            (false, name) => module.push(name.to_owned()),
        }
    }
    module
}

/// A crate's files and what each reaches.
#[derive(Default)]
pub struct Graph {
    /// File → its module.
    modules: BTreeMap<String, Vec<String>>,
    /// File → the module paths it names.
    reaches: BTreeMap<String, Vec<Vec<String>>>,
}

impl Graph {
    /// Adds `file`, module `module`, naming `reaches`.
    pub fn add(&mut self, file: String, module: Vec<String>, reaches: Vec<Vec<String>>) {
        self.modules.insert(file.clone(), module);
        self.reaches.insert(file, reaches);
    }

    /// The file a path names: the one whose module is its longest prefix.
    fn file_of(&self, path: &[String]) -> Option<&str> {
        self.modules
            .iter()
            .filter(|(_, m)| path.starts_with(m))
            .max_by_key(|(_, m)| m.len())
            .map(|(f, _)| f.as_str())
    }

    /// Each circle: its files, in order.
    pub fn circles(&self) -> Vec<Vec<String>> {
        let files: Vec<&str> = self.modules.keys().map(String::as_str).collect();
        let index: BTreeMap<&str, usize> = files.iter().enumerate().map(|(i, f)| (*f, i)).collect();
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
        for (from, paths) in &self.reaches {
            let Some(&a) = index.get(from.as_str()) else {
                continue;
            };
            for path in paths {
                if let Some(&b) = self.file_of(path).and_then(|f| index.get(f))
                    && a != b
                    && !edges[a].contains(&b)
                {
                    edges[a].push(b);
                }
            }
        }
        strongly_connected(&edges)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|mut c| {
                c.sort_unstable();
                c.into_iter().map(|i| files[i].to_owned()).collect()
            })
            .collect()
    }
}

/// Tarjan's strongly connected components of `edges` (iterative).
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let (mut index, mut low) = (vec![usize::MAX; n], vec![0; n]);
    let (mut on_stack, mut stack) = (vec![false; n], Vec::new());
    let (mut next, mut out) = (0, Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, the next edge of it to follow)
        let mut work = vec![(root, 0)];
        while let Some(top) = work.last_mut() {
            let (v, at) = *top;
            if at == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(at) {
                top.1 += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(component);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_one_circle_and_a_chain_none() {
        let edges = vec![vec![1], vec![2], vec![0], vec![0]];
        let found = strongly_connected(&edges);
        let circles: Vec<_> = found.into_iter().filter(|c| c.len() > 1).collect();
        assert_eq!(circles.len(), 1);
        assert_eq!(circles[0].len(), 3);
    }

    #[test]
    fn files_are_modules() {
        let src = Path::new("/x/src");
        assert_eq!(module_of(src, Path::new("/x/src/lib.rs")), ["crate"]);
        assert_eq!(module_of(src, Path::new("/x/src/a/mod.rs")), ["crate", "a"]);
        assert_eq!(
            module_of(src, Path::new("/x/src/a/b.rs")),
            ["crate", "a", "b"]
        );
    }
}
