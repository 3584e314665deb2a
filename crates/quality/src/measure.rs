//! One file's counts, by walking its syntax: what each measure finds
//! outside test code, and the module paths the file reaches.

use crate::FUNCTION_LINES;
use syn::visit::{self, Visit};

/// What one file holds.
pub struct Found {
    /// (measure, what) for each count.
    pub counted: Vec<(&'static str, String)>,
    /// The module paths (`crate::a::b::X`, resolved) it names.
    pub reaches: Vec<Vec<String>>,
}

/// Counts `file`, whose module is `module` (`["crate", "a"]`).
pub fn file(file: &syn::File, levers: &[String], module: &[String]) -> Found {
    let mut walker = Walker {
        levers,
        module: module.to_vec(),
        inline: Vec::new(),
        test: 0,
        bench: 0,
        found: Found {
            counted: Vec::new(),
            reaches: Vec::new(),
        },
    };
    walker.visit_file(file);
    walker.found
}

struct Walker<'a> {
    levers: &'a [String],
    /// The file's module.
    module: Vec<String>,
    /// Inline `mod` blocks entered within the file.
    inline: Vec<String>,
    /// Depth inside test code (`#[cfg(test)]`, `#[test]`).
    test: usize,
    /// Depth inside `#[cfg(feature = "bench")]` code.
    bench: usize,
    found: Found,
}

/// How an item's attributes set it apart.
#[derive(Clone, Copy, Default)]
struct Marks {
    test: bool,
    bench: bool,
}

fn marks(attrs: &[syn::Attribute]) -> Marks {
    let mut marks = Marks::default();
    for attr in attrs {
        let path = attr.path();
        if path.is_ident("test") {
            marks.test = true;
        }
        if !path.is_ident("cfg") {
            continue;
        }
        let said = quote::ToTokens::to_token_stream(&attr.meta).to_string();
        let negated = said.contains("not");
        if said.contains("test") && !negated {
            marks.test = true;
        }
        if said.contains("feature") && said.contains("\"bench\"") && !negated {
            marks.bench = true;
        }
    }
    marks
}

impl Walker<'_> {
    fn count(&mut self, measure: &'static str, what: String) {
        if self.test == 0 {
            self.found.counted.push((measure, what));
        }
    }

    /// Walks `inner` marked by `attrs`.
    fn within(&mut self, attrs: &[syn::Attribute], inner: impl FnOnce(&mut Self)) {
        let m = marks(attrs);
        self.test += usize::from(m.test);
        self.bench += usize::from(m.bench);
        inner(self);
        self.test -= usize::from(m.test);
        self.bench -= usize::from(m.bench);
    }

    /// A function (its signature to the end of `body`; its doc comment
    /// and attributes are not its lines): long, or returning
    /// `Result<_, String>`.
    fn function(&mut self, sig: &syn::Signature, body: &syn::Block) {
        let start = syn::spanned::Spanned::span(sig).start().line;
        let end = body.brace_token.span.close().end().line;
        let lines = end.saturating_sub(start) + 1;
        let name = sig.ident.to_string();
        if lines > FUNCTION_LINES {
            self.count("long_functions", format!("{name}: {lines} lines"));
        }
        if let syn::ReturnType::Type(_, ty) = &sig.output
            && returns_string_error(ty)
        {
            self.count("result_string", name);
        }
    }

    /// A path as the module path it names, when it starts at `crate`,
    /// `super` or `self`.
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut here: Vec<String> = self.module.iter().chain(&self.inline).cloned().collect();
        let rest = match first.as_str() {
            "crate" => {
                here = vec!["crate".to_owned()];
                &segments[1..]
            }
            "self" => &segments[1..],
            "super" => {
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    here.pop();
                    rest = &rest[1..];
                }
                rest
            }
            _ => return None,
        };
        here.extend(rest.iter().cloned());
        Some(here)
    }

    fn reach(&mut self, segments: &[String]) {
        if self.test > 0 {
            return;
        }
        if let Some(path) = self.resolve(segments) {
            self.found.reaches.push(path);
        }
    }
}

/// Whether `ty` is `Result<_, String>` (or holds one).
fn returns_string_error(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    path.path.segments.iter().any(|segment| {
        let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
            return false;
        };
        let types: Vec<&syn::Type> = args
            .args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect();
        let string_error = segment.ident == "Result"
            && types.len() == 2
            && matches!(types[1], syn::Type::Path(p) if p.path.is_ident("String"));
        string_error || types.iter().any(|t| returns_string_error(t))
    })
}

/// A `use` tree's paths, each as its segments.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            if n.ident != "self" {
                path.push(n.ident.to_string());
            }
            out.push(path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_paths(tree, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            _ => &[],
        };
        self.within(attrs, |w| visit::visit_item(w, item));
    }

    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        self.inline.push(module.ident.to_string());
        visit::visit_item_mod(self, module);
        self.inline.pop();
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.sig, &f.block);
        visit::visit_item_fn(self, f);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match item {
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            _ => &[],
        };
        self.within(attrs, |w| visit::visit_impl_item(w, item));
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.sig, &f.block);
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.within(&f.attrs, |w| {
            if let Some(block) = &f.default {
                w.function(&f.sig, block);
            } else if let syn::ReturnType::Type(_, ty) = &f.sig.output
                && returns_string_error(ty)
            {
                w.count("result_string", f.sig.ident.to_string());
            }
            visit::visit_trait_item_fn(w, f);
        });
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        self.within(&field.attrs, |w| visit::visit_field(w, field));
    }

    fn visit_expr_index(&mut self, index: &'ast syn::ExprIndex) {
        if let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(key),
            ..
        }) = &*index.index
        {
            self.count("string_keys", format!("[\"{}\"]", key.value()));
        }
        visit::visit_expr_index(self, index);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if call.method == "unwrap" || call.method == "expect" {
            self.count("unwrap", format!(".{}()", call.method));
        }
        visit::visit_expr_method_call(self, call);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        for path in paths {
            self.reach(&path);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.reach(&segments);
        visit::visit_path(self, path);
    }

    fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
        if self.bench == 0 && self.levers.iter().any(|l| ident == l) {
            self.count("levers", ident.to_string());
        }
    }

    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        let value = lit.value();
        if self.bench == 0 && self.levers.contains(&value) {
            self.count("levers", value);
        }
    }
}
