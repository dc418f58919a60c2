//! Why a schema cannot be generated. Every error is found when the schema is compiled, before
//! the first row: iterating rows never fails.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
#[error("schema `{schema}`, column `{column}`: {message}")]
pub struct GenError {
    pub schema: String,
    pub column: String,
    pub message: String,
}
