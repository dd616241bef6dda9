//! The trash journal.
