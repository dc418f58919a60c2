target db { sqlite "bench.db" }
schema s {
  rows 10
  field host: varchar = pick(["a", "b"])
  field x: varchar = "v_${[1, 2]}"
}
ingest load { into db via sqlite  rows s }
