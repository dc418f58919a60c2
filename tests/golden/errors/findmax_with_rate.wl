// A search sets each step's rate and length: `rate`, `count` and `repeat` are refused.
target svc { http "http://127.0.0.1:8088" }

run pull {
  against svc.http
  request GET "/"
  rate 100/s
  count 1000
  find max rate from 100/s where p99 < 20ms
}
