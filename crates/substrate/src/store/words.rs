//! The `match_` language, one for both backends (`docs/substrate.md`,
//! "Full-text search"): how a chunk's text is cut into words, how a query
//! is read, and what matches. SQLite's FTS5 index and PostgreSQL's
//! `tsvector` are both given the words cut here, and both are asked the
//! query read here, so a search answers the same on either.
//!
//! * A **word** is a run of letters and digits (Unicode), lowercased;
//!   anything else separates words. Words longer than [`LONGEST`] bytes
//!   are not indexed (a hash or a blob is not searched for).
//! * A query is **terms**: a bare item (`crab`, `foo-bar`: its words, one
//!   after another), or a quoted phrase (`"hermit crab"`); a trailing `*`
//!   makes the last word a prefix (`herm*`, `"hermit cr*"`).
//! * Terms next to each other must all match (`AND` between them may be
//!   written); `OR` (capitals) between groups matches either group:
//!   `a b OR c` is `(a AND b) OR c`.
//! * A query with no word in it matches nothing; an empty one is refused.

/// Words longer than this many bytes are not indexed.
pub(crate) const LONGEST: usize = 255;

/// The words of `text`, in order.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| w.len() <= LONGEST)
        .collect()
}

/// One term of a query: its words in order, the last one a prefix when
/// `prefix`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Term {
    pub words: Vec<String>,
    pub prefix: bool,
}

/// A query read: any of its groups, each matching when all its terms do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Query {
    pub groups: Vec<Vec<Term>>,
}

impl Query {
    /// Reads `query` (see the module's language). `None` when it is only
    /// whitespace.
    pub(crate) fn read(query: &str) -> Option<Query> {
        if query.trim().is_empty() {
            return None;
        }
        let mut groups = vec![Vec::new()];
        for (item, quoted) in items(query) {
            if !quoted && item == "OR" {
                groups.push(Vec::new());
                continue;
            }
            if !quoted && item == "AND" {
                continue;
            }
            let prefix = item.ends_with('*');
            let words = words(&item);
            if words.is_empty() {
                continue;
            }
            if let Some(group) = groups.last_mut() {
                group.push(Term { words, prefix });
            }
        }
        groups.retain(|g| !g.is_empty());
        Some(Query { groups })
    }

    /// Whether any term has more than one word (matched in order).
    pub(crate) fn has_phrases(&self) -> bool {
        self.groups.iter().flatten().any(|t| t.words.len() > 1)
    }

    /// Whether a text of these `words` matches.
    pub(crate) fn matches(&self, words: &[String]) -> bool {
        self.groups
            .iter()
            .any(|group| group.iter().all(|term| term.found_in(words)))
    }

    /// The query in FTS5's language, over an index of [`words`]: each
    /// term a quoted phrase (a prefix marked), groups of `AND`s joined by
    /// `OR`. `None` when nothing can match.
    pub(crate) fn fts5(&self) -> Option<String> {
        self.render(" AND ", " OR ", |t| {
            format!(
                "\"{}\"{}",
                t.words.join(" "),
                if t.prefix { "*" } else { "" }
            )
        })
    }

    /// The query as a PostgreSQL `tsquery` over a `tsvector` of
    /// [`words`]: every word of a term required (a phrase's order is
    /// checked after, with [`Query::matches`]). `None` when nothing can
    /// match.
    pub(crate) fn tsquery(&self) -> Option<String> {
        self.render(" & ", " | ", |t| {
            let last = t.words.len() - 1;
            let words: Vec<String> = t
                .words
                .iter()
                .enumerate()
                .map(|(i, w)| format!("'{w}'{}", if t.prefix && i == last { ":*" } else { "" }))
                .collect();
            words.join(" & ")
        })
    }

    /// The groups, each `(term and term …)`, joined by `or`.
    fn render(&self, and: &str, or: &str, term: impl Fn(&Term) -> String) -> Option<String> {
        if self.groups.is_empty() {
            return None;
        }
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|group| {
                let terms: Vec<String> = group.iter().map(&term).collect();
                format!("({})", terms.join(and))
            })
            .collect();
        Some(groups.join(or))
    }
}

impl Term {
    /// Whether `words` hold this term: its words one after another, the
    /// last one as a prefix when it is one.
    fn found_in(&self, words: &[String]) -> bool {
        let n = self.words.len();
        if n == 0 || words.len() < n {
            return false;
        }
        words.windows(n).any(|window| {
            window
                .iter()
                .zip(&self.words)
                .enumerate()
                .all(|(i, (have, want))| {
                    if self.prefix && i == n - 1 {
                        have.starts_with(want.as_str())
                    } else {
                        have == want
                    }
                })
        })
    }
}

/// The items of a query: quoted phrases (quoted: true) and the runs of
/// non-space characters between them.
fn items(query: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted => {
                // (a `*` right after the closing quote makes a prefix)
                if chars.peek() == Some(&'*') {
                    chars.next();
                    current.push('*');
                }
                out.push((std::mem::take(&mut current), true));
                quoted = false;
            }
            '"' => {
                if !current.is_empty() {
                    out.push((std::mem::take(&mut current), false));
                }
                quoted = true;
            }
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    out.push((std::mem::take(&mut current), false));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push((current, quoted));
    }
    out
}

/// The `tsvector` of `words` as PostgreSQL reads one: each distinct word
/// once, quoted (words are letters and digits: nothing to escape).
pub(crate) fn tsvector(words: &[String]) -> String {
    let mut distinct: Vec<&String> = words.iter().collect();
    distinct.sort();
    distinct.dedup();
    // (PostgreSQL keeps a tsvector under 1 MiB)
    let mut out = String::new();
    for word in distinct {
        if out.len() + word.len() + 3 > 1_000_000 {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push('\'');
        out.push_str(word);
        out.push('\'');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Query {
        Query::read(text).unwrap()
    }

    fn matches(query: &str, text: &str) -> bool {
        q(query).matches(&words(text))
    }

    #[test]
    fn words_are_runs_of_letters_and_digits_lowercased() {
        assert_eq!(
            words("The hermit-crab's SHELL, v2.0 — Größe"),
            ["the", "hermit", "crab", "s", "shell", "v2", "0", "größe"]
        );
        assert!(words(&"x".repeat(LONGEST + 1)).is_empty());
    }

    #[test]
    fn the_language_reads_as_written_down() {
        assert!(matches("crab", "a Hermit CRAB"));
        assert!(!matches("cra", "a hermit crab"));
        assert!(matches("cra*", "a hermit crab"));
        assert!(matches("\"hermit crab\"", "the hermit crab"));
        assert!(!matches("\"crab hermit\"", "the hermit crab"));
        assert!(matches("\"hermit cr\"*", "the hermit crab"));
        assert!(matches("hermit-crab", "hermit crab"));
        assert!(!matches("hermit-crab", "crab hermit"));
        assert!(matches("shell crab", "crab in a shell"));
        assert!(!matches("shell crab", "crab alone"));
        assert!(matches("shell OR crab", "crab alone"));
        assert!(matches("a b OR c", "c"));
        assert!(!matches("a b OR c", "a"));
        assert!(matches("crab AND shell", "shell, crab"));
        assert!(matches("crab or", "or a crab"), "lowercase or is a word");
        assert!(!matches("!!!", "!!!"), "no word: nothing");
        assert!(Query::read("  ").is_none());
    }

    #[test]
    fn both_backends_are_asked_the_same() {
        let query = q("herm* \"hermit crab\" OR shell");
        assert_eq!(
            query.fts5().unwrap(),
            "(\"herm\"* AND \"hermit crab\") OR (\"shell\")"
        );
        assert_eq!(
            query.tsquery().unwrap(),
            "('herm':* & 'hermit' & 'crab') | ('shell')"
        );
        assert!(q("!!!").fts5().is_none());
    }
}
