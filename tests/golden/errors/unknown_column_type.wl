target db { sqlite "bench.db" }
schema s {
  rows 10
  field v: integr = seq()
}
ingest load { into db via sqlite  rows s }
