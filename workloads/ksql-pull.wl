// ksqlDB pull queries at a fixed arrival rate: the wrk + Lua benchmark, done honestly.
//
// Reproduces a published wrk run against ksqlDB's REST API: one connection sending
// `POST /query` pull queries (`SELECT * FROM ORDERS_TABLE WHERE ORDERID = <key>;`) for 5 seconds.
// That run reported 6,137 requests/s although every one of its 31,297 responses was an error; here
// the rate is fixed (open loop, latency measured from the intended send time), only a 200 with an
// error-free body counts as a success, and any error fails the run.
//
// Setup, outside wlrun (the ksqlDB quickstart, see std/ksql/orders.wl for the data):
//   ksql-datagen quickstart=orders format=json topic=orders_kafka_topic_json iterations=100000
//   CREATE STREAM orders (ordertime BIGINT, orderid INT, itemid STRING, orderunits DOUBLE,
//     address STRUCT<city STRING, state STRING, zipcode BIGINT>)
//     WITH (kafka_topic='orders_kafka_topic_json', value_format='JSON');
//   CREATE TABLE orders_table AS SELECT orderid, LATEST_BY_OFFSET(itemid) AS itemid
//     FROM orders GROUP BY orderid;
// The hook asks for random order keys 0 .. orders-1, the orderids datagen produced.
// ksql-pull-max.wl asks the other question: the highest rate that keeps p90 under 20 ms.

workload ksql_pull {
  seed 123
  description "ksqlDB REST pull queries by order key at 5,000 requests/s"
}

param orders = 100_000           // ksql-datagen iterations: keys 0 .. orders-1
param ksql_url = "http://127.0.0.1:8088"   // ksqlDB's REST listener (--param ksql_url=...)

target ksql {
  dialect ksqldb
  http "${ksql_url}" {
    headers {
      "Accept":       "application/vnd.ksql.v1+json",
      "Content-Type": "application/vnd.ksql.v1+json",
    }
    timeout 10s
  }
}

// request(ctx) builds every request, response(ctx, resp) checks every answer.
hook pull from "ksql-pull.rhai" (request, response)

run pull_queries {
  against ksql.http
  request pull.request
  connections 1
  duration 5s
  rate 5000/s                // open loop: late requests are counted, not silently skipped
  expect status 200          // anything else is an error, never throughput
  expect body json array     // ksqlDB answers a pull query with one JSON array
}
