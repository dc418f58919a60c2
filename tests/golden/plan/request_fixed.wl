// A fixed request (no hook), with a status range and body checks.
workload fixed { seed 5 }

target api {
  http "http://127.0.0.1:8080" {
    headers { "Content-Type": "application/json" }
  }
}

run post {
  against api.http
  request POST "/query" body "{\"q\": 1}"
  connections 32
  duration 10s
  warmup 1s
  expect status 200..300
  expect body json array
  expect body contains "row"
  expect rps > 1000/s
}
