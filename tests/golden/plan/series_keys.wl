// How the listing counts rows: series x timestamps, timestamps alone without a series key,
// and `rows N` with and without one. A schema with no series key is not "1 series".
target t { null }

schema keyed_in_time {
  series host: symbol = format("h%d", n) for n in 0..3
  field  v: long = uniform(0, 9)
  timestamp ts = every 1m from 2016-01-01T00:00:00Z for 1h
}

schema unkeyed_in_time {
  field  v: long = uniform(0, 9)
  timestamp ts = every 1m from 2016-01-01T00:00:00Z for 1h
}

schema keyed_rows {
  series host: symbol = format("h%d", n) for n in 0..3
  rows 10_000
  field  v: long = uniform(0, 9)
}

schema unkeyed_rows {
  rows 10_000
  field  v: long = uniform(0, 9)
}

ingest a { into t via null  rows keyed_in_time }
ingest b { into t via null  rows unkeyed_in_time }
ingest c { into t via null  rows keyed_rows }
ingest d { into t via null  rows unkeyed_rows limit 500 }
