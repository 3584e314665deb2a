//! A word of a command as the shell would see it, when that can be known
//! without running anything: unquoted, `$'…'` escapes applied, and marked
//! when part of it is known only at run time (a substitution, a
//! parameter, a glob, braces).

use super::{pure_arithmetic, unescape_backquoted};
use brush_parser::ParserOptions;
use brush_parser::word::{Parameter, ParameterExpr, WordPiece, WordPieceWithSource};

/// A word's value as the shell would see it, when it can be known
/// without running anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Word {
    /// Its text: quotes and escapes removed; as written when dynamic.
    pub(super) text: String,
    /// It holds an expansion (a variable, a substitution, arithmetic).
    pub(super) dynamic: bool,
    /// The commands its substitutions run.
    pub(super) substitutions: Vec<String>,
    /// Unquoted braces that may expand into several words (`{rm,}`).
    pub(super) braces: bool,
    /// An unquoted `{` (a brace expansion when the word also has `,` or
    /// `..`, quoted or not: `{'rm',}`).
    pub(super) open_brace: bool,
    /// An unquoted `*`, `?` or `[`: a pattern the shell may expand to
    /// file names (`/bin/r[m]`).
    pub(super) glob: bool,
    /// Within double quotes, while its pieces are read.
    pub(super) quoted: bool,
    /// Why what it expands to cannot be judged, if it cannot.
    pub(super) unjudged: Option<String>,
}

impl Word {
    pub(super) fn parse(raw: &str) -> Word {
        let mut word = Word::default();
        match brush_parser::word::parse(raw, &ParserOptions::default()) {
            Ok(pieces) => word.pieces(&pieces),
            Err(_) => word.dynamic = true,
        }
        word.braces |= word.open_brace && (word.text.contains(',') || word.text.contains(".."));
        if word.dynamic {
            word.text = raw.to_owned();
        }
        word
    }

    pub(super) fn unjudge(&mut self, why: &str) {
        self.unjudged.get_or_insert_with(|| why.to_owned());
    }

    pub(super) fn pieces(&mut self, pieces: &[WordPieceWithSource]) {
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(t) if self.quoted => self.text.push_str(t),
                WordPiece::Text(t) => {
                    self.open_brace |= t.contains('{');
                    // (`[` alone is the test command, not a pattern)
                    self.glob |= t.contains(['*', '?'])
                        || t.find('[').is_some_and(|i| t[i + 1..].contains(']'));
                    self.text.push_str(t);
                }
                WordPiece::SingleQuotedText(t) => self.text.push_str(t),
                WordPiece::AnsiCQuotedText(t) => match ansi_c(t) {
                    Some(text) => self.text.push_str(&text),
                    None => {
                        self.text.push_str(t);
                        self.dynamic = true;
                        self.unjudge("it uses a `$'…'` escape hc does not decode");
                    }
                },
                // one backslash escapes what follows it (`\\` is a backslash)
                WordPiece::EscapeSequence(s) => {
                    self.text.push_str(s.strip_prefix('\\').unwrap_or(s));
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    let outer = std::mem::replace(&mut self.quoted, true);
                    self.pieces(inner);
                    self.quoted = outer;
                }
                WordPiece::TildePrefix(user) => {
                    self.text.push('~');
                    self.text.push_str(user);
                }
                WordPiece::CommandSubstitution(inner) => {
                    self.substitutions.push(inner.clone());
                    self.dynamic = true;
                }
                // between backticks bash first takes `\\`, `\$` and `` \` ``
                // to what they escape
                WordPiece::BackquotedCommandSubstitution(inner) => {
                    self.substitutions.push(unescape_backquoted(inner));
                    self.dynamic = true;
                }
                WordPiece::ParameterExpansion(expr) => {
                    self.dynamic = true;
                    if !plain_parameter(expr) {
                        self.unjudge(
                            "it uses a `${…}` expansion with an operator or a subscript, which can run commands",
                        );
                    }
                }
                WordPiece::ArithmeticExpression(expr) => {
                    self.dynamic = true;
                    if !pure_arithmetic(&expr.value) {
                        self.unjudge("it evaluates arithmetic on variables, which can run commands hidden in their values");
                    }
                }
            }
        }
    }
}

/// `$'…'` text with its escapes applied, as bash does; `None` for an
/// escape it does not decode here.
fn ansi_c(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let simple = match chars.next()? {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\u{7}',
            'b' => '\u{8}',
            'e' | 'E' => '\u{1b}',
            'f' => '\u{c}',
            'v' => '\u{b}',
            c @ ('\\' | '\'' | '"' | '?') => c,
            'x' => radix(&mut chars, 16, 2)?,
            'u' => radix(&mut chars, 16, 4)?,
            'U' => radix(&mut chars, 16, 8)?,
            d @ '0'..='7' => {
                let mut n = d.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(more) => {
                            n = n * 8 + more;
                            chars.next();
                        }
                        None => break,
                    }
                }
                char::from_u32(n)?
            }
            'c' => char::from_u32(chars.next()? as u32 & 0x1f)?,
            _ => return None,
        };
        out.push(simple);
    }
    Some(out)
}

/// Up to `max` digits of `radix` (at least one), as a character.
fn radix(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    max: usize,
) -> Option<char> {
    let mut n = 0u32;
    let mut seen = 0;
    while seen < max {
        match chars.peek().and_then(|c| c.to_digit(radix)) {
            Some(d) => {
                n = n * radix + d;
                chars.next();
                seen += 1;
            }
            None => break,
        }
    }
    if seen == 0 {
        return None;
    }
    char::from_u32(n)
}

/// Whether a `${…}` or `$NAME` is a parameter alone (no operator, no
/// subscript that is evaluated, no indirection).
fn plain_parameter(expr: &ParameterExpr) -> bool {
    matches!(
        expr,
        ParameterExpr::Parameter {
            parameter: Parameter::Positional(_)
                | Parameter::Special(_)
                | Parameter::Named(_)
                | Parameter::NamedWithAllIndices { .. },
            indirect: false,
        }
    )
}
