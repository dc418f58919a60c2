target api { http "http://127.0.0.1:8080" }
run r {
  against api.http
  request GET "/health"
  count 1
  expect status 700
}
