schema cpu {
  table "cpu"
  series hostname: symbol = format("host_%d", n) for n in 0..hosts
  tag region: symbol = pick(["a", "b"]) per series
  tag rack: varchar = string(uniform(0, 100)) per row null 5%
  field usage: long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field maybe: double = uniform(0.0, 1.0) null 0.5 per row
  timestamp ts: timestamp(ns) = every 10s from start to end
}
schema events {
  table "events"
  rows 1_000
  field id: long = seq(start = 1)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}
schema open_ended {
  timestamp timestamp: timestamp = every 1m from 2016-01-01T00:00:00Z
}
schema nothing {}
