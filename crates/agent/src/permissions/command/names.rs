//! A command's name and words as rules see them, beyond unquoting: git's
//! harmless global options read past (`git --no-pager push` is `git
//! push`), and the commands that bind a name to another program at run
//! time (`hash -p`, `alias`, `enable`), which no later word can be judged
//! past.

use super::Word;

/// Whether `hash`, `alias` or `enable` with these words binds a name to
/// something else: `hash -p PATH NAME`, `alias NAME=WORDS`, `enable` with
/// any option (`-f FILE` loads a builtin, `-n` turns one off so a program
/// of its name runs).
pub(super) fn rebinds(command: &str, args: &[Word]) -> bool {
    let option = |w: &Word| w.text.starts_with('-') && w.text != "--";
    match command {
        "hash" => args.iter().any(|w| option(w) && w.text.contains('p')),
        "alias" => args.iter().any(|w| w.text.contains('=') || w.dynamic),
        _ => args.iter().any(option),
    }
}

/// The options git takes before its subcommand that change nothing of
/// what it runs: dropped, so that rules see `git SUBCOMMAND …`.
const GIT_HARMLESS: &[&str] = &[
    "-v",
    "--version",
    "-h",
    "--help",
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
];

/// `git OPTIONS SUBCOMMAND …` as `git SUBCOMMAND …`, its harmless global
/// options dropped; any other option before the subcommand (`-C`, `-c`,
/// `--git-dir`, `--work-tree`, `--exec-path`, `--config-env`, …: another
/// repository, configuration or programs) is the error. With no
/// subcommand (`git --version`), the words are left as they are.
pub(super) fn git_subcommand_first(words: &mut Vec<String>) -> Result<(), String> {
    let mut at = 1;
    while let Some(word) = words.get(at) {
        if !word.starts_with('-') {
            words.drain(1..at);
            return Ok(());
        }
        if !GIT_HARMLESS.contains(&word.as_str()) {
            return Err(word.clone());
        }
        at += 1;
    }
    Ok(())
}
