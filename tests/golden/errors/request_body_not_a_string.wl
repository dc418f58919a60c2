target api { http "http://127.0.0.1:8080" }
run r {
  against api.http
  request POST "/write" body 42
  count 1
}
