// A starter benchmark for PostgreSQL, written by `wlrun init --kind postgres`.
//
//   wlrun check postgres.wl     check it: nothing is sent
//   wlrun plan  postgres.wl     see what it will do: cells, phases, row counts
//   wlrun postgres.wl           run it; `--out runs/first` also keeps report.json, .csv, .html
//
// It loads six hours of readings from 100 sensors into the table `readings` with COPY, then
// sends two queries as fast as 4 connections go for 5 seconds and judges them against
// thresholds.
//
// Where the server is and who logs in come from libpq's environment variables, as for psql:
// PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE, with the local defaults written below.
// The values read from the environment never appear in a plan or a report. Every block is
// described in docs/language.md.

// The seed fixes every generated value and every query parameter: two runs of this file send
// the same rows and the same queries, so their figures compare.
workload postgres_starter {
  seed 42
  description "100 sensors x 6 hours into PostgreSQL, then two queries for 5 seconds"
}

// Params are named values that `--param NAME=VALUE` overrides: `--param sensors=1000` loads a
// ten times bigger table, `--param p99_limit=20ms` promises a tighter latency.
param sensors   = 100
param start     = 2024-01-01T00:00:00Z
param p99_limit = 500ms

// The system under test and its endpoints. `pg` speaks the PostgreSQL wire protocol; the
// `${...}` parts of the URL are filled in when the run starts.
target db {
  dialect postgres
  pg "postgres://${env("PGUSER", "postgres")}:${env("PGPASSWORD", "postgres")}@${env("PGHOST", "127.0.0.1")}:${env("PGPORT", 5432)}/${env("PGDATABASE", "postgres")}" {
    insert copy                // load rows with COPY; `insert insert` sends INSERT statements
    // TLS is used when the server offers it, without verifying it (`sslmode prefer`, the
    // default, and the run warns); `sslmode "verify-full"` with `tls_ca` verifies (docs/tls.md).
  }
  // How `verify visible` and `require rows(...)` count a table.
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

// What one row looks like and how each value is generated: one series per sensor, a reading
// every 10 s for six hours (100 x 2,160 = 216,000 rows). `setup recreate` below creates the
// table from these columns.
schema readings {
  table "readings"
  series    sensor:      varchar = format("sensor_%03d", n) for n in 0..sensors
  tag       site:        varchar = pick(["north", "south", "east", "west"])   // once per sensor
  field     temperature: double  = walk(uniform(15.0, 25.0), normal(0.0, 0.2), clamp = 0..50)
  field     humidity:    double  = uniform(20.0, 80.0) null 1%               // 1% of rows null
  timestamp ts:          timestamp(us) = every 10s from start for 6h
}

// Load the rows: drop and create the table, send batches of 1,000 rows over 2 connections, then
// wait until `count(*)` sees every row.
ingest load {
  into db via pg
  rows readings
  batch 1_000 rows
  workers 2
  setup recreate
  teardown keep              // keep the table for the queries below (and for you)
  verify visible within 30s
}

// Queries are SQL with `$n` placeholders, each bound to a generator drawn anew per query.

// The last reading of one random sensor. `sample` draws from the schema's sensors; a list bind
// is written into the SQL as `('sensor_007')`, hence `IN $1`.
query latest {
  label "latest reading of one sensor"
  sql "SELECT ts, temperature FROM readings WHERE sensor IN $1 ORDER BY ts DESC LIMIT 1"
  bind $1 = sample(readings.sensor, 1)
}

// Mean temperature per site over a random 10-minute window: `window` draws its start.
query site_means {
  label "mean temperature per site, random 10m window"
  sql "SELECT site, avg(temperature) FROM readings
       WHERE ts >= $1 AND ts < $2
       GROUP BY site"
  let w = window(start, start + 6h, 10m)
  bind $1 = w.start
  bind $2 = w.end
}

// The measured run: 4 connections, each sending its next query as soon as the last one is
// answered (closed loop), for 5 seconds after a 1-second warm-up, so the figures say how fast
// the server answers this mix. `rate 200/s` would make it open loop instead: queries due on a
// schedule, latency counted from when each was due, so a slow server cannot hide its queue.
run queries {
  against db.pg
  queries latest, site_means   // taking turns
  workers 4
  warmup 1s                    // sent first, not measured
  duration 5s
  require rows(readings) > 0   // refuse to measure an empty table
  // Thresholds: a run that misses one fails (exit 1) and says which.
  expect error_rate < 1%
  expect p99 < p99_limit
}
