// The realism clauses' mistakes, all reported at once.
schema trucks {
  series name: symbol = format("truck_%d", n) for n in 0..4
  field fuel: double = uniform(0.0, 1.0)
  timestamp time = every 10s from 2016-01-01T00:00:00Z for 1h
  null one of [fuel, speed, time] 10%
  null one of [name] 150%
  late 19% by 0 rows
  late 5% by 3 rows
}
