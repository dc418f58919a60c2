// YCSB's choosers: parameters out of range, and `issued` outside a query run or naming a query
// the run does not send.
target db { sqlite "bench.db" }
schema s {
  rows 10
  field a: long = scrambled_zipfian(10, 10)
  field b: long = zipfian(0, 100, theta = 1.5)
  field c: long = latest(2, seq())
  field d: long = hotspot(0, 3, hot_data = 0.1)
  field e: long = exponential_key(999, 0)
  field f: varchar = ycsb_key(1.5)
  field g: varchar = ycsb_key(seq(), zero_padding = 65)
  field h: varchar = ycsb_value(-1)
  field i: long = issued(read)
  field j: long = zipfian(0, 5_000_000_000)
  field k: long = exponential_key(99, 10, percentile = 100)
}
query read {
  sql "SELECT $1, $2, $3"
  bind $1 = issued(other)
  bind $2 = issued(s)
  bind $3 = issued("read")
}
query other { sql "SELECT 1" }
ingest load { into db via sqlite  rows s }
run r { against db.sqlite  queries read  count 10 }
