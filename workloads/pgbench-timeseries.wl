// The xvello/pgbench "homework" benchmark: per-minute min/max of one host's cpu usage over a
// 1-hour window, with query parameters read from a CSV and every host pinned to one connection.
//
// What the original tool (github.com/xvello/pgbench) does, and how this file reproduces it:
//   * Table `cpu_usage(ts TIMESTAMPTZ, host TEXT, usage DOUBLE PRECISION)` in database
//     `homework`, loaded with `\COPY ... CSV HEADER`. Here: schema `cpu_usage`, loaded with COPY.
//     The original runs TimescaleDB 2.6 (PostgreSQL 14) with the table as a hypertable on `ts`;
//     this file targets vanilla PostgreSQL, so it buckets with `date_trunc` (see the query).
//   * Its data CSV is not in the repository. Copies of the same assignment show about 360 rows per host
//     per hour (10 s cadence), about 7,200 rows per hour (so about 20 hosts) over 2017-01-01 and
//     2017-01-02. `hosts` defaults to 20 accordingly: 20 x 17,280 = 345,600 rows.
//   * The shipped `query_params.csv` has 200 one-hour windows over 10 hosts (host_000000 ..
//     host_000009). Here it is `pgbench-query-params.csv`, generated from schema `query_params`
//     with `wlrun gen`; the original file has the same header and can be dropped in instead.
//   * Each CSV row runs once, as a statement prepared once per connection; the end bound is
//     inclusive and min comes before max.
//   * "Hostname locality": a host's queries always run on the same connection, in file order
//     (the original hashes the hostname with FNV-1 64 modulo the concurrency). `route by $1`.
//   * 4 connections (its --concurrency default); latency is timed around each execution.

workload pgbench_timeseries {
  seed 123
  description "xvello/pgbench: per-minute min/max of cpu_usage for one host over 1 hour"
}

param hosts       = 20    // hosts in the data (host_000000 ..)
param query_hosts = 10    // hosts the query windows are drawn from, as in query_params.csv

target postgres {
  dialect postgres
  pg "postgres://postgres:${env("PGPASSWORD", "postgres")}@127.0.0.1:5432/homework" {
    insert     copy        // load with COPY, like \COPY
    statements prepared    // prepare the query once per connection, like the original
  }
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

// The data: one reading per host every 10 s for two days, columns in the original table's order.
// The original values' distribution is unknown; usage is a percentage following the TSBS cpu
// walk (start U[0, 100), N(0, 1) steps, clamped to [0, 100]), kept as a double.
schema cpu_usage {
  table "cpu_usage"
  timestamp ts:    timestamp(us) = every 10s from 2017-01-01T00:00:00Z to 2017-01-03T00:00:00Z
  series    host:  varchar       = format("host_%06d", n) for n in 0..hosts
  field     usage: double        = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
}

// The query parameters (source of pgbench-query-params.csv): 200 one-hour windows, each for a
// random one of the first 10 hosts, starting at a random whole second of the two days (at the
// latest 2017-01-02 23:00:00, so every window lies inside the data), ending 1 hour later.
schema query_params {
  table "query_params"
  rows 200
  field hostname:   varchar       = format("host_%06d", uniform(0, query_hosts))
  field start_time: timestamp(us) = 2017-01-01T00:00:00Z + 1s * uniform(0, 47 * 3600 + 1)
  field end_time:   timestamp(us) = start_time + 1h
}

ingest load {
  into postgres via pg
  rows cpu_usage
  batch 10_000 rows
  workers 1                  // one COPY stream, like \COPY
  setup recreate
  teardown keep
  verify visible within 30s
}

// The original uses TimescaleDB's `time_bucket('1 minute', ts)`. For 1-minute buckets this is
// the same as `date_trunc('minute', ts)`, which also works on vanilla PostgreSQL. On TimescaleDB
// either form returns the same rows.
query cpu_buckets {
  label "cpu-buckets"
  sql "SELECT date_trunc('minute', ts) AS \"bucket\", min(usage), max(usage)
       FROM cpu_usage
       WHERE host = $1 AND ts >= $2 AND ts <= $3
       GROUP BY bucket
       ORDER BY bucket ASC"
  // The original keeps the timestamps as text (`YYYY-MM-DD HH:MM:SS`, no zone); they are UTC.
  binds from csv "pgbench-query-params.csv" (hostname   text,
                                             start_time timestamp,
                                             end_time   timestamp)
  route by $1
}

run homework {
  against postgres.pg
  queries cpu_buckets
  workers 4                  // --concurrency
  count 200                  // one pass over the 200 rows of the CSV
  require rows(cpu_usage) > 0
}
