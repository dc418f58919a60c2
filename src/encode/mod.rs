//! Encoders: generated rows (`gen::Cell`) to bytes in a file format. Each format owns one file;
//! none of them generates data or sends it anywhere.

pub mod bin;
pub mod csv;
pub mod ilp;
pub mod qwp;
pub mod sqlite_time;

pub use self::bin::{BinError, BinErrorKind, BinReader, BinWriter};
pub use self::csv::{write_csv, CsvEncoder, TimestampStyle};
pub use self::ilp::IlpEncoder;
pub use self::qwp::QwpEncoder;
