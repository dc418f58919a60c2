// `qps`, `rps` and `achieved_rate` mean nothing per step: the search sets the rate.
target svc { http "http://127.0.0.1:8088" }

run a {
  against svc.http
  request GET "/"
  find max rate from 100/s where p99 < 20ms and rps > 50/s
}
