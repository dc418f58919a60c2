//! The entry point behind `main`: parse the command line, dispatch, render diagnostics, and map
//! the outcome to an exit code.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};

use clap::Parser;

use crate::check::{self, Options};
use crate::cli::{Cli, Color, Command, Select};
use crate::diag::{self, Style};
use crate::{lower, plan};

pub const EXIT_OK: i32 = 0;
/// A run failed, a threshold was exceeded, or output could not be written.
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_USAGE: i32 = 2;

const SUBCOMMANDS: &[&str] = &["check", "plan", "gen", "run", "help"];

/// `wlrun FILE.wl` is `wlrun run FILE.wl`: insert the subcommand when the first argument is not
/// one and not a flag.
fn with_default_subcommand(args: Vec<OsString>) -> Vec<OsString> {
    let first = args.get(1).and_then(|a| a.to_str()).unwrap_or("");
    if args.len() > 1 && !first.starts_with('-') && !SUBCOMMANDS.contains(&first) {
        let mut out = vec![args[0].clone(), OsString::from("run")];
        out.extend(args.into_iter().skip(1));
        out
    } else {
        args
    }
}

fn options(select: &Select) -> Options {
    Options {
        params: select.params.clone(),
        only: select.only.clone(),
        seed: select.seed,
        csv_may_be_missing: false,
    }
}

pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args = with_default_subcommand(args.into_iter().collect());
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    let style = match cli.color {
        Color::Always => Style::Color,
        Color::Never => Style::Plain,
        Color::Auto if std::io::stderr().is_terminal() => Style::Color,
        Color::Auto => Style::Plain,
    };
    match cli.command {
        Command::Check { files, select } => {
            let mut code = EXIT_OK;
            for file in files {
                let out = check::check_file(&file, &options(&select));
                say!("{}", diag::render_all(&out.map, &out.diagnostics, style));
                match out.checked {
                    Some(_) => {
                        let warnings = out.diagnostics.len();
                        sayln!(
                            "{}: ok{}",
                            file.display(),
                            if warnings > 0 {
                                format!(" ({warnings} warning{})", plural(warnings))
                            } else {
                                String::new()
                            }
                        );
                    }
                    None => {
                        let errors = out.diagnostics.iter().filter(|d| d.is_error()).count();
                        sayln!("{}: {errors} error{}", file.display(), plural(errors));
                        code = EXIT_USAGE;
                    }
                }
            }
            code
        }
        Command::Plan { file, json, select } => {
            let out = check::check_file(&file, &options(&select));
            say!("{}", diag::render_all(&out.map, &out.diagnostics, style));
            let Some(checked) = out.checked else {
                return EXIT_USAGE;
            };
            let plan = lower::lower(&checked);
            let text = if json {
                serde_json::to_string_pretty(&plan).expect("plan serializes") + "\n"
            } else {
                plan::listing(&plan)
            };
            let _ = std::io::stdout().write_all(text.as_bytes());
            EXIT_OK
        }
        Command::Gen {
            file,
            schema,
            format,
            batch,
            output,
            timestamps,
            shard,
            select,
        } => {
            let mut opts = options(&select);
            opts.csv_may_be_missing = true;
            let out = check::check_file(&file, &opts);
            say!("{}", diag::render_all(&out.map, &out.diagnostics, style));
            let Some(checked) = out.checked else {
                return EXIT_USAGE;
            };
            crate::gen_cmd::run(
                format,
                batch as usize,
                &checked,
                &file,
                schema.as_deref(),
                output.as_deref(),
                timestamps,
                shard.as_deref(),
            )
        }
        Command::Run { file, select } => {
            let out = check::check_file(&file, &options(&select));
            say!("{}", diag::render_all(&out.map, &out.diagnostics, style));
            let Some(checked) = out.checked else {
                return EXIT_USAGE;
            };
            let plan = lower::lower(&checked);
            sayln!(
                "wlrun: `run` cannot execute yet: the ingest runner (issue 4), the query runner \
                 (issue 5), hooks and HTTP request runs (issue 6) and QWP (issue 7) are not built."
            );
            sayln!(
                "The workload checks; {} cell{} with these phases would run:",
                plan.cells.len(),
                plural(plan.cells.len())
            );
            for cell in &plan.cells {
                for phase in &cell.phases {
                    sayln!("  cell {} {}: cannot run yet", cell.index, phase.describe());
                }
            }
            EXIT_USAGE
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
