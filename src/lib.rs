//! mediadex: a single-binary photo and video indexer. See DESIGN.md for the architecture;
//! this crate root only wires the modules together.

pub mod app;
pub mod clock;
pub mod config;
pub mod disk;
pub mod faces;
pub mod http;
pub mod instance;
pub mod locate;
pub mod logfile;
pub mod mapped;
pub mod media;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod ops;
pub mod people;
pub mod queue;
pub mod scan;
pub mod similar;
pub mod store;
pub mod thumbs;
pub mod token;
pub mod trash;
pub mod walks;
pub mod watch;
pub mod wire;
