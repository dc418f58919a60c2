// `commit`: per batch, every N rows, or a value (an axis).
ingest deferred {
  into questdb via qwp
  rows tsbs.cpu
  commit every 100_000 rows
}
ingest each {
  into questdb via qwp
  rows tsbs.cpu
  commit per_batch
}
ingest from_axis {
  into questdb via protocol
  rows tsbs.cpu
  commit commit
}
ingest counted {
  into questdb via qwp
  rows tsbs.cpu
  commit every rows_per_commit * 2 rows
}
