target db { sqlite "bench.db" }
schema s {
  rows 10
  field a: long = seq() null 150%
}
ingest load { into db via sqlite  rows s }
