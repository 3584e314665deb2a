//! The catalogue and the fake's list of what the real API serves agree:
//! every model hc knows is one the fake serves, by id and dated id, and
//! every model the fake serves hc can price and size.

use model::catalog::{ALIASES, MODELS, find};
use model::{LimitsTable, PriceTable};
use testkit::models::{KNOWN, serves};

#[test]
fn hc_knows_what_the_api_serves_and_no_more() {
    for e in MODELS {
        assert!(serves(e.id, &[]), "the fake does not serve {}", e.id);
        if let Some(dated) = e.dated {
            assert!(serves(dated, &[]), "the fake does not serve {dated}");
        }
    }
    let (prices, limits) = (PriceTable::default(), LimitsTable::default());
    for k in KNOWN {
        let entry = find(k.id).unwrap_or_else(|| panic!("hc has no entry for {}", k.id));
        assert_eq!(entry.dated, k.dated, "{}", k.id);
        assert!(prices.price(k.id).is_some() && limits.get(k.id).is_some());
    }
    // an alias is never an id the API serves
    for (alias, id) in ALIASES {
        assert!(!serves(alias, &[]), "{alias}");
        assert!(serves(id, &[]), "{id}");
    }
}
