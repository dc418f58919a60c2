// A stage's values: a warm-up as long as the stage, zero workers, a zero duration and rate,
// a ramp to nothing, a rate without unit, and Poisson arrivals on a ramp.
target svc { http "http://127.0.0.1:8080" }

run bad {
  against svc.http
  request GET "/"
  stage 5s rate 100/s warmup 5s
  stage 5s workers 0
  stage 0s rate 0/s
  stage 5s rate 100/s to 0/s
  stage 5s rate 100
  stage 5s rate 100/s to 200/s poisson
}
