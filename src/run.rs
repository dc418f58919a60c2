//! The entry point behind `main`: parse the command line, dispatch, render diagnostics, and map
//! the outcome to an exit code.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use crate::check::{self, Options};
use crate::cli::{
    Cli, Color, Command, MessageFormat, Select, EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED,
    EXIT_OK, EXIT_TERMINATED, EXIT_UNMEASURED, EXIT_USAGE,
};
use crate::diag::{self, Style};
use crate::report::outcome::Outcome;
use crate::{compile, exec, lower, plan, report, shard};

const SUBCOMMANDS: &[&str] = &[
    "check", "plan", "gen", "run", "report", "compare", "merge", "k8s", "init", "new", "help",
];

/// `wlrun FILE.wl` is `wlrun run FILE.wl`: when the first argument that is not an option (nor
/// an option's value) is not a subcommand, insert `run` before the options, so `wlrun -q f.wl`
/// and `wlrun --color never f.wl` mean what they mean after the file. Which options take a
/// value comes from clap's own definition of `run`, so `--param a=b f.wl` does not take `a=b`
/// for the file.
fn with_default_subcommand(args: Vec<OsString>) -> Vec<OsString> {
    let cli = <Cli as clap::CommandFactory>::command();
    let run = cli.find_subcommand("run").expect("`run` is a subcommand");
    let known = || cli.get_arguments().chain(run.get_arguments());
    let takes_value = |arg: Option<&clap::Arg>| arg.is_some_and(|a| a.get_action().takes_values());
    let mut i = 1;
    let file = loop {
        let Some(arg) = args.get(i) else {
            break None;
        };
        // Not UTF-8: not one of our options, so a path.
        let Some(a) = arg.to_str() else { break Some(i) };
        if a == "--" {
            break (i + 1 < args.len()).then_some(i + 1);
        } else if let Some(long) = a.strip_prefix("--") {
            let value_attached = long.contains('=');
            let arg = known().find(|x| x.get_long() == Some(long));
            i += if !value_attached && takes_value(arg) {
                2
            } else {
                1
            };
        } else if let Some(shorts) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            // A cluster such as `-qp hosts=1`: the first short that takes a value takes the rest
            // of the cluster, or else the next argument.
            let mut skip = 1;
            for (at, c) in shorts.char_indices() {
                if takes_value(known().find(|x| x.get_short() == Some(c))) {
                    if at + c.len_utf8() == shorts.len() {
                        skip = 2;
                    }
                    break;
                }
            }
            i += skip;
        } else {
            break Some(i);
        }
    };
    match file {
        Some(at)
            if !SUBCOMMANDS.contains(&args[at].to_str().unwrap_or(""))
                && !mistyped_subcommand(&args[at]) =>
        {
            let mut out = args;
            out.insert(1, OsString::from("run"));
            out
        }
        _ => args,
    }
}

/// `chek` in `wlrun chek f.wl`: a word that is no file but close to a subcommand is left to
/// clap, which names the subcommand meant, rather than taken for `run`'s file, which would
/// have made `f.wl` an unexpected argument.
fn mistyped_subcommand(arg: &OsString) -> bool {
    let Some(word) = arg.to_str() else {
        return false;
    };
    !word.contains(['.', '/', '\\'])
        && !Path::new(word).exists()
        && diag::suggest(word, SUBCOMMANDS.iter().copied()).is_some()
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
        Command::Check {
            files,
            message_format,
            select,
        } => {
            let mut code = EXIT_OK;
            for file in files {
                let out = compile::check_file(&file, &options(&select));
                if message_format == MessageFormat::Json {
                    let lines = diag::json_lines(&out.map, &out.diagnostics);
                    let masked = crate::secrets::mask_json(&lines);
                    let _ = std::io::stdout().write_all(masked.as_bytes());
                } else {
                    say!("{}", diag::render_all(&out.map, &out.diagnostics, style));
                }
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
            let out = compile::check_file(&file, &options(&select));
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
        Command::Report {
            path,
            json,
            csv,
            html,
        } => {
            let (run, merged) = match crate::merge::command::read_run(&path) {
                Ok(r) => r,
                Err(e) => {
                    sayln!("wlrun report: {e}");
                    return EXIT_USAGE;
                }
            };
            if let Some(why) = &run.rebuilt {
                sayln!("wlrun report: {why}");
            }
            for cut in &run.damaged {
                sayln!("wlrun report: warning: {cut}; the report is short of it");
            }
            let text = if json {
                run.text
            } else if csv {
                match report::csv::csv(&run.report) {
                    Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Err(e) => {
                        sayln!("wlrun report: {e}");
                        return EXIT_FAILED;
                    }
                }
            } else if html {
                // A report.json named alone reads its series and sources from beside it.
                let dir = if path.is_dir() {
                    Some(path.as_path())
                } else {
                    path.parent()
                };
                match &merged {
                    Some(m) => match crate::merge::page(m) {
                        Ok(page) => page,
                        Err(e) => {
                            sayln!("wlrun report: {e}");
                            return EXIT_FAILED;
                        }
                    },
                    None => report::html::page(&run.report, dir),
                }
            } else {
                report::render::run_text(&run.report)
            };
            let _ = std::io::stdout().write_all(text.as_bytes());
            // Rendered as far as it goes, but the directory could not be read whole: a script
            // must not take it for the run's whole record.
            if run.damaged.is_empty() {
                EXIT_OK
            } else {
                EXIT_USAGE
            }
        }
        Command::Compare {
            base,
            new,
            json,
            html,
            threshold,
            allow_different,
        } => {
            let opts = crate::compare::Options {
                threshold,
                allow_different,
            };
            let c = match crate::compare::compare(&base, &new, opts) {
                Ok(c) => c,
                Err(e) => {
                    sayln!("wlrun compare: {e}");
                    return EXIT_USAGE;
                }
            };
            let text = if json {
                serde_json::to_string_pretty(&c).expect("the comparison serializes") + "\n"
            } else if html {
                crate::compare::html::page(&c)
            } else {
                crate::compare::render::text(&c)
            };
            let _ = std::io::stdout().write_all(text.as_bytes());
            // A measured regression is the stronger news: it wins over what could not be
            // tested.
            if !c.regressions.is_empty() {
                EXIT_FAILED
            } else if !c.inconclusive.is_empty() {
                EXIT_INCONCLUSIVE
            } else {
                EXIT_OK
            }
        }
        Command::Merge {
            dirs,
            out,
            replace,
            json,
        } => crate::merge::command::run(&dirs, &out, replace, json),
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
            let out = compile::check_file(&file, &opts);
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
        Command::K8s(args) => crate::k8s::command(&args, style),
        Command::Init { kind, path, force } => crate::init::command(kind, path.as_deref(), force),
        Command::Run {
            file,
            json,
            out,
            replace,
            progress_every,
            quiet,
            max_error_rate,
            fail_fast,
            no_server_versions,
            interval,
            metrics,
            shards,
            select,
        } => {
            let sharding = match shard_flags(&shards) {
                Ok(s) => s,
                Err(e) => {
                    sayln!("wlrun: {e}");
                    return EXIT_USAGE;
                }
            };
            let outcome = compile::check_file(&file, &options(&select));
            say!(
                "{}",
                diag::render_all(&outcome.map, &outcome.diagnostics, style)
            );
            let Some(checked) = outcome.checked else {
                return EXIT_USAGE;
            };
            if sharding.is_some() {
                let refused = lower::shards::refusals(&checked);
                if !refused.is_empty() {
                    say!("{}", diag::render_all(&outcome.map, &refused, style));
                    return EXIT_USAGE;
                }
            }
            if !progress_every.is_finite() || progress_every < 0.0 {
                sayln!("wlrun: --progress-every takes a number of seconds, 0 or more");
                return EXIT_USAGE;
            }
            if !interval.is_finite() || !(0.01..=3600.0).contains(&interval) {
                sayln!("wlrun: --interval takes a number of seconds from 0.01 to 3600");
                return EXIT_USAGE;
            }
            let interval = Duration::from_millis((interval * 1000.0).round() as u64);
            let metrics_flags = match MetricsFlags::read(&metrics) {
                Ok(m) => m,
                Err(e) => {
                    sayln!("wlrun: {e}");
                    return EXIT_USAGE;
                }
            };
            // Bound before the run directory is made: an address taken costs nothing but exit 2.
            let live = metrics_flags
                .wanted()
                .then(|| exec::live::Live::new(interval));
            let live_out = match live.as_ref().map(|l| metrics_flags.start(l)) {
                Some(Ok(s)) => Some(s),
                Some(Err(e)) => {
                    sayln!("wlrun: {e}");
                    return EXIT_USAGE;
                }
                None => None,
            };
            let plan = lower::lower(&checked);
            // Before anything is printed: the server versions asked below may quote a secret.
            exec::secrets::remember(&plan);
            // Before anything is sent: a directory that cannot take the report must not cost a
            // run, and a run killed midway still leaves what it was running.
            let mut copied_workload = None;
            if let Some(dir) = &out {
                match start_out_dir(dir, replace, &outcome.map, &checked, &plan) {
                    Ok(w) => copied_workload = w,
                    Err(e) => {
                        sayln!("wlrun: {e}");
                        return EXIT_USAGE;
                    }
                }
                // A shard killed before its report still says which shard of which run it was.
                if let Some((spec, address, timeout)) = &sharding {
                    let which = report::shard::ShardReport {
                        index: spec.index,
                        count: spec.count,
                        plan: shard::plan_identity(&plan),
                        barrier: address.to_string(),
                        timeout_s: timeout.as_secs_f64(),
                        phases: Vec::new(),
                        failure: None,
                    };
                    if let Err(e) = report::files::write_shard(dir, &which) {
                        sayln!("wlrun: {e}");
                        return EXIT_USAGE;
                    }
                }
            }
            let stop = Arc::new(AtomicBool::new(false));
            let env = exec::RunEnv {
                seed: checked.seed,
                base_dir: file.parent().unwrap_or(Path::new("")).to_path_buf(),
                stop: stop.clone(),
                progress_every: Duration::from_secs_f64(progress_every),
                quiet,
                max_error_rate,
                fail_fast,
                series: out.as_ref().map(|dir| exec::series::SeriesOut {
                    dir: dir.clone(),
                    interval,
                    fault: Arc::new(exec::series::fault::Fault::new(stop.clone())),
                }),
                live,
                shard: sharding.map(|(spec, address, timeout)| {
                    Arc::new(exec::shards::ShardRun::new(
                        spec,
                        address,
                        shard::plan_identity(&plan),
                        timeout,
                        stop,
                    ))
                }),
            };
            let environment = exec::environment::gather(&plan, !no_server_versions);
            if !quiet {
                say!("{}", environment.lines());
            }
            let total = plan.cells.len();
            let mut report = exec::run_plan(&plan, &env, |cell| {
                say!("{}", report::render::cell_lines(cell, total));
            });
            report.environment = Some(report::environment::Environment {
                load_average_end: exec::environment::load_average(),
                ..environment
            });
            let text = if json {
                let text =
                    serde_json::to_string_pretty(&report).expect("the report serializes") + "\n";
                crate::secrets::mask_json(&text).into_owned()
            } else {
                crate::secrets::masked(report::render::table(&report))
            };
            let _ = std::io::stdout().write_all(text.as_bytes());
            if let Some(s) = &report.shard {
                sayln!("{}", shard_line(s));
            }
            let mut code = if report.signal.as_deref() == Some("SIGTERM") {
                EXIT_TERMINATED
            } else if report.interrupted {
                EXIT_INTERRUPTED
            } else {
                match report.outcome() {
                    Outcome::Passed => EXIT_OK,
                    Outcome::Failed => EXIT_FAILED,
                    Outcome::Unmeasured => EXIT_UNMEASURED,
                }
            };
            if let Some(dir) = out {
                match report::files::write_report(&dir, &report) {
                    Ok(warning) => match (warning, &copied_workload) {
                        (Some(w), _) => sayln!(
                            "wlrun: report written to {}, but not its page: {w}",
                            dir.display()
                        ),
                        (None, Some(w)) => sayln!(
                            "wlrun: report written to {}; the workload as it ran: {}",
                            dir.display(),
                            w.display()
                        ),
                        (None, None) => sayln!("wlrun: report written to {}", dir.display()),
                    },
                    Err(e) => {
                        sayln!("wlrun: {e}");
                        if code == EXIT_OK {
                            code = EXIT_FAILED;
                        }
                    }
                }
            }
            if let Some(l) = live_out {
                l.finish(metrics_flags.linger);
            }
            code
        }
    }
}

/// `--shard`, `--barrier*` and `--barrier-timeout`, or the environment they stand for: the
/// shard this process runs, where shard 0 listens and who may join, how long to wait; `None`
/// unsharded.
fn shard_flags(
    flags: &crate::cli::Shards,
) -> Result<Option<(shard::Spec, shard::Address, Duration)>, String> {
    let env = |name: &str| std::env::var(name).ok();
    let (spec, note) = shard::Spec::resolve(flags.shard.as_deref(), env)?;
    if let Some(note) = note {
        sayln!("wlrun: {note}");
    }
    let Some(spec) = spec else {
        return Ok(None);
    };
    let timeout = shard::parse_timeout(&flags.barrier_timeout)
        .map_err(|e| format!("--barrier-timeout {e}"))?;
    let address = shard::resolve(
        spec,
        &shard::Flags {
            barrier: flags.barrier.as_deref(),
            bind: flags.barrier_bind.as_deref(),
            insecure: flags.barrier_insecure,
            tls_cert: flags.barrier_tls_cert.as_deref(),
            tls_key: flags.barrier_tls_key.as_deref(),
            tls_ca: flags.barrier_tls_ca.as_deref(),
        },
        env,
    )?;
    Ok(Some((spec, address, timeout)))
}

/// The shard's last line: which shard, and the start skew the barriers measured, or why the
/// run could not go on.
fn shard_line(s: &report::shard::ShardReport) -> String {
    let who = format!("wlrun: shard {} of {}", s.index, s.count);
    if let Some(f) = &s.failure {
        return format!("{who}: failed: {f}");
    }
    let skews: Vec<(f64, f64)> = s
        .phases
        .iter()
        .filter_map(|p| p.start_skew_ms.zip(p.skew_error_ms))
        .collect();
    match skews
        .iter()
        .copied()
        .reduce(|a, b| (a.0.max(b.0), a.1.max(b.1)))
    {
        Some((skew, err)) => format!(
            "{who}: start skew at most {skew:.2} ms over {} phase start{} (each figure within {err:.2} ms)",
            skews.len(),
            plural(skews.len())
        ),
        None => format!("{who}: every barrier passed"),
    }
}

/// Checks `--out DIR` and writes plan.json and `sources/`: the workload and its modules as
/// checked, then every other file checking read (CSV tables, hooks, files to replay).
fn start_out_dir(
    dir: &Path,
    replace: bool,
    map: &crate::source::SourceMap,
    checked: &check::Checked,
    plan: &plan::Plan,
) -> Result<Option<std::path::PathBuf>, String> {
    use crate::report::files::Source;
    use crate::source::Origin;
    let root = checked.program.root().file;
    let modules = std::iter::once(root).chain(
        checked
            .program
            .modules
            .iter()
            .map(|m| m.file)
            .filter(|&f| f != root),
    );
    let mut sources: Vec<Source> = modules
        .map(|m| {
            let f = map.get(m);
            Source {
                origin: f.origin.clone(),
                text: Some(f.text.clone()),
            }
        })
        .collect();
    sources.extend(
        checked
            .program
            .inputs
            .list()
            .into_iter()
            .map(|origin| Source { origin, text: None }),
    );
    let reads: Vec<std::path::PathBuf> = sources
        .iter()
        .filter_map(|s| match &s.origin {
            Origin::Disk(p) => Some(p.clone()),
            Origin::Stdlib(_) => None,
        })
        .collect();
    report::files::prepare(dir, replace, &reads)?;
    let written = report::files::write_start(dir, plan, &sources)?;
    for left in &written.left_out {
        sayln!(
            "wlrun: not copied into {}: {left}",
            dir.join("sources").display()
        );
    }
    Ok(written.workload.map(|w| dir.join("sources").join(w)))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `--metrics-listen`, `--metrics-push` and their times, read and checked before anything is
/// sent.
struct MetricsFlags {
    listen: Option<String>,
    linger: Duration,
    push: Option<(exec::live::push::Target, Duration)>,
}

impl MetricsFlags {
    fn read(m: &crate::cli::Metrics) -> Result<MetricsFlags, String> {
        let linger = exec::live::parse_duration(&m.metrics_linger)
            .map_err(|e| format!("--metrics-linger: {e}"))?;
        let every = exec::live::parse_duration(&m.metrics_push_interval)
            .map_err(|e| format!("--metrics-push-interval: {e}"))?;
        if every < Duration::from_millis(100) {
            return Err("--metrics-push-interval: push at most every 100ms".into());
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "wlrun".into());
        let push = match &m.metrics_push {
            Some(url) => Some((exec::live::push::Target::parse(url, &host)?, every)),
            None => None,
        };
        Ok(MetricsFlags {
            listen: m.metrics_listen.clone(),
            linger,
            push,
        })
    }

    fn wanted(&self) -> bool {
        self.listen.is_some() || self.push.is_some()
    }

    /// The server bound (its address said on standard error, where tests read it) and the
    /// pusher started.
    fn start(&self, live: &Arc<exec::live::Live>) -> Result<exec::live::Outputs, String> {
        let out = exec::live::Outputs::start(self.listen.as_deref(), self.push.clone(), live)?;
        if let Some(addr) = out.addr() {
            sayln!("metrics: serving http://{addr}/metrics");
        }
        Ok(out)
    }
}
