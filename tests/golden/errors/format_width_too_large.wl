// A field width no value can fill: `check` accepts it, and `wlrun gen` then panics with
// "capacity overflow" (or tries to allocate a terabyte for every value).
target db { sqlite "bench.db" }
schema s {
  rows 10
  field host: varchar = format("host_%1000000000000d", seq())
}
ingest load { into db via sqlite  rows s }
