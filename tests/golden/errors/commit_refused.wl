// `commit every N rows`: refused above the server's cap on uncommitted rows (the default
// 1,000,000, or the endpoint's `max_uncommitted_rows`), past it at the batch boundary it falls
// on, and on an endpoint that is not QWP; fewer rows than a batch is a warning.
target questdb {
  qwp "ws://127.0.0.1:9000"
  ilp_tcp "tcp://127.0.0.1:9009"
  pg "postgres://admin:quest@127.0.0.1:8812/qdb"
}
target raised {
  qwp "ws://127.0.0.1:9000" { max_uncommitted_rows 2_000_000 }
  pg "postgres://admin:quest@127.0.0.1:8812/qdb"
}
schema s {
  table "s"
  rows 10
  field a: long = seq()
}
ingest over_default_cap {
  into questdb via qwp  rows s
  commit every 2_000_000 rows
}
ingest over_raised_cap {
  into raised via qwp  rows s
  commit every 3_000_000 rows
}
ingest past_the_cap_at_a_batch_boundary {
  into questdb via qwp  rows s
  batch 300_000 rows
  commit every 950_000 rows
}
ingest not_qwp {
  into questdb via ilp_tcp  rows s
  commit every 100_000 rows
}
ingest less_than_a_batch {
  into questdb via qwp  rows s
  batch 1_000 rows
  commit every 500 rows
}
ingest unknown_policy {
  into questdb via qwp  rows s
  commit sometimes
}
