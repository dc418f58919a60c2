// wlrun without a hook: one fixed ksqlDB pull query (the equivalent of post.lua). The bench
// fills in @PORT@, @CONNECTIONS@, @SECONDS@ and @LOAD@: nothing for the closed loop of the wrk
// comparisons, `rate N/s fixed` for the open-loop section.
workload b { seed 7 }

target nginx {
  http "http://127.0.0.1:@PORT@" {
    headers { "Accept": "application/vnd.ksql.v1+json", "Content-Type": "application/vnd.ksql.v1+json" }
  }
}

run plain {
  against nginx.http
  request POST "/query" body "{\"ksql\":\"SELECT * FROM ORDERS_TABLE WHERE ORDERID = 42;\",\"streamsProperties\":{}}"
  connections @CONNECTIONS@
  duration @SECONDS@s
  @LOAD@
  expect status 200
}
