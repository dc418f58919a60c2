// Columns repeated by a loop: YCSB's ten fields, field0 .. field9, each from a stream of its own.
param fields = 10

target db { sqlite "ycsb.db" }

schema usertable {
  rows 1000
  field ycsb_key: varchar = format("user%d", seq())
  for i in 0..fields {
    field field${i}: varchar = format("f%d:%d", i, uniform(0, 1000))
  }
}

ingest load {
  into db via sqlite
  rows usertable
}
