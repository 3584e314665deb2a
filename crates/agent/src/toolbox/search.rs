//! Tool search, as Claude Code does it: when MCP servers offer many
//! tools, their definitions are sent deferred (`defer_loading`: the API
//! keeps them from the model), their names are listed in the system
//! prompt, and the model loads the ones it needs with `ToolSearch`, whose
//! result references them (`tool_reference` blocks the API expands into
//! their definitions). The tools and the prefix never change, so the
//! prompt cache holds; which tools were deferred is recorded on the
//! context event, and what each search loaded on its result, so a
//! rebuilt request is the one sent.

use super::outcome::Outcome;
use crate::config::{AgentConfig, ApiKind, ToolSearch};
use crate::request::ToolDef;
use serde::Deserialize;
use serde_json::{Value, json};

/// The tool's name, Claude Code's, in either naming.
pub const TOOL: &str = "ToolSearch";

/// The beta deferred tools and tool references go with.
pub const BETA: &str = "advanced-tool-use-2025-11-20";

/// What a search's result records (its `data`): the tools it loaded.
#[derive(Debug, Default, PartialEq, serde::Serialize, Deserialize)]
pub struct Loaded {
    /// Their names, as the model calls them.
    pub tool_references: Vec<String>,
}

impl Loaded {
    /// What a result's `data` says was loaded (nothing, when it says no
    /// such thing).
    pub fn of(data: &Value) -> Loaded {
        Loaded::deserialize(data).unwrap_or_default()
    }
}

/// Tools a search loads when it does not say.
const DEFAULT_RESULTS: usize = 5;

/// The tool's definition.
pub fn definition() -> Value {
    json!({
        "name": TOOL,
        "description": "Loads deferred tools so they can be called. The tools listed under \
            \"Deferred tools\" in the system prompt are available, but their definitions are \
            not loaded: until this tool loads one, you cannot call it. Search by keywords \
            (\"slack message\"), or load by name with \"select:NAME\" (several: \
            \"select:NAME1,NAME2\"). The tools found are loaded from the next turn on.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords, or \"select:NAME[,NAME…]\"."},
                "max_results": {"type": "integer", "minimum": 1, "description": "At most this many tools (default 5)."}
            },
            "required": ["query"]
        }
    })
}

/// The program tools `config`'s run sends deferred: the MCP servers'
/// tools, when the setting says so (`auto`: when their definitions would
/// take more than its share of the context window, at four characters a
/// token). None on an OpenAI-compatible server, which has no such thing.
pub fn deferred(config: &AgentConfig, tools: &[ToolDef]) -> Vec<String> {
    let served: Vec<&ToolDef> = tools
        .iter()
        .filter(|t| t.name.starts_with("mcp__"))
        .collect();
    if served.is_empty() || config.api == ApiKind::Openai {
        return Vec::new();
    }
    let defer = match config.tool_search {
        ToolSearch::Off => false,
        ToolSearch::On => true,
        ToolSearch::Auto(percent) => {
            let chars: usize = served
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.schema.to_string().len())
                .sum();
            let window = crate::run::gates::window_of(config);
            (chars as u64 / 4) * 100 > window * u64::from(percent)
        }
    };
    match defer {
        true => served.iter().map(|t| t.name.clone()).collect(),
        false => Vec::new(),
    }
}

/// The system prompt's list of the deferred tools.
pub fn listing(deferred: &[String]) -> String {
    let mut text = format!(
        "# Deferred tools\n\nThese tools are available but not loaded; load one with `{TOOL}` \
         before you call it:"
    );
    for name in deferred {
        text.push_str(&format!("\n- {name}"));
    }
    text
}

#[derive(Deserialize)]
struct Input {
    query: String,
    #[serde(default)]
    max_results: Option<usize>,
}

/// Answers a search over the deferred tools (`deferred`: name and
/// description of each): the tools it loads, as references.
pub(crate) fn answer(input: &Value, deferred: &[(String, String)]) -> Outcome {
    let input: Input = match serde_json::from_value(input.clone()) {
        Ok(input) => input,
        Err(e) => {
            return Outcome::error(format!(
                "invalid input for `{TOOL}`: {e}; give `query`: keywords, or select:NAME"
            ));
        }
    };
    let limit = input.max_results.unwrap_or(DEFAULT_RESULTS).max(1);
    let found: Vec<&str> = match input.query.trim().strip_prefix("select:") {
        Some(names) => names
            .split(',')
            .map(str::trim)
            .filter_map(|name| deferred.iter().find(|(n, _)| n == name))
            .map(|(n, _)| n.as_str())
            .collect(),
        None => ranked(&input.query, deferred)
            .into_iter()
            .take(limit)
            .collect(),
    };
    if found.is_empty() {
        let names: Vec<&str> = deferred.iter().map(|(n, _)| n.as_str()).collect();
        return Outcome {
            text: format!(
                "no deferred tool matches `{}`; the deferred tools are: {}",
                input.query,
                names.join(", ")
            ),
            ..Outcome::default()
        };
    }
    Outcome {
        text: format!("loaded: {}", found.join(", ")),
        data: serde_json::to_value(Loaded {
            tool_references: found.iter().map(|n| (*n).to_owned()).collect(),
        })
        .unwrap_or_default(),
        ..Outcome::default()
    }
}

/// The deferred tools `query`'s words match, best first: a word in a
/// tool's name counts twice, in its description once.
fn ranked<'a>(query: &str, deferred: &'a [(String, String)]) -> Vec<&'a str> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, &str)> = deferred
        .iter()
        .map(|(name, description)| {
            let (name_l, text_l) = (name.to_lowercase(), description.to_lowercase());
            let score = words
                .iter()
                .map(|w| 2 * usize::from(name_l.contains(w)) + usize::from(text_l.contains(w)))
                .sum();
            (score, name.as_str())
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().map(|(_, name)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<(String, String)> {
        vec![
            (
                "mcp__chat__post_message".into(),
                "Posts a message to a channel".into(),
            ),
            (
                "mcp__chat__list_channels".into(),
                "Lists the channels".into(),
            ),
            ("mcp__files__read".into(), "Reads a file".into()),
        ]
    }

    #[test]
    fn a_selection_loads_the_tools_it_names_and_no_other() {
        let out = answer(&json!({"query": "select:mcp__files__read, nope"}), &tools());
        assert_eq!(Loaded::of(&out.data).tool_references, ["mcp__files__read"]);
    }

    #[test]
    fn keywords_rank_names_over_descriptions() {
        let out = answer(&json!({"query": "channel message"}), &tools());
        assert_eq!(
            Loaded::of(&out.data).tool_references,
            ["mcp__chat__post_message", "mcp__chat__list_channels"]
        );
        let none = answer(&json!({"query": "weather"}), &tools());
        assert!(none.data.is_null() && none.text.contains("mcp__files__read"));
    }

    #[test]
    fn the_setting_reads_claude_codes_values() {
        assert_eq!(ToolSearch::parse("auto:5"), Ok(ToolSearch::Auto(5)));
        assert_eq!(ToolSearch::parse("TRUE"), Ok(ToolSearch::On));
        assert!(ToolSearch::parse("sometimes").is_err());
        let config = AgentConfig {
            tool_search: ToolSearch::On,
            ..AgentConfig::default()
        };
        let def = |name: &str| ToolDef {
            name: name.into(),
            description: String::new(),
            schema: json!({}),
        };
        assert_eq!(
            deferred(&config, &[def("read"), def("mcp__a__b")]),
            vec!["mcp__a__b".to_owned()]
        );
        let auto = AgentConfig::default();
        assert!(
            deferred(&auto, &[def("mcp__a__b")]).is_empty(),
            "small: sent whole"
        );
        let window = crate::run::gates::window_of(&auto);
        let big = ToolDef {
            description: "x".repeat((window as usize * 4) / 10 + 8),
            ..def("mcp__a__big")
        };
        assert_eq!(
            deferred(&auto, &[big]),
            vec!["mcp__a__big".to_owned()],
            "over 10 %"
        );
    }
}
