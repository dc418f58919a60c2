target api { http "http://127.0.0.1:8080" }
run r {
  against api.http
  request POST "/write" body env("WLRUN_GOLDEN_BODY")
  count 1
}
