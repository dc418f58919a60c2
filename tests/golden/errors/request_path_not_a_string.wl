target api { http "http://127.0.0.1:8080" }
run r {
  against api.http
  request GET 42
  count 1
}
