query q {
  label "max usage, ${hosts} hosts"
  sql "SELECT max(usage_user) FROM cpu WHERE hostname IN $1 AND ts >= $2 AND ts < $3"
  let w = window(start, end, 1h)
  bind $1 = sample(cpu.cpu.hostname, 8)
  bind $2 = w.start
  bind $3 = w.end
  route by $1
  expect p99 < 20ms
}
query from_csv {
  sql "SELECT * FROM t WHERE host = $1 AND ts >= $2"
  binds from csv "params.csv" (hostname text, start_time timestamp,)
  expect rows > 0
}
query plain { sql "SELECT 1" }
