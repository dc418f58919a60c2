target api {
  http "http://127.0.0.1:8080" as a
  http "http://127.0.0.1:8081" as b
}
run r {
  against api via [a, b]
  request GET "/health"
  count 1
  check same results across endpoints
}
