//! Schema migrations, applied by `PRAGMA user_version` in one IMMEDIATE transaction, with
//! the migration guard: no upgrade while another process holds a live lease on this file.
//! Foreign keys are off while they run (a table rebuild drops the old table, whose ON
//! DELETE actions must not run) and checked before the commit.
//! The transaction that reaches the identity migration also stamps the file header with it
//! (`vet.rs`).

use super::StoreError;
use super::db::Db;
use crate::model::Millis;
use rusqlite::{Connection, TransactionBehavior};

#[derive(Debug)]
pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}

/// The schema this binary carries, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../../schema/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "assets",
        sql: include_str!("../../schema/0002_assets.sql"),
    },
    Migration {
        version: 3,
        name: "walks",
        sql: include_str!("../../schema/0003_walks.sql"),
    },
    Migration {
        version: 4,
        name: "http",
        sql: include_str!("../../schema/0004_http.sql"),
    },
    Migration {
        version: 5,
        name: "trash moves",
        sql: include_str!("../../schema/0005_trash_moves.sql"),
    },
    Migration {
        version: 6,
        name: "check lists",
        sql: include_str!("../../schema/0006_check_lists.sql"),
    },
    Migration {
        version: 7,
        name: "move jobs",
        sql: include_str!("../../schema/0007_move_jobs.sql"),
    },
    Migration {
        version: 8,
        name: "restores hold",
        sql: include_str!("../../schema/0008_restores_hold.sql"),
    },
    Migration {
        version: super::vet::IDENTITY_VERSION,
        name: "index identity",
        sql: include_str!("../../schema/0009_index_identity.sql"),
    },
    Migration {
        version: 10,
        name: "job retries",
        sql: include_str!("../../schema/0010_job_retries.sql"),
    },
    Migration {
        version: 11,
        name: "run problems",
        sql: include_str!("../../schema/0011_run_problems.sql"),
    },
    Migration {
        version: 12,
        name: "taken at source",
        sql: include_str!("../../schema/0012_taken_at_source.sql"),
    },
    Migration {
        version: 13,
        name: "sidecars",
        sql: include_str!("../../schema/0013_sidecars.sql"),
    },
    Migration {
        version: 14,
        name: "motion",
        sql: include_str!("../../schema/0014_motion.sql"),
    },
    Migration {
        version: 15,
        name: "stacks",
        sql: include_str!("../../schema/0015_stacks.sql"),
    },
    Migration {
        version: 16,
        name: "heif faces again",
        sql: include_str!("../../schema/0016_heif_faces_again.sql"),
    },
    Migration {
        version: 17,
        name: "a million assets",
        sql: include_str!("../../schema/0017_a_million_assets.sql"),
    },
    Migration {
        version: 18,
        name: "asset insert without trigger",
        sql: include_str!("../../schema/0018_asset_insert_no_trigger.sql"),
    },
    Migration {
        version: 19,
        name: "similar",
        sql: include_str!("../../schema/0019_similar.sql"),
    },
    Migration {
        version: 20,
        name: "assets autoincrement",
        sql: include_str!("../../schema/0020_assets_autoincrement.sql"),
    },
    Migration {
        version: 21,
        name: "read again",
        sql: include_str!("../../schema/0021_read_again.sql"),
    },
    Migration {
        version: 22,
        name: "beside per copy",
        sql: include_str!("../../schema/0022_beside_per_copy.sql"),
    },
    Migration {
        version: 23,
        name: "move counter",
        sql: include_str!("../../schema/0023_move_counter.sql"),
    },
    Migration {
        version: 24,
        name: "decode timeouts",
        sql: include_str!("../../schema/0024_decode_timeouts.sql"),
    },
    Migration {
        version: 25,
        name: "people",
        sql: include_str!("../../schema/0025_people.sql"),
    },
    Migration {
        version: 26,
        name: "unshown assets",
        sql: include_str!("../../schema/0026_unshown_assets.sql"),
    },
    Migration {
        version: 27,
        name: "checksum prefix",
        sql: include_str!("../../schema/0027_checksum_prefix.sql"),
    },
    Migration {
        version: 28,
        name: "people counts",
        sql: include_str!("../../schema/0028_people_counts.sql"),
    },
    Migration {
        version: 29,
        name: "library roots",
        sql: include_str!("../../schema/0029_library_roots.sql"),
    },
];

pub(super) fn migrate(
    conn: &mut Connection,
    migrations: &[Migration],
    now: Millis,
    own_owner: &str,
) -> Result<(), StoreError> {
    let latest = migrations.last().map_or(0, |m| m.version);
    // A current schema needs no write lock: a read-only command must not wait behind
    // another process's long write just to learn that.
    if check_version(conn, latest)? == latest {
        return Ok(());
    }
    // SQLite ignores this pragma inside a transaction: it is set around it, and set back
    // whatever the upgrade answered.
    conn.pragma_update(None, "foreign_keys", false)?;
    let upgraded = upgrade(conn, migrations, latest, (now, own_owner));
    conn.pragma_update(None, "foreign_keys", true)?;
    upgraded
}

/// The upgrade's transaction: every migration above the file's version, then the foreign
/// keys checked (none broken that was not broken before), then the commit.
fn upgrade(
    conn: &mut Connection,
    migrations: &[Migration],
    latest: i64,
    (now, own_owner): (Millis, &str),
) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Re-read under the lock: another process may have migrated meanwhile.
    let found = check_version(&tx, latest)?;
    if found == latest {
        return Ok(());
    }
    if found >= 1 {
        refuse_if_leased(&Db::sqlite(&tx), now, own_owner)?;
    }
    let broken_before = broken_keys(&tx)?;
    for m in migrations.iter().filter(|m| m.version > found) {
        // A new file's schema is no news; an upgrade of an index is.
        if found >= 1 {
            tracing::info!(version = m.version, name = m.name, "applying migration");
        } else {
            tracing::debug!(version = m.version, name = m.name, "applying migration");
        }
        tx.execute_batch(m.sql)?;
        finish_schema_edit(&tx)?;
        tx.pragma_update(None, "user_version", m.version)?;
    }
    let broken = broken_keys(&tx)? - broken_before;
    if broken > 0 {
        return Err(StoreError::MigrationBrokeKeys {
            version: latest,
            broken,
        });
    }
    super::vet::stamp_identity(&tx)?;
    tx.commit()?;
    Ok(())
}

/// A migration that edits `sqlite_schema` in place turns `writable_schema` on; this ends
/// SQLite's documented procedure for it in the same transaction: one more schema_version
/// (other connections reload the schema), `writable_schema = RESET` (this one reloads it
/// now, so the writer runs the edited tables), and a full parse of the edited schema, so
/// a text that does not parse fails the migration and rolls it back.
fn finish_schema_edit(tx: &Connection) -> Result<(), StoreError> {
    let editing: bool = tx.query_row("PRAGMA writable_schema", [], |r| r.get(0))?;
    if !editing {
        return Ok(());
    }
    let version: i64 = tx.query_row("PRAGMA schema_version", [], |r| r.get(0))?;
    tx.pragma_update(None, "schema_version", version + 1)?;
    tx.execute_batch("PRAGMA writable_schema = RESET")?;
    tx.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(())
}

/// Rows whose foreign keys point nowhere. Counted before and after the migrations: an old
/// file's own (from a bug long fixed) must not block every upgrade.
fn broken_keys(tx: &Connection) -> Result<i64, StoreError> {
    Ok(
        tx.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })?,
    )
}

/// The file's schema version, refused when newer than this binary's.
fn check_version(conn: &Connection, latest: i64) -> Result<i64, StoreError> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > latest {
        return Err(StoreError::NewerSchema {
            found,
            supported: latest,
        });
    }
    Ok(found)
}

/// Version-1 columns are the contract this query relies on; later migrations keep them.
const LIVE_FOREIGN_LEASE: &str = "
    SELECT 'job', id, lease_owner, lease_expires_at FROM jobs
     WHERE state = 'running' AND lease_expires_at > ?1 AND lease_owner <> ?2
    UNION ALL
    SELECT 'scan run', id, lease_owner, lease_expires_at FROM scan_runs
     WHERE state = 'running' AND lease_expires_at > ?1 AND lease_owner <> ?2
    LIMIT 1";

pub(super) fn refuse_if_leased(
    db: &Db<'_>,
    now: Millis,
    own_owner: &str,
) -> Result<(), StoreError> {
    let found = db.optional(LIVE_FOREIGN_LEASE, args!(now, own_owner), |row| {
        let what: String = row.get(0)?;
        let expires_at: Millis = row.get(3)?;
        Ok(StoreError::MigrationBlocked {
            what: if what == "job" { "job" } else { "scan run" },
            id: row.get(1)?,
            owner: row.get(2)?,
            remaining_ms: expires_at - now,
        })
    })?;
    found.map_or(Ok(()), Err)
}
