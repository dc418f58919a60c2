// A starter benchmark for SQLite, written by `wlrun init --kind sqlite`: it needs no server.
//
//   wlrun check sqlite.wl     check it: nothing is sent
//   wlrun plan  sqlite.wl     see what it will do: cells, phases, row counts
//   wlrun sqlite.wl           run it; `--out runs/first` also keeps report.json, .csv, .html
//
// It loads a day of readings from 20 sensors into the table `readings` of an embedded
// SQLite database, then sends two queries as fast as 2 connections go for 5 seconds and
// judges them against thresholds. The database is the file named by SQLITE_DB, `bench.db` in the current directory
// by default; the run leaves it behind for you to look into with `sqlite3 bench.db`. Every
// block is described in docs/language.md.

// The seed fixes every generated value and every query parameter: two runs of this file send
// the same rows and the same queries, so their figures compare.
workload sqlite_starter {
  seed 42
  description "20 sensors x 1 day into SQLite, then two queries for 5 seconds"
}

// Params are named values that `--param NAME=VALUE` overrides: `--param sensors=200` loads a
// ten times bigger table, `--param p99_limit=20ms` promises a tighter latency.
param sensors   = 20
param start     = 2024-01-01T00:00:00Z
param p99_limit = 500ms

// The system under test and its endpoints. `sqlite` is built into wlrun: its "URL" is a file
// path, relative to the current directory, or ":memory:". The `${...}` part is filled in when
// the run starts.
target db {
  dialect sqlite
  sqlite "${env("SQLITE_DB", "bench.db")}" {
    journal     wal            // readers do not wait for the writer
    synchronous normal
  }
  // How `verify visible` and `require rows(...)` count a table.
  count rows via sqlite sql "SELECT count(*) FROM ${table}"
}

// What one row looks like and how each value is generated: one series per sensor, a reading
// every 10 s for a day (20 x 8,640 = 172,800 rows). `setup recreate` below creates the table
// from these columns.
schema readings {
  table "readings"
  series    sensor:      varchar = format("sensor_%03d", n) for n in 0..sensors
  tag       site:        varchar = pick(["north", "south", "east", "west"])   // once per sensor
  field     temperature: double  = walk(uniform(15.0, 25.0), normal(0.0, 0.2), clamp = 0..50)
  field     humidity:    double  = uniform(20.0, 80.0) null 1%               // 1% of rows null
  timestamp ts:          timestamp(us) = every 10s from start for 1d
}

// Load the rows: drop and create the table, write batches of 1,000 rows, then check that
// `count(*)` sees every row.
ingest load {
  into db via sqlite
  rows readings
  batch 1_000 rows
  workers 1                  // SQLite has a single writer
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
  let w = window(start, start + 1d, 10m)
  bind $1 = w.start
  bind $2 = w.end
}

// The measured run: 2 connections, each sending its next query as soon as the last one is
// answered (closed loop), for 5 seconds after a 1-second warm-up, so the figures say how fast
// SQLite answers this mix. `rate 20/s` would make it open loop instead: queries due on a
// schedule, latency counted from when each was due, so a slow server cannot hide its queue.
// SQLite runs inside wlrun, so a query's time is the client's own CPU, and the table has no
// index: every query reads it whole.
run queries {
  against db.sqlite
  queries latest, site_means   // taking turns
  workers 2
  warmup 1s                    // sent first, not measured
  duration 5s
  require rows(readings) > 0   // refuse to measure an empty table
  // Thresholds: a run that misses one fails (exit 1) and says which.
  expect error_rate < 1%
  expect p99 < p99_limit
}
