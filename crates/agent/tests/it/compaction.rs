//! What a compaction keeps verbatim after its summary: the last two model
//! turns and what answered them, from an assistant message on, within a
//! share of the context window.

use agent::recent_turns;
use model::{ContentBlock, Message, Role};

fn message(role: Role, text: &str) -> Message {
    Message {
        role,
        content: vec![ContentBlock::text(text)],
    }
}

fn conversation(turns: usize, size: usize) -> Vec<Message> {
    let mut out = vec![message(Role::User, "start")];
    for n in 0..turns {
        out.push(message(
            Role::Assistant,
            &format!("answer {n} {}", "x".repeat(size)),
        ));
        out.push(message(Role::User, &format!("result {n}")));
    }
    out
}

#[test]
fn the_last_two_turns_are_kept_from_an_assistant_message_on() {
    let all = conversation(5, 10);
    let kept = recent_turns(&all, 200_000);
    assert_eq!(kept.len(), 4);
    assert_eq!(kept[0].role, Role::Assistant);
    assert_eq!(kept, all[all.len() - 4..]);
}

#[test]
fn nothing_is_kept_when_the_turns_do_not_fit_or_are_all_there_is() {
    // Each turn is 10,000 characters; 15 % of a 10,000-token window is
    // about 6,000 characters.
    assert!(recent_turns(&conversation(5, 10_000), 10_000).is_empty());
    let one = vec![message(Role::User, "start"), message(Role::Assistant, "hi")];
    assert_eq!(recent_turns(&one, 200_000), one[1..]);
    assert!(recent_turns(&one[..1], 200_000).is_empty());
}

#[test]
fn only_what_fits_is_kept() {
    // Room for one turn of 1,000 characters but not two.
    let all = conversation(5, 1_000);
    let kept = recent_turns(&all, 2_500);
    assert_eq!(kept, all[all.len() - 2..]);
}
