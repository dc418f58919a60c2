// YCSB's key choosers, key names and field values, in a schema (the load: key numbers in
// order, named by their hash, ten fields of 100 bytes) and in binds (workload D's latest reads
// over the keys its inserts add, workload A's scrambled zipfian updates, and the others).

workload ycsb_keys { seed 7 }

param records = 1000

target pg {
  dialect postgres
  pg "postgres://postgres@127.0.0.1:5432/ycsb"
}

schema usertable {
  table "usertable"
  rows records
  field ycsb_key: varchar = ycsb_key(seq())
  field field0:   varchar = ycsb_value(100)
  field field1:   varchar = ycsb_value(100)
  field ordered:  varchar = ycsb_key(seq(), ordered = true, zero_padding = 8, prefix = "k")
  field zipf:     long    = scrambled_zipfian(0, records + 1)
  field gray:     long    = zipfian(0, 100, theta = 0.5)
  field hot:      long    = hotspot(0, records, hot_data = 10%, hot_ops = 0.9)
  field recent:   long    = latest(records, seq())
  field expo:     long    = exponential_key(records - 1, 857.142857, percentile = 95)
  field turn:     long    = sequential(10, 20)
}

query read {
  sql "SELECT * FROM usertable WHERE ycsb_key = $1"
  bind $1 = ycsb_key(latest(records, issued(insert)))
}

query insert {
  sql "INSERT INTO usertable (ycsb_key, field0) VALUES ($1, $2)"
  bind $1 = ycsb_key(records + seq())
  bind $2 = ycsb_value(100)
}

query update {
  sql "UPDATE usertable SET field0 = $2 WHERE ycsb_key = $1"
  bind $1 = ycsb_key(scrambled_zipfian(0, records + 100, last = records - 1 + issued(insert)))
  bind $2 = ycsb_value(100)
}

query scan {
  sql "SELECT * FROM usertable WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2"
  bind $1 = ycsb_key(exponential_key(records - 1 + issued(insert), 857.142857))
  bind $2 = 1 + uniform(0, 100)
}

query others {
  sql "SELECT $1, $2, $3"
  bind $1 = hotspot(0, records)
  bind $2 = sequential(0, records)
  bind $3 = zipfian(1, 101)
}

ingest load {
  into pg via pg
  rows usertable
}

run workload_d {
  against pg.pg
  queries read weight 95, insert weight 5, update weight 10, scan weight 5, others weight 1
  count 1000
}
