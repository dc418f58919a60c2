// A ksqlDB pull query for a random key, drawn per request without a hook: the request's `$N`
// are bound as a query's placeholders are.
target ksql {
  http "http://127.0.0.1:8088" {
    headers { "Accept": "application/vnd.ksql.v1+json" }
  }
}

run pulls {
  against ksql.http
  request POST "/query" body "{\"ksql\":\"SELECT * FROM ORDERS WHERE ORDERID = $1;\",\"streamsProperties\":{}}"
  let shard = uniform(0, 3)
  bind $1 = uniform(0, 99999) * 4 + shard
  connections 8
  duration 10s
}
