//! The integration tests, one binary so the crate, tract and axum link once: one module per
//! area, sharing `support`. Run one area with `cargo test --test it scan::`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test: a panic is the report

mod support;

mod architecture;
mod assets;
mod check;
mod cli;
mod content_hash;
mod corpus_dates;
mod corpus_metadata;
mod corpus_motion;
mod corpus_people;
mod corpus_raw;
mod corpus_scan;
mod corpus_sidecars;
mod corpus_walks;
#[cfg(unix)]
mod crash;
mod docs;
mod engines;
mod faces;
mod faces_cli;
mod faces_embed;
#[cfg(unix)]
mod foreground;
mod heal;
mod hosts;
mod http;
mod lease_protocol;
#[cfg(target_os = "linux")]
mod library;
mod library_sim;
mod locate;
mod media_extract;
mod migration;
mod motion;
mod multiprocess;
mod packaging;
mod pending;
mod people;
mod problems;
mod raw;
mod scan;
#[cfg(unix)]
mod serve;
mod settings;
mod sidecars;
mod similar;
mod simulation;
mod stacks;
mod thumbs;
mod trash;
mod walks;
mod watch;
mod wire;
mod workers;
