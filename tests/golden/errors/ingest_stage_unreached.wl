// 1,000 rows at 100/s then 200/s: every row is due by 7.5s, so the third stage is never
// reached. A warning, at the first stage the rows cannot reach.
target t { null }

schema s {
  series host: symbol = format("h%d", n) for n in 0..10
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 100s
}

ingest staged {
  into t via null
  rows s
  stage 5s rate 100/s
  stage 5s rate 200/s
  stage 5s rate 400/s
  stage 5s rate 800/s
}
