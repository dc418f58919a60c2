// `setup sql` alone is the whole setup: a cell with no statement for its dialect sets nothing
// up (a warning), and statements for a dialect whose target has no endpoint that takes SQL
// have nowhere to run.
target quest { dialect questdb  ilp_tcp "tcp://127.0.0.1:9009" }
target pg { dialect postgres  pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" }
schema t { rows 10  field k: long = seq() }
ingest a {
  into pg via pg
  rows t
  setup sql questdb "CREATE TABLE t (k LONG)"
}
ingest b {
  into quest via ilp_tcp
  rows t
  setup sql questdb "CREATE TABLE t (k LONG)"
}
