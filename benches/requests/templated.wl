// wlrun with a request template: the key of every request drawn by `bind $1` (the equivalent of
// pull.lua and of pull.rhai, without a script). The bench fills in @PORT@, @CONNECTIONS@ and
// @SECONDS@.
workload b { seed 7 }

target nginx {
  http "http://127.0.0.1:@PORT@" {
    headers { "Accept": "application/vnd.ksql.v1+json", "Content-Type": "application/vnd.ksql.v1+json" }
  }
}

run templated {
  against nginx.http
  request POST "/query" body "{\"ksql\":\"SELECT * FROM ORDERS_TABLE WHERE ORDERID = $1;\",\"streamsProperties\":{}}"
  bind $1 = uniform(0, 100000)
  connections @CONNECTIONS@
  duration @SECONDS@s
  expect status 200
}
