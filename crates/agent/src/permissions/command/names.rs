//! A command's name and words as rules see them, beyond unquoting: git's
//! global options read past for deny and ask rules (`git -C x push` runs a
//! push), and the commands that bind a name to another program at run
//! time (`hash -p`, `alias`, `enable`), which no later word can be judged
//! past.

use super::Word;

/// Whether `hash`, `alias` or `enable` with these words binds a name to
/// something else: `hash -p PATH NAME`, `alias NAME=WORDS`, `enable` with
/// any option (`-f FILE` loads a builtin, `-n` turns one off so a program
/// of its name runs) — or with a word known only when it runs.
pub(super) fn rebinds(command: &str, args: &[Word]) -> bool {
    let option = |w: &Word| w.text.starts_with('-') && w.text != "--";
    if args.iter().any(|w| w.dynamic) {
        return true;
    }
    match command {
        "hash" => args.iter().any(|w| option(w) && w.text.contains('p')),
        "alias" => args.iter().any(|w| w.text.contains('=')),
        _ => args.iter().any(option),
    }
}

/// git's global options that take the next word as their value.
const GIT_VALUED: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--attr-source",
    "--super-prefix",
];

/// git's global options after which it runs no subcommand (it says its
/// version or its help).
const GIT_NO_SUBCOMMAND: &[&str] = &["-v", "--version", "-h", "--help"];

/// What git runs, as deny and ask rules see it: `git SUBCOMMAND …` with
/// the global options before the subcommand taken off (`git -C x -c a=b
/// --no-pager push` runs a push) — none when there are none, or when git
/// runs no subcommand (`git --help push`). `Err`: a word before or at the
/// subcommand is known only when it runs (`git $X push`), so what it runs
/// cannot be judged.
pub(super) fn git_subcommand(argv: &[Word]) -> Result<Option<Vec<String>>, String> {
    let mut at = 1;
    while let Some(word) = argv.get(at) {
        if word.dynamic {
            return Err(word.text.clone());
        }
        let text = word.text.as_str();
        if !text.starts_with('-') {
            break;
        }
        if GIT_NO_SUBCOMMAND.contains(&text) {
            return Ok(None);
        }
        at += if GIT_VALUED.contains(&text) { 2 } else { 1 };
    }
    if at == 1 || at >= argv.len() {
        return Ok(None);
    }
    let mut words = vec!["git".to_owned()];
    words.extend(argv[at..].iter().map(|w| w.text.clone()));
    Ok(Some(words))
}
