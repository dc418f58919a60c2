//! The `wlrun` binary run as a user runs it, for the tests that drive it from outside.

use std::path::Path;
use std::process::{Command, Output};

/// `wlrun ARGS` in `dir`, whatever its exit code.
pub fn wlrun(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}
