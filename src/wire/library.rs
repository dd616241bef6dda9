//! The JSON shape of a library, as `mediadex library add|list --json` and `/api/libraries`
//! give it (docs/json.md): the row, and whether its folder can be scanned now.

use crate::model::{Library as Row, Millis};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Library {
    pub id: i64,
    pub name: String,
    pub root: String,
    pub created_at: Millis,
    /// False while the folder is not there (unmounted) or cannot be read.
    pub available: bool,
    /// Why it is unavailable; null when it is available.
    pub unavailable: Option<String>,
}

impl Library {
    pub fn of(row: &Row, unavailable: Option<String>) -> Library {
        Library {
            id: row.id,
            name: row.name.clone(),
            root: row.root.clone(),
            created_at: row.created_at,
            available: unavailable.is_none(),
            unavailable,
        }
    }
}
