run queries {
  against questdb via [pg, http, qwp]
  queries tsbsq.*, extra.q weight 2, local weight 0.5
  workers 1
  count 1000 per query
  warmup 20
  repeat 3
  require rows(cpu) > 0
  check same results across endpoints
  expect error_rate < 0.1%
  expect p99 <= 50ms
}
run pull {
  against ksql.http
  request pull.request
  connections 1
  duration 5s
  warmup 1s
  rate 5000/s poisson
  expect status 200
  expect status [200, 204]
}
run fixed {
  against t via pg
  queries q
  count 10
  rate 100/s fixed
  rate 1/min
}
