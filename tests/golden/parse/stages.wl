// A staged run: steps, a ramp, Poisson arrivals, per-stage connections and warm-ups.
run ramp {
  against svc.http
  request GET "/"
  workers 8
  stage 10s rate 100/s
  stage 20s rate 100/s to 1_000/s
  stage 30s rate 1_000/s poisson workers 32 warmup 5s
  stage 10s workers 4
}
