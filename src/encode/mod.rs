//! Encoders: generated rows (`gen::Cell`) to bytes in a file format. Each format owns one file;
//! none of them generates data or sends it anywhere.

pub mod csv;

pub use self::csv::{write_csv, CsvEncoder, TimestampStyle};
