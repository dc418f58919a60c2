// An HTTP request run driven by a Rhai hook, at a fixed rate.
workload requests_demo {
  seed 5
  description "GET /item/N at 100 requests/s"
}

target api {
  http "http://127.0.0.1:8080" { timeout 1s  headers { "Accept": "application/json" } }
}

hook items from "support/hook.rhai" (init, request, response)

run get_items {
  against api.http
  request items.request
  connections 2
  count 1000
  rate 100/s fixed
  expect status [200, 404]
  expect p99 < 20ms
}
