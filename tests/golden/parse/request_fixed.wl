run r {
  against a.http
  request GET "/health"
  count 1
  expect body json object
  expect body contains "ok"
  expect status [200, 204]
}
