target db { sqlite "bench.db" }
schema s {
  rows 10
  field host: varchar = pick(["a", "b"])
  field x: varchar = "v_${sample([1, 2, 3], 2)}"
}
ingest load { into db via sqlite  rows s }
