// Quickstart: a complete benchmark that runs on any machine, with no database server.
//
//   wlrun check examples/quickstart.wl     check it (nothing is sent)
//   wlrun plan  examples/quickstart.wl     see what it will do: cells, phases, row counts
//   wlrun examples/quickstart.wl           run it
//
// It loads one hour of the TSBS cpu-only data set for 10 hosts (3,600 rows) into an embedded
// SQLite database file at a fixed rate over 1.5 s, then measures three small queries with two
// workers for 2 s: a few seconds, so that every figure it prints per second is a rate (a span
// under 0.1 s is "too short to be a rate").

// 1. Data. The stdlib's TSBS cpu-only schema, at a small scale: its params are set here.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, start = start, end = start + 1h)

// 2. The workload header: the seed fixes every generated value and every query parameter, so
// two runs of this file send exactly the same data and the same queries.
workload quickstart {
  seed 42
  description "TSBS cpu-only, 10 hosts x 1 hour, into embedded SQLite, then 3 queries"
}

// 3. Params: named values, overridable from the command line (`--param hosts=100`).
param hosts = 10
param start = 2016-01-01T00:00:00Z

// 4. The target: the system under test and its endpoints. `sqlite` is built in: the database
// is the file quickstart.db, which the run leaves behind for you to inspect with sqlite3.
target local {
  sqlite "quickstart.db" { journal wal  synchronous normal }
}

// 5. Ingest: generate the rows of `tsbs.cpu` and write them in batches, then check that a
// `count(*)` sees them all. `rate` sends them on a fixed schedule (open loop): each host's
// 360 readings in 1.5 s, however many hosts `--param hosts=N` asks for.
ingest load {
  into local via sqlite
  rows tsbs.cpu
  batch 200 rows
  rate hosts * 240/s
  workers 1                  // SQLite has a single writer
  setup recreate             // drop and recreate the table first
  teardown keep              // keep the rows for the queries below (and for you)
  verify visible within 10s
}

// 6. Queries: SQL with `$n` placeholders, each bound to a generator, drawn anew for every query.

// The three hosts with the highest mean user cpu. No parameters.
query busiest_hosts {
  label "top 3 hosts by mean usage_user"
  sql "SELECT hostname, avg(usage_user) AS mean_usage_user
       FROM cpu
       GROUP BY hostname
       ORDER BY mean_usage_user DESC
       LIMIT 3"
}

// Max user cpu of 2 random hosts in a random 10-minute window. `window` draws the window (with
// `.start` and `.end`); `sample` draws 2 distinct hostnames of the schema's series, and a list
// bind is written into the SQL as `('host_3','host_7')`, hence `IN $1`.
query hosts_window {
  label "max usage_user, 2 random hosts, random 10m window"
  sql "SELECT hostname, max(usage_user) AS max_usage_user
       FROM cpu
       WHERE hostname IN $1 AND timestamp >= $2 AND timestamp < $3
       GROUP BY hostname"
  let w = window(start, start + 1h, 10m)
  bind $1 = sample(tsbs.cpu.hostname, 2)
  bind $2 = w.start
  bind $3 = w.end
}

// How many readings exceed a random threshold between 50 and 99.
query over_threshold {
  label "readings with usage_user over a random threshold"
  sql "SELECT count(*) FROM cpu WHERE usage_user > $1"
  bind $1 = uniform(50, 100)
}

// 7. The run: which queries, over which endpoint, for how long, with how many workers. Each
// worker sends its next query when the last one's rows are read (closed loop), taking the
// three in turn.
run explore {
  against local.sqlite
  queries busiest_hosts, hosts_window, over_threshold
  workers 2
  duration 2s
  require rows(cpu) > 0      // refuse to measure an empty table
}
