// `from` a positive rate, growth above 1, resolution within (0, 100%), samples at least 1.
target svc { http "http://127.0.0.1:8088" }

run a {
  against svc.http
  request GET "/"
  find max rate from 0/s where p99 < 20ms growth 1 resolution 100% samples 0
}
