// A schema's realism layer, as TSBS iot generates it: one field of 10% of the rows null (fuel
// listed twice, so twice as often), one tag of 1%, and 19% of the rows sent late.
target q { ilp_tcp "tcp://127.0.0.1:9009" }

schema trucks {
  series name: symbol = format("truck_%d", n) for n in 0..4
  tag fleet: symbol = pick(["East", "West"])
  field fuel: double = uniform(0.0, 1.0)
  field load: double = uniform(0.0, 5000.0)
  timestamp time = every 10s from 2016-01-01T00:00:00Z for 1h
  null one of [fuel, load, fuel] 10%
  null one of [name, fleet] 1%
  late 19% by 12 rows
}

ingest load {
  into q via ilp_tcp
  rows trucks
  setup shared
}
