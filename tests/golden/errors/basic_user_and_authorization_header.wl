// Basic credentials (`user`, or `user@` in the URL) and an `Authorization` header both set the
// one header.
target api {
  http "http://127.0.0.1:8080" {
    user "bench"
    headers { "Authorization": "Bearer abc" }
  }
}
target api2 {
  http "http://bench@127.0.0.1:8081" { headers { "authorization": "Bearer abc" } }
}
run r { against api.http  request GET "/status"  count 1 }
run r2 { against api2.http  request GET "/status"  count 1 }
