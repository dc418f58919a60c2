target db { sqlite "bench.db" }
schema s {
  rows 10
  field host: varchar = pick(["a", "b"])
  field x: long = std.uniform(1, 5)
}
ingest load { into db via sqlite  rows s }
