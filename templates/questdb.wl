// A starter benchmark for QuestDB, written by `wlrun init --kind questdb`.
//
//   wlrun check questdb.wl     check it: nothing is sent
//   wlrun plan  questdb.wl     see what it will do: cells, phases, row counts
//   wlrun questdb.wl           run it; `--out runs/first` also keeps report.json, .csv, .html
//
// It loads six hours of readings from 100 sensors into the table `readings` over QWP (the
// QuestDB Wire Protocol: binary, columnar, over WebSocket), waits until a `count(*)` over the
// PostgreSQL wire sees them, then sends two queries as fast as 4 connections go for 5 seconds
// and judges them against thresholds.
//
// QuestDB is on this machine with its default ports unless QDB_HOST says otherwise; its
// PostgreSQL-wire password is QDB_PASSWORD (default `quest`). The values read from the
// environment never appear in a plan or a report. Every block is described in
// docs/language.md.

// The seed fixes every generated value and every query parameter: two runs of this file send
// the same rows and the same queries, so their figures compare.
workload questdb_starter {
  seed 42
  description "100 sensors x 6 hours into QuestDB, then two queries for 5 seconds"
}

// Params are named values that `--param NAME=VALUE` overrides: `--param sensors=1000` loads a
// ten times bigger table, `--param p99_limit=20ms` promises a tighter latency.
param sensors   = 100
param start     = 2024-01-01T00:00:00Z
param p99_limit = 500ms

// The system under test and its endpoints: one target, several ways in. The `${...}` parts of
// the URLs are filled in when the run starts. `ilp_http "http://...:9000"` and
// `ilp_tcp "tcp://...:9009"` would load over InfluxDB line protocol instead.
target db {
  dialect questdb
  qwp  "ws://${env("QDB_HOST", "127.0.0.1")}:9000"
  pg   "postgres://admin:${env("QDB_PASSWORD", "quest")}@${env("QDB_HOST", "127.0.0.1")}:8812/qdb"
  http "http://${env("QDB_HOST", "127.0.0.1")}:9000" { path "/exec" }   // REST queries
  // How `verify visible` and `require rows(...)` count a table.
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

// What one row looks like and how each value is generated: one series per sensor, a reading
// every 10 s for six hours (100 x 2,160 = 216,000 rows). `setup recreate` below creates the
// table from these columns.
schema readings {
  table "readings"
  series    sensor:      symbol  = format("sensor_%03d", n) for n in 0..sensors
  tag       site:        symbol  = pick(["north", "south", "east", "west"])   // once per sensor
  field     temperature: double  = walk(uniform(15.0, 25.0), normal(0.0, 0.2), clamp = 0..50)
  field     humidity:    double  = uniform(20.0, 80.0) null 1%               // 1% of rows null
  timestamp ts:          timestamp(us) = every 10s from start for 6h
}

// Load the rows: drop and create the table (over the PostgreSQL wire: `wlrun plan` says
// `ddl via db.pg`), send batches of 10,000 rows over 2 connections, each acknowledged by the
// server, then wait until `count(*)` sees every row: QuestDB applies rows from its write-ahead
// log a little after it acknowledges them.
ingest load {
  into db via qwp
  rows readings
  batch 10_000 rows
  workers 2
  ack per_batch
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
// It goes over the PostgreSQL wire; `against db via [pg, http]` would make one cell per
// endpoint.
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
