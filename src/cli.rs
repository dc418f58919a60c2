//! The command line, clap derive only: no logic here. The exit codes live here too, as the
//! other half of the command line's contract, so `run` and `gen_cmd` share them without one
//! importing the other.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub const EXIT_OK: i32 = 0;
/// A run failed, a threshold was exceeded, or output could not be written.
pub const EXIT_FAILED: i32 = 1;
/// Bad input: usage errors and workload diagnostics; nothing was sent.
pub const EXIT_USAGE: i32 = 2;
/// Could not measure: the environment, not the server's performance, stopped the run (a
/// refused connection, failed authentication, a refused certificate, an unknown host), so a
/// CI can tell a broken environment from a regression.
pub const EXIT_UNMEASURED: i32 = 3;
/// `wlrun compare --threshold`: a metric could not be tested and its change exceeds the
/// threshold, so the comparison neither passes nor fails.
pub const EXIT_INCONCLUSIVE: i32 = 4;
/// Ctrl-C (SIGINT): the report of what was measured is still printed and written.
pub const EXIT_INTERRUPTED: i32 = 130;
/// SIGTERM, handled as SIGINT; 128 + 15, what a shell reports for a process SIGTERM ended, so
/// a supervisor that reads the status sees the cause it sent.
pub const EXIT_TERMINATED: i32 = 143;

const EXAMPLES: &str = "\
Examples:
  wlrun init --kind postgres                   write postgres.wl, a commented starter workload
  wlrun examples/quickstart.wl                 run every cell (same as `wlrun run`)
  wlrun check workloads/*.wl                   parse and check, print every diagnostic
  wlrun plan workloads/questdb-ingest.wl       list the cells with resolved values and row counts
  wlrun plan w.wl --param hosts=100 --only protocol=qwp --json
  wlrun gen workloads/questdb-ingest.wl --param hosts=100 --format ilp -o cpu.ilp
  wlrun run w.wl --shard 1/4 --barrier s0:7471  shard 1 of 4; shard 0 listens on s0
  wlrun report runs/monday                     re-render a finished `wlrun run --out runs/monday`
  wlrun compare runs/monday runs/tuesday --threshold 5%
  wlrun merge runs/shard-* --out runs/merged   put a sharded run's shards together

Exit codes: 0 ok, 1 run failed or a threshold was exceeded (for `compare --threshold`: a
significant regression beyond it), 2 usage error or workload diagnostics, 3 could not measure
(a refused connection, password or certificate, an unknown host), 4 `compare --threshold`
inconclusive (a metric too short to test changed beyond it), 130 interrupted (Ctrl-C), 143
stopped by SIGTERM.";

#[derive(Debug, Parser)]
#[command(
    name = "wlrun",
    version,
    about = "Compile and run .wl database benchmark workloads",
    after_help = EXAMPLES,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// Colour diagnostics: auto (on a terminal), always, never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

// Parsed once at startup and matched once: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse and check workload files; print every error and warning.
    Check {
        /// Workload files (.wl).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// How diagnostics are printed: `human` (on standard error) or `json` (one object per
        /// diagnostic and line, on standard output, for editors and CI annotations;
        /// docs/diagnostics.md lists its fields).
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = MessageFormat::Human)]
        message_format: MessageFormat,
        #[command(flatten)]
        select: Select,
    },
    /// Print the execution plan: every cell with its resolved values and phases.
    Plan {
        /// The workload file (.wl).
        file: PathBuf,
        /// Print the plan as JSON instead of the listing.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        select: Select,
    },
    /// Generate a schema's rows (ILP, CSV or the binary format) to a file or standard output.
    Gen {
        /// The workload file (.wl).
        file: PathBuf,
        /// The schema to generate: a name or `alias.name`; defaults to the only schema, or the
        /// first ingest block's.
        #[arg(long)]
        schema: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = GenFormat::Csv)]
        format: GenFormat,
        /// Rows per generated batch.
        #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        batch: u32,
        /// Output file; `-` or absent writes to standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// How CSV timestamps are written: `rfc3339` (2017-01-01T00:00:00Z) or `sql`
        /// (2017-01-01 00:00:00, UTC without a zone).
        #[arg(long, value_enum, default_value_t = TimestampText::Rfc3339)]
        timestamps: TimestampText,
        /// Generate only the rows of series group i of n (0-based), in row order.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Re-render a finished run from `--out DIR` or its report.json, without servers or inputs.
    ///
    /// Prints each cell's lines and the final table as the run printed them, with `--json`
    /// the report.json as written, with `--csv` report.csv's rows, or with `--html` the page
    /// report.html holds. A killed run (no report.json) renders from its time series, as far
    /// as its intervals go; a directory holding a sharded run's shards' run directories, as
    /// their merge (`wlrun merge`, nothing written).
    Report {
        /// A run directory (`wlrun run --out DIR`), a report.json file, or a directory of
        /// shards' run directories.
        path: PathBuf,
        /// Print the report as JSON instead of the table.
        #[arg(long, conflicts_with_all = ["csv", "html"])]
        json: bool,
        /// Print report.csv's table instead: one row per phase, query type, label and stage.
        #[arg(long, conflicts_with = "html")]
        csv: bool,
        /// Print the report's page (report.html: charts, parameters, sources) instead of the
        /// table.
        #[arg(long)]
        html: bool,
    },
    /// Compare two finished runs: every headline metric of every cell and phase both have,
    /// tested for a change on the per-interval samples of their time series.
    ///
    /// Cells are matched by key and phases by name; those only one run has are listed. Each
    /// metric shows both whole-run values, their change, and Welch's t-test of the
    /// per-interval means (sample sizes corrected for autocorrelation) with a 95% confidence
    /// interval and a verdict. docs/compare.md describes the method.
    Compare {
        /// The base run: a run directory (`wlrun run --out DIR`) or a report.json file.
        base: PathBuf,
        /// The new run, compared with the base.
        new: PathBuf,
        /// Print the comparison as JSON instead of the table.
        #[arg(long, conflicts_with = "html")]
        json: bool,
        /// Print the comparison as a page (report.html's style) instead of the table.
        #[arg(long)]
        html: bool,
        /// Exit 1 when a metric is significantly worse (alpha 5%) and its change is worse by
        /// more than this: `5%` or `0.05`; exit 4 (inconclusive) when none is, but a metric
        /// that could not be tested changed for the worse by more than this over the whole run.
        #[arg(long, value_name = "CHANGE", value_parser = parse_threshold)]
        threshold: Option<f64>,
        /// Compare runs of different plans (params, cells, phases, seed), showing what differs;
        /// without it they are refused (exit 2).
        #[arg(long)]
        allow_different: bool,
    },
    /// Merge the run directories of a sharded run's shards into one run directory.
    ///
    /// Each SHARD_DIR is one shard's `wlrun run --shard I/N --out DIR`. Counts add,
    /// histograms and time series merge exactly, rates are over the union of the shards'
    /// measured spans, thresholds are judged again. A shard missing, given twice, of another
    /// run (shard count, plan, seed), killed or failed fails the merged report (exit 1),
    /// naming it. docs/report-format.md, "Merged runs".
    Merge {
        /// The shards' run directories, in any order.
        #[arg(required = true, value_name = "SHARD_DIR")]
        dirs: Vec<PathBuf>,
        /// The merged run directory: new or empty, as for `wlrun run --out`.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// A DIR holding an earlier run's files is emptied of them first.
        #[arg(long)]
        replace: bool,
        /// Print the merged report as JSON on standard output instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run every cell of the plan (`wlrun FILE.wl` is the same).
    Run {
        /// The workload file (.wl).
        file: PathBuf,
        /// Print the report as JSON on standard output instead of the table.
        #[arg(long)]
        json: bool,
        /// Write plan.json and sources/ (every file the run reads) into DIR before sending, and
        /// report.json, report.csv and report.html when the run ends or is stopped. DIR must be
        /// new or empty.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// With --out: a DIR holding an earlier run's files is emptied of them first.
        #[arg(long, requires = "out")]
        replace: bool,
        /// Seconds between progress lines while a phase runs (0: none).
        #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
        progress_every: f64,
        /// No progress lines or bar; the per-cell lines and the final table still print.
        #[arg(long, short)]
        quiet: bool,
        /// Largest share of failed queries a query run may have and still pass: `0.1%` or
        /// `0.001`. Overrides the workload's `expect error_rate`; without either, any failed
        /// query fails the run.
        #[arg(long, value_name = "RATE", value_parser = parse_rate)]
        max_error_rate: Option<f64>,
        /// Stop every query and request run at its first failed query or request, as
        /// `stop after 1 error` in each would (pgbench's and k6's fail-fast).
        #[arg(long)]
        fail_fast: bool,
        /// Do not connect to each SQL endpoint before the run to ask its server's version for
        /// the report's `environment` (a server then sees only the run's own connections).
        #[arg(long)]
        no_server_versions: bool,
        /// With --out: the length of the time series' intervals, seconds (aligned to the wall
        /// clock: a 1 s interval starts on a whole second).
        #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
        interval: f64,
        #[command(flatten)]
        metrics: Metrics,
        #[command(flatten)]
        shards: Shards,
        #[command(flatten)]
        select: Select,
    },
    /// Print Kubernetes manifests that run the workload as N shards of an Indexed Job.
    ///
    /// A ConfigMap with the workload and every file it reads, a Secret with the TLS files and
    /// environment variables it names, a headless Service for the barrier, the Job, and (with
    /// --results-claim) a pod to collect and merge the shards' directories from. Apply with
    /// `kubectl apply --server-side -f -`; docs/scale-out.md is the runbook.
    // Boxed: its many options would make every other command as large.
    K8s(Box<K8sArgs>),
    /// Write a commented starter workload for a kind of target, to edit and run.
    ///
    /// The starter checks and runs as written against a local server (the addresses and
    /// logins come from environment variables it names, with local defaults), and its comments
    /// teach the language: a schema and its generators, the target, an ingest, a measured run,
    /// thresholds.
    #[command(visible_alias = "new")]
    Init {
        /// The kind of target the starter benchmarks.
        #[arg(long, value_enum)]
        kind: StarterKind,
        /// Where to write it: a file, or a folder to write KIND.wl into; ./KIND.wl by default.
        path: Option<PathBuf>,
        /// Overwrite the file if it exists.
        #[arg(long)]
        force: bool,
    },
}

/// The kinds of target `wlrun init` has a starter for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StarterKind {
    /// PostgreSQL: COPY ingest and queries over the PostgreSQL wire.
    Postgres,
    /// QuestDB: QWP ingest and queries over the PostgreSQL wire.
    Questdb,
    /// An HTTP service: a request run.
    Http,
    /// SQLite, embedded: no server needed.
    Sqlite,
}

/// `N%` or a plain fraction: the number as a fraction, or `None` when it is not a number.
fn percent_or_fraction(s: &str) -> Option<f64> {
    let (num, scale) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    num.trim().parse::<f64>().ok().map(|v| v / scale)
}

/// `0.1%` or `0.001`, as a fraction in [0, 1].
fn parse_rate(s: &str) -> Result<f64, String> {
    let v = percent_or_fraction(s)
        .ok_or_else(|| format!("`{s}` is not a rate: write 0.1% or 0.001"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{s}` is not between 0% and 100%"))
    }
}

/// `5%` or `0.05`, as a non-negative fraction; a latency may well get worse by more than 100%.
fn parse_threshold(s: &str) -> Result<f64, String> {
    let v =
        percent_or_fraction(s).ok_or_else(|| format!("`{s}` is not a change: write 5% or 0.05"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("`{s}` is not a change of 0% or more"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MessageFormat {
    Human,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GenFormat {
    /// InfluxDB line protocol, QuestDB flavour.
    Ilp,
    /// CSV with a header line.
    Csv,
    /// wlrun's binary column-batch file (docs/binary-format.md), replayable without
    /// regenerating.
    Bin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TimestampText {
    Rfc3339,
    Sql,
}

/// `wlrun run`'s live metrics, for Prometheus (docs/metrics.md).
#[derive(Clone, Debug, Default, Args)]
pub struct Metrics {
    /// Serve each phase's figures so far at http://HOST:PORT/metrics while the run goes on
    /// (OpenMetrics; Prometheus text 0.0.4 to a scraper that asks only for it). Port 0 takes
    /// a free one; the address is printed on standard error. Figures move on every
    /// --interval.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: how long to go on serving after the run ends, so that the last
    /// scrape sees the final figures (report.json's): at least the scrape interval, such as
    /// `15s`. 0 ends with the run.
    #[arg(long, value_name = "TIME", default_value = "0s")]
    pub metrics_linger: String,
    /// Push each phase's figures to a Prometheus Pushgateway (http://HOST:PORT; the group is
    /// job=wlrun, instance=the host name, unless the URL names its own
    /// `/metrics/job/...`) every --metrics-push-interval and once at the end. A failed push
    /// is a warning.
    #[arg(long, value_name = "URL")]
    pub metrics_push: Option<String>,
    /// With --metrics-push: the time between pushes, such as `10s`.
    #[arg(long, value_name = "TIME", default_value = "10s")]
    pub metrics_push_interval: String,
}

/// `wlrun run`'s shards: one run split over processes that meet at barriers
/// (docs/language.md, "Shards").
#[derive(Clone, Debug, Default, Args)]
pub struct Shards {
    /// Run shard I of N (0-based) of every phase, together with the other shards. Without it,
    /// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's) and WLRUN_SHARDS say it; the flag
    /// wins over them.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Where shard 0 listens and the others connect: HOST:PORT (port 7471 if left out);
    /// WLRUN_BARRIER when absent. Shard 0 binds every interface, or HOST when it is a
    /// loopback address (--barrier-bind chooses otherwise).
    #[arg(long, value_name = "HOST:PORT")]
    pub barrier: Option<String>,
    /// The address shard 0 listens on, apart from the one the others dial: ADDR:PORT, ADDR
    /// (the barrier's port) or :PORT (every interface).
    #[arg(long, value_name = "ADDR:PORT")]
    pub barrier_bind: Option<String>,
    /// Let shard 0 listen where other machines reach it without WLRUN_BARRIER_TOKEN: anyone
    /// who reaches the port and knows the plan's hash can then join, abort or stall the run.
    /// Without a token (the same on every shard), shard 0 refuses to start on a non-loopback
    /// address unless given this.
    #[arg(long)]
    pub barrier_insecure: bool,
    /// Shard 0 serves the barrier over TLS with this certificate chain (PEM), with
    /// --barrier-tls-key; WLRUN_BARRIER_TLS_CERT when absent. Give every shard the same
    /// barrier TLS options: any of them turns TLS on.
    #[arg(long, value_name = "FILE")]
    pub barrier_tls_cert: Option<String>,
    /// The key of --barrier-tls-cert (PEM); WLRUN_BARRIER_TLS_KEY when absent.
    #[arg(long, value_name = "FILE")]
    pub barrier_tls_key: Option<String>,
    /// The CA the other shards verify shard 0's certificate with (chain and the --barrier
    /// host name); WLRUN_BARRIER_TLS_CA when absent; the system's trust store without either.
    #[arg(long, value_name = "FILE")]
    pub barrier_tls_ca: Option<String>,
    /// How long shards wait for each other (to join, at a barrier) before the run fails
    /// naming the missing ones: `120s`, `2m`, `500ms`.
    #[arg(long, value_name = "TIME", default_value = "120s")]
    pub barrier_timeout: String,
}

/// The options that choose values and cells; applied before lowering and checked like values
/// written in the file.
#[derive(Clone, Debug, Default, Args)]
pub struct Select {
    /// Override a param or pin a matrix axis: `--param hosts=100`.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Keep only the cells where an axis has a value: `--only protocol=qwp` (repeatable).
    #[arg(long, value_name = "AXIS=VALUE")]
    pub only: Vec<String>,
    /// Override the workload's seed.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `wlrun k8s`: what the manifests run and how.
#[derive(Debug, Args)]
pub struct K8sArgs {
    /// The workload file (.wl).
    pub file: PathBuf,
    /// The number of shards: pods of the Indexed Job, each running `wlrun run` on its share.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub shards: u32,
    /// The container image holding wlrun (the repository's Containerfile builds one).
    #[arg(long)]
    pub image: String,
    /// The name of every object (a DNS label: lowercase letters, digits and `-`, starting with
    /// a letter); defaults to the file's stem made into one.
    #[arg(long)]
    pub name: Option<String>,
    /// The namespace of every object; without it, kubectl's current one.
    #[arg(long)]
    pub namespace: Option<String>,
    /// CPU each shard requests (a Kubernetes quantity: `2`, `1500m`).
    #[arg(long, default_value = "1")]
    pub cpu: String,
    /// Memory each shard requests (a Kubernetes quantity: `1Gi`, `512Mi`).
    #[arg(long, default_value = "1Gi")]
    pub memory: String,
    /// The most memory a shard may use before it is OOM-killed; the request (--memory) by
    /// default, so the node never runs short because of a shard.
    #[arg(long, value_name = "QUANTITY")]
    pub memory_limit: Option<String>,
    /// A CPU limit; none by default: the kernel enforces one by throttling the shard in bursts,
    /// which shows up as latency that is not the server's.
    #[arg(long, value_name = "QUANTITY")]
    pub cpu_limit: Option<String>,
    /// The Job's activeDeadlineSeconds (`90m`, `2h`, `1h30m`, `5400s`): Kubernetes stops the
    /// shards and fails the Job then. Derived from the plan when every phase is bounded in
    /// time; required when one is not.
    #[arg(long, value_name = "DURATION")]
    pub deadline: Option<String>,
    /// How long Kubernetes keeps the finished Job and its pods (their logs, exit codes and
    /// termination messages) before deleting them, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400)]
    pub ttl_after_finished: u32,
    /// Run the shards only on nodes with this label: `pool=loaders` (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// Let the shards run on nodes with this taint, written as kubectl writes it:
    /// `key=value:Effect`, or `key:Effect` for any value (repeatable).
    #[arg(long, value_name = "TAINT")]
    pub toleration: Vec<String>,
    /// A Secret of type kubernetes.io/dockerconfigjson to pull the image with (repeatable).
    #[arg(long, value_name = "NAME")]
    pub image_pull_secret: Vec<String>,
    /// The ServiceAccount the pods run as; without it the namespace's default, with its API
    /// token not mounted (the shards never call the API).
    #[arg(long, value_name = "NAME")]
    pub service_account: Option<String>,
    /// Have each shard serve its live metrics (OpenMetrics at /metrics) on this port
    /// (`wlrun run --metrics-listen 0.0.0.0:PORT`). The pods carry Prometheus' scrape
    /// annotations and a `metrics` port either way, on 9464 without this flag.
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub metrics_port: Option<u16>,
    /// The port shard 0 listens on for the barrier, reached through the headless Service.
    #[arg(long, value_name = "PORT", default_value_t = 7471, value_parser = clap::value_parser!(u16).range(1..))]
    pub barrier_port: u16,
    /// A ReadWriteMany PersistentVolumeClaim the shards write their run directories to
    /// (`<name>/shard-<i>`), read back through a collector pod; without it each shard keeps
    /// its directory in the pod and waits --linger seconds for `kubectl cp`.
    #[arg(long, value_name = "CLAIM")]
    pub results_claim: Option<String>,
    /// Without --results-claim: how long each shard's pod stays up after its run so that its
    /// directory can be copied out, seconds.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 3600,
        conflicts_with = "results_claim"
    )]
    pub linger: u32,
    /// A PersistentVolumeClaim holding the workload's files (mounted read-only at /workload)
    /// instead of a ConfigMap: for inputs over the ConfigMap's 1 MiB.
    #[arg(long, value_name = "CLAIM")]
    pub files_claim: Option<String>,
    #[command(flatten)]
    pub select: Select,
}
