//! Addresses and spindles of pscale blocks, on fixtures built from the
//! pscale touchstone's published examples: a spatial walk five levels deep
//! read at every placing of the point, literal and semantic addresses
//! reaching the same node, and rendition against living labels.

use agent::blocks::address::render_spindle;
use agent::blocks::{AddressError, Block};
use serde_json::{Value, json};

/// Known space → Britain → Llŷn peninsula → the kitchen → the table, with
/// side branches, as a block whose pscale 0 sits `decimal` levels down.
fn spatial(decimal: u32) -> Block {
    Block::from_body(&json!({"name": "spatial", "decimal": decimal, "tree": {
        "_": "Known space",
        "2": {"_": "Britain",
            "3": {"_": "Llŷn peninsula",
                "4": {"_": "The kitchen", "5": {"_": "The table", "1": "A cup", "2": "A document"}},
                "2": {"_": "The workshop", "1": "Workbench", "2": "Tool rack"}},
            "1": {"_": "London", "4": {"_": "A café", "1": "Corner table"}}},
        "1": {"_": "Europe", "3": {"_": "Alps", "1": "A summit"}}}}))
    .unwrap()
}

fn labels(block: &Block, address: &str) -> Vec<(i64, String)> {
    block
        .spindle(address)
        .unwrap()
        .into_iter()
        .map(|n| (n.pscale, n.text))
        .collect()
}

const WALK: [&str; 5] = [
    "Known space",
    "Britain",
    "Llŷn peninsula",
    "The kitchen",
    "The table",
];

#[test]
fn a_spatial_walk_five_levels_deep_is_labelled_by_where_the_point_sits() {
    // the touchstone's table: the same five nodes, the point moved
    for (decimal, address, top) in [
        (0, "0.2345", 0),
        (1, "2.345", 1),
        (2, "23.45", 2),
        (3, "234.5", 3),
    ] {
        let block = spatial(decimal);
        let got = labels(&block, address);
        let want: Vec<(i64, String)> = WALK
            .iter()
            .enumerate()
            .map(|(depth, text)| (top - depth as i64, (*text).to_owned()))
            .collect();
        assert_eq!(got, want, "{address} on decimal {decimal}");
    }
}

#[test]
fn literal_and_semantic_addresses_reach_the_same_node() {
    let block = spatial(2);
    let literal = block.locate("2.3.4.5").unwrap();
    assert_eq!(literal, vec![2, 3, 4, 5]);
    assert_eq!(block.locate("23.45").unwrap(), literal);
    assert_eq!(
        block.locate("2345").unwrap(),
        literal,
        "a bare number walks every digit"
    );
    // a short literal address is read literally first
    assert_eq!(block.locate("2.1").unwrap(), vec![2, 1]);
    assert_eq!(block.spindle("2.1").unwrap().last().unwrap().text, "London");
    // on a rendition block a leading `0.` is notation
    let rendition = spatial(0);
    assert_eq!(rendition.locate("0.21").unwrap(), vec![2, 1]);
    assert_eq!(rendition.locate("0.2").unwrap(), vec![2]);
    assert_eq!(rendition.locate("").unwrap(), Vec::<u8>::new());
}

#[test]
fn rendition_and_living_blocks_label_the_same_path_differently() {
    // relationships, living (decimal 1): pscale 0 is `tree["0"]`
    let living = Block::from_body(
        &json!({"name": "relationships", "decimal": 1, "tree": {"0": {
        "_": "Your living relationships.",
        "1": {"_": "David. The architect.", "2": "Lives in Ceidio, Wales."},
        "4": {"_": "Cairn. The second hermitcrab.", "3": "Beacon: a passport page."}}}}),
    )
    .unwrap();
    assert_eq!(
        labels(&living, "0.12"),
        vec![
            (0, "Your living relationships.".to_owned()),
            (-1, "David. The architect.".to_owned()),
            (-2, "Lives in Ceidio, Wales.".to_owned()),
        ]
    );
    assert_eq!(labels(&living, "0.4.3").last().unwrap().0, -2);
    // the same tree as a rendition: its root is pscale 0, and `0` a child
    let mut rendition = living.clone();
    rendition.decimal = 0;
    assert_eq!(
        labels(&rendition, "0.1.2"),
        vec![
            (-1, "Your living relationships.".to_owned()),
            (-2, "David. The architect.".to_owned()),
            (-3, "Lives in Ceidio, Wales.".to_owned()),
        ]
    );
}

#[test]
fn a_grown_history_reads_by_epoch() {
    // living, decimal 2: epochs above pscale 0, their summaries at 0
    let history = Block::from_body(&json!({"name": "history", "decimal": 2, "tree": {
        "1": {"_": "First epoch.", "0": {"_": "Epoch summary.", "1": "Boot #1.", "2": "Boot #2."},
              "1": {"_": "Side thread.", "2": "First contact."}},
        "2": {"_": "Second epoch.", "0": {"_": "Its summary.", "2": "First rider exchange."}}}}))
    .unwrap();
    assert_eq!(
        labels(&history, "10.1"),
        vec![
            (1, "First epoch.".to_owned()),
            (0, "Epoch summary.".to_owned()),
            (-1, "Boot #1.".to_owned()),
        ]
    );
    assert_eq!(labels(&history, "11.2").last().unwrap().1, "First contact.");
    assert_eq!(
        labels(&history, "20.2").last().unwrap().1,
        "First rider exchange."
    );
    // dotted single digits are read literally first
    assert_eq!(history.locate("1.1").unwrap(), vec![1, 1]);
    // fewer digits before the point than levels above 0: padded with 0s
    let grown = Block::from_body(&json!({"name": "h", "decimal": 2,
        "tree": {"0": {"3": {"_": "three", "4": "four"}}}}))
    .unwrap();
    assert_eq!(grown.locate("3.4").unwrap(), vec![0, 3, 4]);
}

#[test]
fn an_address_into_nothing_names_the_deepest_node_there_is() {
    let block = spatial(2);
    let err = block.locate("23.49").unwrap_err();
    assert_eq!(
        err,
        AddressError::Nothing {
            address: "23.49".into(),
            path: vec![2, 3, 4, 9],
            deepest: vec![2, 3, 4],
            text: "The kitchen".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "nothing at `23.49` (read as `2.3.4.9`): the deepest node there is `2.3.4` (\"The kitchen\")"
    );
    let err = block.locate("7").unwrap_err().to_string();
    assert!(err.contains("the deepest node there is the root"), "{err}");
}

#[test]
fn a_key_that_is_not_a_digit_is_refused() {
    let block = spatial(1);
    for bad in ["2.x", "a", "2.-1", "1..2x", "-0.12"] {
        let err = block.locate(bad).unwrap_err();
        assert!(
            matches!(err, AddressError::NotDigit { .. }),
            "{bad}: {err:?}"
        );
        assert!(err.to_string().contains("is not a digit"), "{err}");
    }
    assert!(matches!(
        block.locate("234.5").unwrap_err(),
        AddressError::TooHigh { decimal: 1, .. }
    ));
}

#[test]
fn an_address_deeper_than_any_block_is_refused_before_it_is_walked() {
    let block = spatial(1);
    let deep = vec!["1"; 10_000].join(".");
    for address in [deep.as_str(), &"1".repeat(10_000)] {
        let err = block.locate(address).unwrap_err();
        assert!(matches!(err, AddressError::TooDeep { .. }), "{err:?}");
        assert!(err.to_string().contains("deeper than 32 levels"), "{err}");
    }
}

#[test]
fn a_spindle_renders_as_the_model_reads_it() {
    let block = spatial(2);
    let nodes = block.spindle("23.4").unwrap();
    assert_eq!(
        render_spindle("spatial", "23.4", &nodes),
        "[spatial 23.4]\n  [2] Known space\n  [1] Britain\n  [0] Llŷn peninsula\n  [-1] The kitchen"
    );
    let as_json: Value = serde_json::to_value(&nodes[1]).unwrap();
    assert_eq!(
        as_json,
        json!({"pscale": 1, "path": "2", "text": "Britain"})
    );
}
