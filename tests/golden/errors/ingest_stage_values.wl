// An ingest's stage: no `workers` (its connections are its series routing), a rate it must
// have, fixed arrivals only, and the values a run's stage takes (a warm-up shorter than the
// stage, a positive duration and rate). Every mistake shows at once.
target t { null }

schema s {
  series host: symbol = format("h%d", n) for n in 0..10
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}

ingest staged {
  into t via null
  rows s
  workers 2
  stage 10s rate 100/s workers 0
  stage 10s
  stage 10s rate 100/s poisson
  stage 10s rate 100/s to 200/s poisson
  stage 5s rate 100/s warmup 5s
  stage 0s rate 0/s
}
